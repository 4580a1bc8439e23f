"""A paper's metadata as its PDF prints it on page 1, for a build from a folder of PDFs with no arXiv
API to ask (`--pdfs DIR --offline`, builder/stages/fetch/folder.py).

Read the way ../shared/arxiv-mirror's metadata was made: the arXiv margin stamp gives the id, version,
primary category and date of this version; the title is the largest-font lines on page 1 (all-caps
titles stay in caps; line-break hyphens and ligatures are fixed); the authors are the page-1 author
block with markers and affiliations left out, in printed order; the abstract is the text between the
"Abstract" heading and the introduction. PDFs seldom carry a usable title or author field (arXiv's
LaTeX builds leave them empty), so those fields are only a fallback.

Each step is a heuristic over text positions and fonts; the build says which papers' metadata came
from here, so a reader knows where a misread name comes from. Reading page 1 runs MuPDF over a file
from outside, as parsing does, so it runs the same way: in a process of its own under the parse
limits (`read_bounded`); it lives beside the parser so those processes start with all it needs.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import pymupdf

from builder.stages.parse.bounded import ParseLimits, run_bounded
from builder.stages.parse.cleanup import clean_line
from builder.stages.parse.names import BREAK, compose_accents, person_name, split_names

# `arXiv:2003.06713v1  [cs.IR]  14 Mar 2020` (old-style ids: `arXiv:hep-th/9901001v2`), as a whole line:
# MuPDF extracts the margin stamp as a line of its own, and a citation of another paper in the text is
# never taken for it. The date is arXiv's "14 Mar 2020", or ISO 8601 as the tests' generated papers print it.
STAMP = re.compile(
    r"arXiv:\s*(?P<id>\d{4}\.\d{4,5}|[a-z][a-z-]*(?:\.[A-Z]{2})?/\d{7})(?P<version>v[1-9]\d*)"
    r"\s*\[(?P<category>[^\]\s]+)\]\s*(?P<date>\d{1,2}\s+[A-Z][a-z]{2}\s+\d{4}|\d{4}-\d{2}-\d{2})?"
)
MAX_AUTHORS = 100  # more is a page of something else read as names
MAX_ABSTRACT = 4_000  # characters; arXiv allows 1,920
_ABSTRACT = re.compile(r"^a\s?b\s?s\s?t\s?r\s?a\s?c\s?t\b[\s.:—–-]*", re.IGNORECASE)
_INTRODUCTION = re.compile(r"^(?:(?:1|I)\.?\s+)?introduction\b|^keywords\b|^index terms\b", re.IGNORECASE)
_CONTACT = re.compile(r"@|https?:|www\.")
_MONTHS = {m: n for n, m in enumerate("Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split(), start=1)}


class UnreadablePdf(ValueError):
    """A PDF whose page 1 cannot be read; the message names the file."""


@dataclass(frozen=True)
class Stamp:
    """arXiv's margin stamp on page 1."""

    arxiv_id: str
    version: str
    category: str
    date: str  # ISO date of this version, "" when the stamp shows none

    @property
    def versioned_id(self) -> str:
        return self.arxiv_id + self.version


@dataclass(frozen=True)
class Printed:
    """What page 1 prints: the title ("" when none was found), authors, abstract and stamp."""

    title: str
    authors: list[str] = field(default_factory=list)
    abstract: str = ""
    stamp: Stamp | None = None
    pages: int = 0


def read_stamp(text: str) -> Stamp | None:
    """The first line of `text` that is an arXiv stamp, None when there is none."""
    match = next(filter(None, (STAMP.fullmatch(line.strip()) for line in text.splitlines())), None)
    if match is None:
        return None
    date = match["date"] or ""
    if date and not date[:4].isdigit():
        day, month, year = date.split()
        date = f"{int(year):04d}-{_MONTHS.get(month, 0):02d}-{int(day):02d}" if month in _MONTHS else ""
    if date:
        try:
            datetime.strptime(date, "%Y-%m-%d")
        except ValueError:
            date = ""
    return Stamp(match["id"], match["version"], match["category"], date)


