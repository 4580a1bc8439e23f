"""One PDF page as lines: PyMuPDF's "dict" output (glyphs without a Unicode mapping mapped through their
fonts first), upright in the page's dominant text direction, with the geometry and font cues that
ordering, paragraphs and headings need. The arXiv margin stamp and rotated labels are left out."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

import pymupdf

from builder.stages.parse.bounded import out_of_memory
from builder.stages.parse.cleanup import PIECES, UNMAPPED, clean_line, mostly_junk
from builder.stages.parse.glyphs import FontGlyphs, map_unmapped

_STAMP = re.compile(r"^arXiv:\s*\S+v\d+\s*\[[\w.\-]+\]")
_ALNUM = re.compile(r"[^\W_]")
_BOLD_FONT = re.compile(r"bold|black|heavy|^CMBX|NimbusRomNo9L-Medi", re.IGNORECASE)
_BOLD_FLAG = 16
UNREADABLE_PAGE = "page could not be read: "  # how a page's error begins (the report shows it)


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
class RawPage:
    """A page's lines in reading order before cross-page cleaning."""

    number: int
    width: float
    height: float
    lines: list[Line]
    junk_text: str  # raw text, for the garbled check
    error: str = ""
    unmapped: int = 0  # glyphs without Unicode dropped from the lines kept


def read_page(doc: pymupdf.Document, index: int, fonts: FontGlyphs) -> RawPage:
    try:
        page = doc.load_page(index)
        width, height = page.rect.width, page.rect.height
        textpage = page.get_textpage(flags=pymupdf.TEXT_MEDIABOX_CLIP)
        data = page.get_text("dict", textpage=textpage)
        if _has_unmapped(data):
            raw = page.get_text("rawdict", textpage=textpage)
            data = map_unmapped(page, raw, pymupdf.TEXT_MEDIABOX_CLIP, fonts)
    except Exception as error:  # a single damaged page should not lose the paper
        if out_of_memory(error):  # not damage: the paper is over its memory limit, and fails as such
            raise MemoryError(str(error)) from error
        return RawPage(index + 1, 0.0, 0.0, [], "", error=f"{UNREADABLE_PAGE}{error}")
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
            raw = "".join(span["text"] for span in line["spans"]).translate(PIECES)
            raw_parts.append(raw)
            if mostly_junk(raw):
                continue  # glyphs without a Unicode mapping: nothing a reader could search for
            made = _make_line(line, block_number, direction)
            if made is not None and not _STAMP.match(made.text):
                lines.append(made)
                unmapped += len(UNMAPPED.findall(raw))
    if direction != (1.0, 0.0):
        width, height = _rotated_size(width, height, direction)
    page = RawPage(index + 1, width, height, lines, " ".join(raw_parts), unmapped=unmapped)
    return page


def _has_unmapped(data: dict) -> bool:
    return any(
        "\ufffd" in span["text"]
        for block in data["blocks"]
        for line in block.get("lines", ())
        for span in line["spans"]
    )


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
    text = clean_line("".join(span["text"] for span in spans))
    if not text:
        return None
    x0, y0, x1, y1 = line["bbox"]
    main = max(spans, key=lambda span: len(span["text"].strip()))
    baseline = main["origin"][1]
    if direction != (1.0, 0.0):
        corners = [_rotate(x, y, direction) for x in (x0, x1) for y in (y0, y1)]
        xs, ys = [p[0] for p in corners], [p[1] for p in corners]
        x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
        origin_x, origin_y = main["origin"]
        baseline = _rotate(origin_x, origin_y, direction)[1]
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
