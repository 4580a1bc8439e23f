"""Parse stage: a PDF becomes cleaned text with an exact map back to pages, sections and references.

Answers cite `[arXiv:ID p.N]` and quotes are checked against `ParsedPaper.text`, so the text must be
in reading order (two-column pages included), free of running headers, page numbers and the arXiv
margin stamp, and every character must know its page. Work is done per line of PyMuPDF's "dict"
output; all per-character work goes through `str.translate` and regular expressions.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pymupdf

from builder.models import PageFlag, PageSpan, ParsedPaper, Section
from builder.stages.glyphs import ADOBE_PIECES, FontGlyphs, map_unmapped

PARSER_VERSION = "3"  # 3: glyphs without a Unicode mapping take the character their font names, if any


class ParseError(Exception):
    """A PDF that cannot be parsed at all; `reason` names the file, `hint` says what to do."""

    def __init__(self, reason: str, hint: str):
        super().__init__(reason, hint)  # both in args, so the error survives pickling to a parent process
        self.reason = reason
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.reason} — {self.hint}"


class DamagedPDF(ParseError):
    """The file itself is damaged (empty, cut off, not a PDF): a fresh copy fixes it."""


# Ligatures and compatibility characters that split words for search. NFKC would also rewrite math
# (superscripts, script letters), so only these are mapped.
_CHAR_MAP = str.maketrans(
    {
        "\ufb00": "ff",
        "\ufb01": "fi",
        "\ufb02": "fl",
        "\ufb03": "ffi",
        "\ufb04": "ffl",
        "\ufb05": "st",
        "\ufb06": "st",
        "\u0132": "IJ",
        "\u0133": "ij",
        "\u00ad": None,  # soft hyphen
        "\u200b": None,
        "\u200c": None,
        "\u200d": None,
        "\u2060": None,
        "\ufeff": None,
        "\u00a0": " ",
        "\u2002": " ",
        "\u2003": " ",
        "\u2004": " ",
        "\u2005": " ",
        "\u2006": " ",
        "\u2007": " ",
        "\u2008": " ",
        "\u2009": " ",
        "\u200a": " ",
        "\u202f": " ",
        "\u205f": " ",
        "\u3000": " ",
        "\u2010": "-",
        "\u2011": "-",
        "\t": " ",
        "\r": " ",
        "\n": " ",
        **{chr(code): piece for code, piece in ADOBE_PIECES.items()},
    }
)
_PIECES = str.maketrans({chr(code): piece for code, piece in ADOBE_PIECES.items()})
_SPACES = re.compile(r" {2,}")
_ALNUM = re.compile(r"[^\W_]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

_STAMP = re.compile(r"^arXiv:\s*\S+v\d+\s*\[[\w.\-]+\]")
_PAGE_NUMBER = re.compile(
    r"^(?:page\s*)?[-–—]?\s*(?:\d{1,4}|[ivx]{1,6})\s*[-–—]?(?:\s*(?:of|/)\s*\d{1,4})?$", re.IGNORECASE
)
_DIGITS = re.compile(r"\d+")
_WHITESPACE = re.compile(r"\s+")
# Glyphs without a Unicode mapping: U+FFFD, private use, control characters, pdfminer-style (cid:NN).
_JUNK = re.compile(r"[\ufffd\ue000-\uf8ff\x00-\x08\x0b\x0c\x0e-\x1f]|\(cid:\d+\)")
# What is left of a glyph its font does not map to Unicode once `glyphs` has mapped what the font names
# (TeX's big delimiters and sums, delimiter pieces): subset fonts with bare codes, bitmap Type 3 fonts.
# Left in, "\ufffdQKT" showed in snippets and split words in the index; nothing a reader could type,
# so dropped from the text and counted.
_UNMAPPED = re.compile(r"[\ufffd\ue000-\uf8ff]")

_BOLD_FONT = re.compile(r"bold|black|heavy|^CMBX|NimbusRomNo9L-Medi", re.IGNORECASE)
_BOLD_FLAG = 16

_HEADER_BAND = 0.1  # share of page height at top and bottom where running headers/footers live
_GUTTER_TOLERANCE = 0.02  # share of page width a column line may overhang the gutter


@dataclass(slots=True)
class Line:
    """One extracted line with the geometry and font cues that ordering and heading detection need."""

    text: str
    x0: float
    y0: float
    x1: float
    y1: float
    baseline: float
    size: float  # of the line's longest span: the size of its running text
    top_size: float  # largest letter or digit: small-caps headings show their size only here
    bold: bool
    block: int
    column: str = "F"  # "L"/"R" inside a two-column band, "F" for full width or single column


@dataclass
class Paragraph:
    """Lines joined into one paragraph of the page text; sections and references are found on these."""

    lines: list[Line]
    text: str
    flush_left: bool  # starts at its column's left edge, where headings sit and figure labels rarely do
    start: int = 0  # offset in ParsedPaper.text, filled when the page is placed


@dataclass
class RawPage:
    """A page's lines in reading order before cross-page cleaning."""

    number: int
    width: float
    height: float
    lines: list[Line]
    junk_text: str  # raw text, for the garbled check
    error: str = ""
    unmapped: int = 0  # glyphs without Unicode dropped from the lines kept