def read_printed(pdf: Path, metadata: bool = True) -> Printed:
    """Page 1's metadata (only its stamp and the page count unless `metadata`); UnreadablePdf when the
    file does not open as a PDF with pages."""
    try:
        doc = pymupdf.open(pdf, filetype="pdf")
    except Exception as error:  # MuPDF raises several types for damaged files
        raise UnreadablePdf(f"{pdf} is not a readable PDF ({_first_line(error)})") from error
    try:
        if doc.needs_pass:
            raise UnreadablePdf(f"{pdf} is encrypted and needs a password")
        if doc.page_count == 0:
            raise UnreadablePdf(f"{pdf} has no pages")
        try:
            page = doc[0]
            stamp = read_stamp(page.get_text("text"))
            if not metadata:
                return Printed("", stamp=stamp, pages=doc.page_count)
            layout = page.get_text("dict")
        except Exception as error:
            raise UnreadablePdf(f"page 1 of {pdf} cannot be read ({_first_line(error)})") from error
        fields = doc.metadata or {}
        rows = _rows(layout, page.rect.height)
        title_rows = _title_rows(rows, page.rect.height)
        title = _visible(_join_rows(title_rows) or clean_line(fields.get("title") or ""))
        below = [row for row in rows if not title_rows or row.top > title_rows[-1].top]
        authors = _authors(below, title) or [
            name for name in map(person_name, split_names(clean_line(fields.get("author") or ""))) if name
        ]
        authors = [name for name in map(_visible, authors) if name]
        return Printed(title, authors, _visible(_abstract(layout)), stamp, doc.page_count)
    finally:
        doc.close()


def read_bounded(jobs: list[tuple[Path, bool]], limits: ParseLimits, parallel: int) -> list[Printed | str]:
    """`read_printed(pdf, metadata)` for each job, each in its own process under `limits`; a reason
    naming the file in place of each that could not be read."""
    results: list[Printed | str] = [""] * len(jobs)
    for index, result in run_bounded(jobs, _read_job, _over_limit, limits, parallel):
        results[index] = result
    return results


def _read_job(job: tuple[Path, bool]) -> Printed | str:
    pdf, metadata = job
    try:
        return read_printed(pdf, metadata)
    except UnreadablePdf as error:
        return str(error)
    except MemoryError:
        raise  # over the memory limit: the process ends, and the runner says so
    except Exception as error:  # a heuristic tripped by a strange page: one paper's failure, not the build's
        return f"page 1 of {pdf} could not be read ({type(error).__name__}: {_first_line(error)})"


class OverLimit(str):
    """Why a page-1 read was ended: over the parse time or memory limit (the text names which)."""


def _over_limit(job: tuple[Path, bool], why: str) -> str:
    return OverLimit(f"reading page 1 of {job[0]} {why}")


def _visible(text: str) -> str:
    """`text` without format characters (bidi overrides, zero-width marks, BREAK): a PDF's text can
    hold any, and a title shown on every page must read as it looks."""
    return " ".join("".join(c for c in text if unicodedata.category(c) != "Cf").split())


def _first_line(error: Exception) -> str:
    return " ".join(str(error).split()) or type(error).__name__


# -------------------------------------------------------------------------------------- page rows


@dataclass
class _Piece:
    """A run of spans on one baseline with no column gap inside: one cell of the page."""

    text: str
    top: float
    left: float
    right: float
    sizes: dict[float, int] = field(default_factory=dict)  # font size -> letters in it
    letters: int = 0
    bold_letters: int = 0
    italic_letters: int = 0

    @property
    def size(self) -> float:
        return max(self.sizes, key=lambda size: (self.sizes[size], size)) if self.sizes else 0.0

    @property
    def bold(self) -> bool:
        return self.bold_letters * 2 > self.letters

    @property
    def italic(self) -> bool:
        return self.italic_letters * 2 > self.letters