def parse_pdf(path: Path, arxiv_id: str) -> ParsedPaper:
    """Read a PDF into a ParsedPaper; raise ParseError when the file cannot be read at all."""
    path = Path(path)
    doc = _open_document(path)
    try:
        fonts = FontGlyphs(doc)
        raw_pages = [_read_page(doc, index, fonts) for index in range(doc.page_count)]
    finally:
        doc.close()
    body_size = _body_font_size(raw_pages)
    _drop_running_lines(raw_pages, body_size)
    vocabulary = _Vocabulary.from_pages(raw_pages)

    texts: list[str] = []
    spans: list[PageSpan] = []
    flags: list[PageFlag] = []
    placed: list[tuple[int, Paragraph]] = []  # (page number, paragraph) in text order
    offset = 0
    for page in raw_pages:
        if texts:
            offset += 2  # the "\n\n" that joins pages
        paragraphs = _paragraphs(page, body_size, vocabulary)
        page_text = "\n\n".join(p.text for p in paragraphs)
        cursor = offset
        for paragraph in paragraphs:
            paragraph.start = cursor
            cursor += len(paragraph.text) + 2
            placed.append((page.number, paragraph))
        spans.append(PageSpan(page=page.number, start=offset, end=offset + len(page_text)))
        texts.append(page_text)
        offset += len(page_text)
        flag = _page_flag(page, page_text)
        if flag:
            flags.append(flag)
    text = "\n\n".join(texts)

    sections = _sections(placed, body_size)
    references_span = _references(sections, len(text))
    return ParsedPaper(
        arxiv_id=arxiv_id,
        text=text,
        pages=spans,
        sections=sections,
        references_span=references_span,
        page_count=len(raw_pages),
        flags=flags,
        unmapped_glyphs=sum(page.unmapped for page in raw_pages),
    )


def quote_pattern(quote: str) -> re.Pattern[str]:
    """A pattern that finds a quote taken from raw PyMuPDF text (or a PDF viewer) in the cleaned text.

    The quote may carry ligatures and "dur- ing" line-break hyphens; the cleaned text may have joined
    the word or kept a compound's hyphen, and its whitespace may differ.
    """
    pieces = _QUOTE_BREAK.split(_clean_line(quote))
    joined = "".join(
        re.escape(piece) if index % 2 == 0 else ("-?" if piece.startswith("-") else r"\s*")
        for index, piece in enumerate(pieces)
    )
    return re.compile(joined)


_QUOTE_BREAK = re.compile(r"((?<=[^\W\d_])- (?=[^\W\d_])|\s+)")


# --- opening -------------------------------------------------------------------------------------


def _open_document(path: Path) -> pymupdf.Document:
    redownload = f"re-download: delete {path} from the cache and build again"
    if not path.is_file():
        raise ParseError(f"{path} does not exist", "run the fetch stage again so the PDF is downloaded")
    with path.open("rb") as handle:
        head = handle.read(1024)
        handle.seek(0, 2)
        size = handle.tell()
        handle.seek(max(0, size - 2048))
        tail = handle.read()
    if size == 0:
        raise DamagedPDF(f"{path} is empty (0 bytes)", redownload)
    if b"%PDF-" not in head:
        raise DamagedPDF(f"{path} is not a readable PDF (no %PDF- header; starts {head[:20]!r})", redownload)
    if b"%%EOF" not in tail:
        raise DamagedPDF(f"{path} is truncated (no %%EOF marker at its end)", redownload)
    try:
        doc = pymupdf.open(path, filetype="pdf")
    except Exception as error:  # MuPDF raises several types for damaged files
        raise DamagedPDF(f"{path} is not a readable PDF ({error})", redownload) from error
    if doc.needs_pass:
        doc.close()
        raise ParseError(
            f"{path} is encrypted and needs a password",
            "the PDF is password-protected; remove it from the reading list or provide an unencrypted copy",
        )
    if doc.page_count == 0:
        doc.close()
        raise DamagedPDF(f"{path} has no pages", redownload)
    return doc


# --- one page ------------------------------------------------------------------------------------


def _read_page(doc: pymupdf.Document, index: int, fonts: FontGlyphs) -> RawPage:
    try:
        page = doc.load_page(index)
        width, height = page.rect.width, page.rect.height
        textpage = page.get_textpage(flags=pymupdf.TEXT_MEDIABOX_CLIP)
        data = page.get_text("dict", textpage=textpage)
        if _has_unmapped(data):
            raw = page.get_text("rawdict", textpage=textpage)
            data = map_unmapped(page, raw, pymupdf.TEXT_MEDIABOX_CLIP, fonts)
    except Exception as error:  # a single damaged page should not lose the paper
        return RawPage(index + 1, 0.0, 0.0, [], "", error=f"page could not be read: {error}")
    blocks = [b for b in data["blocks"] if b.get("type", 0) == 0]
    direction = _dominant_direction(blocks)
    lines: list[Line] = []
    raw_parts: list[str] = []
    unmapped = 0
    for block_number, block in enumerate(blocks):
        for line in block["lines"]:
            dx, dy = line["dir"]
            if dx * direction[0] + dy * direction[1] < 0.99:
                continue  # rotated figure labels and the arXiv margin stamp
            raw = "".join(span["text"] for span in line["spans"]).translate(_PIECES)
            raw_parts.append(raw)
            if _mostly_junk(raw):
                continue  # glyphs without a Unicode mapping: nothing a reader could search for
            made = _make_line(line, block_number, direction)
            if made is not None and not _STAMP.match(made.text):
                lines.append(made)
                unmapped += len(_UNMAPPED.findall(raw))
    if direction != (1.0, 0.0):
        width, height = _rotated_size(width, height, direction)
    page = RawPage(index + 1, width, height, lines, " ".join(raw_parts), unmapped=unmapped)
    page.lines = _merge_rows(_reading_order(page))
    return page


def _has_unmapped(data: dict) -> bool:
    return any(
        "\ufffd" in span["text"]
        for block in data["blocks"]
        for line in block.get("lines", ())
        for span in line["spans"]
    )


def _mostly_junk(raw: str) -> bool:
    if not _JUNK.search(raw):
        return False
    junk = sum(len(match) for match in _JUNK.findall(raw))
    return junk >= 0.5 * _visible_length(raw)


def _visible_length(text: str) -> int:
    return len(_WHITESPACE.sub("", text))


def _dominant_direction(blocks: list[dict]) -> tuple[float, float]:
    """Landscape pages (rotated tables) are read in their own direction; everything else upright."""
    weights: Counter[tuple[float, float]] = Counter()
    for block in blocks:
        for line in block["lines"]:
            dx, dy = line["dir"]
            weights[(round(dx, 2), round(dy, 2))] += sum(len(s["text"]) for s in line["spans"])
    if not weights:
        return (1.0, 0.0)
    return weights.most_common(1)[0][0]