@dataclass
class _Row:
    top: float
    size: float
    pieces: list[_Piece]

    @property
    def text(self) -> str:
        return " ".join(piece.text.replace(BREAK, " ") for piece in self.pieces)


def _rows(layout: dict[str, Any], height: float) -> list[_Row]:
    """Horizontal text of the page's top two thirds as rows of pieces, top to bottom; lines on one
    baseline are joined."""
    pieces: list[_Piece] = []
    for block in layout.get("blocks", []):
        for line in block.get("lines", []):
            if abs(line["dir"][0] - 1) > 0.01 or line["bbox"][1] > height * 0.7:
                continue  # rotated stamps and labels; the body of the page
            spans = [span for span in line["spans"] if span["text"].strip()]
            if spans:
                pieces.extend(_pieces(spans))
    pieces.sort(key=lambda p: (round(p.top), p.left))
    rows: list[_Row] = []
    for piece in pieces:
        if rows and abs(rows[-1].top - piece.top) <= 0.3 * max(piece.size, rows[-1].size):
            rows[-1].pieces.append(piece)
        else:
            rows.append(_Row(piece.top, piece.size, [piece]))
    for row in rows:
        row.pieces.sort(key=lambda p: p.left)
        row.size = _dominant_size(row.pieces)
    return rows


def _dominant_size(pieces: list[_Piece]) -> float:
    """The font size that most letters of `pieces` are in (a small-caps title's, not its capitals')."""
    letters: dict[float, int] = {}
    for piece in pieces:
        for size, count in piece.sizes.items():
            letters[size] = letters.get(size, 0) + count
    return max(letters, key=lambda size: (letters[size], size)) if letters else 0.0


def _pieces(spans: list[dict[str, Any]]) -> list[_Piece]:
    """Spans of one line as pieces, split where the gap is a column's (author grids). A marker (a span
    far smaller than the line's text: footnote signs, affiliation numbers) or a wide gap is kept as
    BREAK, which ends a name."""
    letters: dict[float, int] = {}
    for span in spans:
        letters[span["size"]] = letters.get(span["size"], 0) + sum(c.isalpha() for c in span["text"])
    size = max(letters, key=lambda size: (letters[size], size))
    pieces: list[_Piece] = []
    for span in spans:
        x0, y0, x1, _ = span["bbox"]
        text = compose_accents(clean_line(span["text"]))
        last = pieces[-1] if pieces else None
        if not text:
            continue
        if span["size"] < 0.75 * size or (span["size"] < 0.9 * size and not any(c.isalpha() for c in text)):
            if last is not None and not last.text.endswith(BREAK):
                last.text += BREAK
            continue
        count = sum(c.isalpha() for c in text)
        bold = bool(span["flags"] & 16) or "bold" in span["font"].lower()
        italic = bool(span["flags"] & 2) or "italic" in span["font"].lower()
        if last is not None and x0 - last.right < 2.5 * size:
            gap = x0 - last.right
            if gap > 0.6 * size:
                last.text += BREAK
            elif (gap > 0.1 * size or span["text"][:1].isspace()) and not last.text.endswith(("-", BREAK)):
                last.text += " "
            last.text += text
            last.right = x1
        else:
            last = _Piece(text, y0, x0, x1)
            pieces.append(last)
        if count:
            rounded = round(span["size"], 1)
            last.sizes[rounded] = last.sizes.get(rounded, 0) + count
            last.bold_letters += count if bold else 0
            last.italic_letters += count if italic else 0
            last.letters += count
    return pieces


# ------------------------------------------------------------------------------------------- title