def _rotate(x: float, y: float, direction: tuple[float, float]) -> tuple[float, float]:
    """Coordinates in a frame where text of `direction` runs left to right."""
    c, s = direction
    return x * c + y * s, -x * s + y * c


def _rotated_size(width: float, height: float, direction: tuple[float, float]) -> tuple[float, float]:
    corners = [_rotate(x, y, direction) for x in (0.0, width) for y in (0.0, height)]
    xs, ys = [p[0] for p in corners], [p[1] for p in corners]
    return max(xs) - min(xs), max(ys) - min(ys)


def _make_line(line: dict, block: int, direction: tuple[float, float]) -> Line | None:
    spans = line["spans"]
    text = _clean_line("".join(span["text"] for span in spans))
    if not text:
        return None
    x0, y0, x1, y1 = line["bbox"]
    main = max(spans, key=lambda span: len(span["text"].strip()))
    baseline = main["origin"][1]
    if direction != (1.0, 0.0):
        corners = [_rotate(x, y, direction) for x in (x0, x1) for y in (y0, y1)]
        xs, ys = [p[0] for p in corners], [p[1] for p in corners]
        x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
        baseline = _rotate(*main["origin"], direction)[1]
    total = sum(len(span["text"].strip()) for span in spans) or 1
    bold_chars = sum(
        len(span["text"].strip())
        for span in spans
        if span["flags"] & _BOLD_FLAG or _BOLD_FONT.search(span["font"])
    )
    size = round(main["size"] * 2) / 2
    top_size = max(
        (round(span["size"] * 2) / 2 for span in spans if _ALNUM.search(span["text"])), default=size
    )
    return Line(
        text=text,
        x0=x0,
        y0=y0,
        x1=x1,
        y1=y1,
        baseline=baseline,
        size=size,
        top_size=top_size,
        bold=bold_chars >= 0.8 * total,
        block=block,
    )


def _clean_line(text: str) -> str:
    text = _UNMAPPED.sub("", _CONTROL.sub("", text.translate(_CHAR_MAP)))
    return _SPACES.sub(" ", text).strip()


# --- reading order -------------------------------------------------------------------------------


def _reading_order(page: RawPage) -> list[Line]:
    """Two-column pages: left column before right, full-width lines keep their vertical place."""
    lines = page.lines
    if not lines:
        return lines
    gutter = _find_gutter(lines, page.width)
    units: list[tuple[str, float, float, list[Line]]] = []  # (column, y0, x0, lines)
    for line in lines:
        line.column = "F" if gutter is None else _column_of(line, gutter, page.width)
        if units and units[-1][3][-1].block == line.block and units[-1][0] == line.column:
            units[-1][3].append(line)
        else:
            units.append((line.column, line.y0, line.x0, [line]))
    units.sort(key=lambda unit: (round(unit[1]), unit[2]))
    ordered: list[Line] = []
    left: list[list[Line]] = []
    right: list[list[Line]] = []
    for column, _, _, unit_lines in units:
        if column == "L":
            left.append(unit_lines)
        elif column == "R":
            right.append(unit_lines)
        else:
            for group in left + right:
                ordered.extend(group)
            left, right = [], []
            ordered.extend(unit_lines)
    for group in left + right:
        ordered.extend(group)
    return ordered


def _find_gutter(lines: list[Line], width: float) -> float | None:
    """The x where a vertical gap splits the text into two substantial columns, if there is one."""
    x0 = np.array([line.x0 for line in lines])
    x1 = np.array([line.x1 for line in lines])
    chars = np.array([len(line.text) for line in lines], dtype=float)
    low, high = float(x0.min()), float(x1.max())
    if high - low < 0.5 * width:
        return None
    candidates = np.linspace(low + 0.3 * (high - low), low + 0.7 * (high - low), 41)
    slack = 2.0
    crossing = ((x0[:, None] < candidates - slack) & (x1[:, None] > candidates + slack)).T @ chars
    best = int(np.argmin(crossing))
    gutter = float(candidates[best])
    left = chars[x1 <= gutter + slack].sum()
    right = chars[x0 >= gutter - slack].sum()
    total = chars.sum()
    # Full-width lines (title, abstract, wide figures) may outweigh the columns on a page; what makes
    # it two-column is that both sides carry a good share of the text.
    if min(left, right) < 0.15 * total:
        return None
    return gutter


def _column_of(line: Line, gutter: float, width: float) -> str:
    tolerance = _GUTTER_TOLERANCE * width
    if line.x0 < gutter - tolerance and line.x1 > gutter + tolerance:
        return "F"
    return "L" if (line.x0 + line.x1) / 2 < gutter else "R"


def _merge_rows(lines: list[Line]) -> list[Line]:
    """Pieces of one visual row (split by wide gaps or font changes) become one line."""
    merged: list[Line] = []
    for line in lines:
        previous = merged[-1] if merged else None
        if previous is not None and _same_row(previous, line):
            longer = line if len(line.text) > len(previous.text) else previous
            merged[-1] = Line(
                text=f"{previous.text} {line.text}",
                x0=previous.x0,
                y0=min(previous.y0, line.y0),
                x1=line.x1,
                y1=max(previous.y1, line.y1),
                baseline=longer.baseline,
                size=longer.size,
                top_size=max(previous.top_size, line.top_size),
                bold=previous.bold and line.bold,
                block=previous.block,
                column=previous.column,
            )
        else:
            merged.append(line)
    return merged


def _same_row(previous: Line, line: Line) -> bool:
    """Next piece of the same visual row; a heading next to a figure label stays apart."""
    size = max(previous.size, line.size, 1.0)
    if previous.column != line.column or abs(line.baseline - previous.baseline) >= 0.5 * size:
        return False
    gap = line.x0 - previous.x1  # slightly negative after a stacked superscript and subscript
    restyled = previous.bold != line.bold or abs(previous.top_size - line.top_size) > 1.0
    return gap >= -size and not (restyled and gap > 1.5 * size)


# --- running headers, footers, page numbers ------------------------------------------------------


def _margin_lines(page: RawPage) -> list[Line]:
    """Lines where running headers, footers and page numbers sit: the outer bands and the extreme rows."""
    if not page.lines:
        return []
    top = min(line.y0 for line in page.lines)
    bottom = max(line.y1 for line in page.lines)
    band = _HEADER_BAND * page.height
    return [
        line
        for line in page.lines
        if (line.y0 + line.y1) / 2 < band
        or (line.y0 + line.y1) / 2 > page.height - band
        or line.y0 <= top + 1
        or line.y1 >= bottom - 1
    ]


def _line_key(line: Line) -> tuple[str, int]:
    """Text with digits masked, and the height it sits at: running lines keep both from page to page."""
    return _WHITESPACE.sub("", _DIGITS.sub("#", line.text.lower())), round((line.y0 + line.y1) / 10)


def _drop_running_lines(pages: list[RawPage], body_size: float) -> None:
    """Remove margin lines that repeat across pages (digits ignored) and bare page numbers.

    A repeat set in a large font is the title on page 1 whose running header is the title again.
    """
    margins = [_margin_lines(page) for page in pages]
    seen: Counter[tuple[str, int]] = Counter()
    for lines in margins:
        seen.update({_line_key(line) for line in lines})
    needed = 2 if len(pages) <= 3 else max(3, math.ceil(0.15 * len(pages)))
    repeated = {key for key, count in seen.items() if count >= needed}
    for page, lines in zip(pages, margins, strict=True):
        running = {
            id(line)
            for line in lines
            if (_line_key(line) in repeated and line.size <= body_size + 1.0) or _PAGE_NUMBER.match(line.text)
        }
        if running:
            page.lines = [line for line in page.lines if id(line) not in running]


def _body_font_size(pages: list[RawPage]) -> float:
    sizes: Counter[float] = Counter()
    for page in pages:
        for line in page.lines:
            sizes[line.size] += len(line.text)
    return sizes.most_common(1)[0][0] if sizes else 10.0


# --- paragraphs and hyphenation ------------------------------------------------------------------