def _title_rows(rows: list[_Row], height: float) -> list[_Row]:
    """The rows in the largest font above the abstract (else in the page's top half), from the first
    one down while they follow each other (a title wraps onto a few lines)."""
    # The title comes before the abstract and before any e-mail address or link of the author block.
    heading = next(
        (row.top for row in rows if _ABSTRACT.match(row.text) or _CONTACT.search(row.text)), height * 0.5
    )
    candidates = [
        i for i, row in enumerate(rows) if row.top < heading and sum(map(str.isalpha, row.text)) >= 3
    ]
    largest = max((rows[i].size for i in candidates), default=0.0)
    if largest < 8:  # no text, or only footnote-sized text, above the abstract
        return []
    start = next(i for i in candidates if rows[i].size >= 0.95 * largest)
    chosen = [rows[start]]
    for row in rows[start + 1 :]:
        if row.size < 0.95 * largest or row.top - chosen[-1].top > 2.2 * largest:
            break
        chosen.append(row)
    return chosen


def _join_rows(rows: list[_Row]) -> str:
    """Row texts joined: a line-break hyphen is dropped before a lower-case letter ("effi- cient"),
    kept before a capital ("Pre-" "Training")."""
    text = ""
    for row in rows:
        line = row.text.strip()
        if text.endswith("-") and line[:1].islower():
            text = text[:-1] + line
        elif text.endswith("-"):
            text += line
        else:
            text = f"{text} {line}" if text else line
    return clean_line(text)


# ----------------------------------------------------------------------------------------- authors


def _authors(rows: list[_Row], title: str) -> list[str]:
    """Names in the author block: the rows under the title down to the abstract, cut at commas and
    "and", keeping what reads as a person's name in the font of the first name found."""
    names: list[str] = []
    first: _Piece | None = None
    for row in rows:
        if _ABSTRACT.match(row.text) or _INTRODUCTION.match(row.text):
            break
        for piece in row.pieces:
            if _ABSTRACT.match(piece.text):
                return names
            if first is not None and not _same_font(piece, first):
                continue
            for part in split_names(piece.text):
                name = person_name(part)
                if name is None or name.casefold() in title.casefold():
                    continue
                first = first or piece
                if name not in names:
                    names.append(name)
        if len(names) >= MAX_AUTHORS:
            break
    return names[:MAX_AUTHORS]


def _same_font(piece: _Piece, first: _Piece) -> bool:
    return (
        piece.bold == first.bold
        and piece.italic == first.italic
        and abs(piece.size - first.size) <= 0.08 * first.size
    )


# ---------------------------------------------------------------------------------------- abstract


def _abstract(layout: dict[str, Any]) -> str:
    """The text blocks after the "Abstract" heading (or the block it opens) up to the introduction,
    leaving out blocks in a smaller font than the abstract's first (footnotes placed between them)."""
    parts: list[str] = []
    started, size = False, 0.0
    for block in layout.get("blocks", []):
        lines = [line for line in block.get("lines", []) if abs(line["dir"][0] - 1) <= 0.01]
        pieces = [piece for line in lines if line["spans"] for piece in _pieces(line["spans"])]
        text = _join_lines([clean_line(piece.text.replace(BREAK, " ")) for piece in pieces])
        if not text:
            continue
        if not started:
            heading = _ABSTRACT.match(text)
            if heading is None:
                continue
            started, text = True, text[heading.end() :]
            if not text:  # the heading stands alone
                continue
        elif _INTRODUCTION.match(text):
            break
        block_size = _dominant_size(pieces)
        if not size:
            size = block_size
        elif block_size < 0.85 * size:
            continue
        parts.append(text)
        if sum(len(part) for part in parts) > MAX_ABSTRACT:
            break
    return " ".join(parts)[:MAX_ABSTRACT].strip()


def _join_lines(lines: list[str]) -> str:
    text = ""
    for line in lines:
        if text.endswith("-") and line[:1].islower() and text[-2:-1].isalpha():
            text = text[:-1] + line
        else:
            text = f"{text} {line}" if text else line
    return text