_COMPOUND = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)+")
_WORD = re.compile(r"[^\W\d_]+")
_BROKEN_WORD = re.compile(r"[^\W\d_]+-\n[^\W\d_]*")
_HEADING_NUMBER = re.compile(r"^(?:\d{1,2}(?:\.\d{1,2})*\.?|[A-Z]\.|[IVX]{1,5}\.)\s")
_TRAILING_WORD = re.compile(r"([^\W\d_]+)-$")
_LEADING_WORD = re.compile(r"^([^\W\d_]+)")


@dataclass
class _Vocabulary:
    """Words and hyphenated pairs written whole somewhere in the paper, to tell compounds from breaks."""

    words: set[str]
    compounds: set[str]

    @classmethod
    def from_pages(cls, pages: list[RawPage]) -> _Vocabulary:
        text = "\n".join(line.text for page in pages for line in page.lines).lower()
        words = set(_WORD.findall(_BROKEN_WORD.sub(" ", text)))  # "decou-" + "pled" are not words
        compounds: set[str] = set()
        for match in _COMPOUND.findall(text):
            parts = match.split("-")
            compounds.update(f"{a}-{b}" for a, b in zip(parts, parts[1:], strict=False))
        return cls(words, compounds)

    def is_word(self, word: str) -> bool:
        return word.lower() in self.words

    def keeps_hyphen(self, before: str, after: str) -> bool:
        before, after = before.lower(), after.lower()
        return f"{before}-{after}" in self.compounds and f"{before}{after}" not in self.words


def _join_lines(lines: list[Line], vocabulary: _Vocabulary) -> str:
    """Lines of one paragraph joined by spaces; a line-end hyphen is a break unless it is a compound."""
    parts = [lines[0].text]
    for line in lines[1:]:
        before, after = parts[-1], line.text
        joint = _line_joint(before, after, vocabulary)
        if joint is None:
            parts[-1] = before[:-1] + after  # "dur-" + "ing"
        elif joint:
            parts.append(after)
        else:
            parts[-1] = before + after
    return " ".join(parts)


def _line_joint(before: str, after: str, vocabulary: _Vocabulary) -> bool | None:
    """True: join with a space; False: join directly; None: join and drop the line-end hyphen."""
    last, first = before[-1], after[0]
    if last in "–/" and before[-2:-1].isdigit() and first.isdigit():
        return False  # a number range broken after its dash: "222–228"
    if last != "-" or not before[-2:-1].isalnum() or not first.isalnum():
        return True
    head, tail = _TRAILING_WORD.search(before), _LEADING_WORD.match(after)
    if not first.islower():
        # "GPT-" + "3", "TF-" + "IDF" keep the hyphen; all-caps "LAN-" + "GUAGE" is a break
        capitals = head and tail and head[1].isupper() and tail[1].isupper()
        return None if capitals and vocabulary.is_word(head[1] + tail[1]) else False
    if head and tail and vocabulary.keeps_hyphen(head[1], tail[1]):
        return False
    return None


def _paragraphs(page: RawPage, body_size: float, vocabulary: _Vocabulary) -> list[Paragraph]:
    lines = page.lines
    if not lines:
        return []
    left_edge: dict[str, float] = {}
    right_edge: dict[str, float] = {}
    for line in lines:
        left_edge[line.column] = min(left_edge.get(line.column, line.x0), line.x0)
        right_edge[line.column] = max(right_edge.get(line.column, line.x1), line.x1)
    groups: list[list[Line]] = [[lines[0]]]
    for previous, line in zip(lines, lines[1:], strict=False):
        if _breaks_paragraph(previous, line, right_edge, body_size):
            groups.append([line])
        else:
            groups[-1].append(line)
    return [
        Paragraph(group, _join_lines(group, vocabulary), group[0].x0 <= left_edge[group[0].column] + 3)
        for group in groups
    ]


def _heading_styled(line: Line, body_size: float) -> bool:
    return line.bold or line.top_size >= body_size + 1.0


def _breaks_paragraph(previous: Line, line: Line, right_edge: dict[str, float], body_size: float) -> bool:
    size = max(previous.size, line.size, 1.0)
    step = line.baseline - previous.baseline
    if abs(step) < 0.5 * size and previous.column == line.column:
        return False  # pieces of one row that overlap (subscripts) or sit far apart (table cells)
    if previous.column != line.column or step < 0:
        # a jump to the next column or back up the page: the paragraph goes on only mid-sentence
        ends_open = previous.text[-1] in "-,;" or previous.text[-1].islower()
        return not (ends_open and line.text[0].islower())
    if step > 1.45 * size:
        return True
    right = right_edge.get(previous.column, previous.x1)
    previous_styled = _heading_styled(previous, body_size)
    if previous_styled != _heading_styled(line, body_size):
        # a heading (short or larger) starts or ends here; a bold sentence running full width does not
        styled = previous if previous_styled else line
        return styled.top_size >= body_size + 1.0 or styled.x1 < right - 2 * size
    if previous_styled:
        # a heading or title on several rows (often centred) stays whole; a numbered heading right
        # below another ("I. INTRODUCTION" then "A. The problem") starts afresh
        return bool(_HEADING_NUMBER.match(line.text))
    short = previous.x1 < right - 2 * size
    indented = line.x0 > previous.x0 + 0.8 * size
    closed = previous.text[-1] in ".:?!"
    return short and (indented or closed)


# --- flags ---------------------------------------------------------------------------------------

_WORDLIKE = re.compile(r"[^\W_]{2,}")
_GARBLED_JUNK_SHARE = 0.3  # unmapped glyphs among visible characters
_GARBLED_WORD_SHARE = 0.3  # below this share of characters in words or numbers; real pages are above 0.44


def _page_flag(page: RawPage, page_text: str) -> PageFlag | None:
    if page.error:
        return PageFlag(page.number, "no-text", page.error)
    raw = page.junk_text
    visible = _visible_length(raw)
    if visible:
        junk = sum(len(match) for match in _JUNK.findall(raw)) / visible
        if junk > _GARBLED_JUNK_SHARE:
            return PageFlag(page.number, "garbled", f"{junk:.0%} of characters are unmapped glyphs")
        wordlike = sum(len(word) for word in _WORDLIKE.findall(raw)) / visible
        if visible >= 200 and wordlike < _GARBLED_WORD_SHARE:
            return PageFlag(page.number, "garbled", f"only {wordlike:.0%} of characters in words or numbers")
    if not page_text:
        return PageFlag(page.number, "no-text", "no extractable text (scanned or figure-only page)")
    return None


# --- sections ------------------------------------------------------------------------------------

_NUMBERED = re.compile(
    r"^(?P<num>\d{1,2}(?:\.\d{1,2}){0,3}|[A-Z](?:\.\d{1,2}){0,3}|[IVX]{1,5}(?=\.))\.?\s+(?P<title>\S.*)$"
)
_KNOWN = re.compile(
    r"^(?:abstract|introduction|related work|background|conclusions?|discussion|references|bibliography|"
    r"literature cited|acknowledg(?:e)?ments?|appendix|appendices|limitations|ethics statement|"
    r"broader impacts?|supplementary materials?|impact statement)$",
    re.IGNORECASE,
)
_APPENDIX = re.compile(r"^appendix\s+[A-Z]\b", re.IGNORECASE)
_REFERENCES = re.compile(
    r"^(?:references|bibliography|literature cited|references and notes)$", re.IGNORECASE
)
_NOT_HEADING_START = re.compile(r"^(?:figure|fig\.|table|algorithm|listing|equation)\b", re.IGNORECASE)
_MAX_HEADING_WORDS = 14
_TRAILING_PAGE_NUMBER = re.compile(r"\s\d+$")
_ROMAN_SECTION = re.compile(r"^[IVX]{1,5}\.\s")


def _sections(placed: list[tuple[int, Paragraph]], body_size: float) -> list[Section]:
    sections: list[Section] = []
    for page, paragraph in placed:
        found = _heading(paragraph, body_size, sections)
        if found and (sections or _opens_paper(found[0])):
            sections.append(Section(title=found[0], start=paragraph.start, page=page, level=found[1]))
    return sections


def _opens_paper(title: str) -> bool:
    """The first heading is the abstract or the first section; bold affiliations above it are not."""
    numbered = _NUMBERED.match(title)
    if numbered:
        return numbered["num"].rstrip(".") in ("1", "I") or _KNOWN.match(numbered["title"]) is not None
    return _KNOWN.match(title) is not None


def _heading(paragraph: Paragraph, body_size: float, earlier: list[Section]) -> tuple[str, int] | None:
    """(title, level) when the paragraph is a section heading; precision over recall."""
    text = paragraph.text.rstrip(".: ")
    lines = paragraph.lines
    words = text.split()
    if not words or len(lines) > 2 or len(words) > _MAX_HEADING_WORDS or _NOT_HEADING_START.match(text):
        return None
    styled = all(_heading_styled(line, body_size) for line in lines)
    bare = _NUMBERED.sub(r"\g<title>", text) if _NUMBERED.match(text) else text
    if _KNOWN.match(bare) and (styled or bare.isupper() or _REFERENCES.match(bare) or bare == "Abstract"):
        return text, _level(text, earlier)
    if _APPENDIX.match(text) and styled:
        return text, 1
    numbered = _NUMBERED.match(text)
    if numbered and _plausible_numbered(numbered, styled, earlier):
        return text, _level(text, earlier)
    larger = all(line.size >= body_size + 1.0 and line.bold for line in lines)
    if (
        larger
        and paragraph.flush_left
        and not numbered
        and earlier
        and words[0][0].isupper()
        and len(text) >= 4
        and not any(ch in text for ch in "@,")
        and sum(ch.isalpha() for ch in text) >= 0.7 * len(text.replace(" ", ""))
    ):
        return text, 1
    return None


def _plausible_numbered(match: re.Match[str], styled: bool, earlier: list[Section]) -> bool:
    number, title = match["num"], match["title"]
    if not title[0].isalpha() or sum(ch.isalpha() for ch in title) < 0.6 * len(title.replace(" ", "")):
        return False
    first_word = title.split()[0]
    if (
        _TRAILING_PAGE_NUMBER.search(title)
        or not title[0].isupper()
        or any(ch.isdigit() for ch in first_word)
    ):
        return False  # table-of-contents lines, list items, figure labels such as "C T1 T[SEP]"
    # all-caps headings (ICLR small caps, IEEE "IV. RESULTS") often carry no bold or size cue
    cued = styled or (title.isupper() and len(title) >= 6)
    if number[0].isdigit():
        return cued and int(number.split(".")[0]) <= 30
    if all(ch in "IVX" for ch in number):
        return cued
    # A letter number ("A Appendix", "B.2 Details") reads like an article ("A Simple Method") unless
    # the body sections came first; under roman sections "A. Setup" is a subsection.
    after_body = any(s.title[0].isdigit() or _REFERENCES.match(s.title) for s in earlier)
    return cued and (after_body or (_under_roman_sections(earlier) and match[0][len(number)] == "."))


def _under_roman_sections(earlier: list[Section]) -> bool:
    """IEEE-style papers number sections I, II, ... and their subsections A, B, ..."""
    return any(_ROMAN_SECTION.match(s.title) for s in earlier) and not any(
        _REFERENCES.match(s.title) for s in earlier
    )


def _level(title: str, earlier: list[Section]) -> int:
    match = _NUMBERED.match(title)
    if not match or all(ch in "IVX" for ch in match["num"]):
        return 1
    number = match["num"]
    if number[0].isalpha() and _under_roman_sections(earlier):
        return 2 + number.count(".")
    return number.count(".") + 1


# --- references ----------------------------------------------------------------------------------


def _references(sections: list[Section], text_length: int) -> tuple[int, int] | None:
    """The bibliography's span (its heading to the next heading or the end), kept out of the chunks."""
    for index, section in enumerate(sections):
        bare = _NUMBERED.sub(r"\g<title>", section.title) if _NUMBERED.match(section.title) else section.title
        if _REFERENCES.match(bare.rstrip(".: ")):
            end = sections[index + 1].start - 2 if index + 1 < len(sections) else text_length
            return section.start, end
    return None
