"""Where lines sit on a page: reading order of two-column pages (left column before right, full-width
lines in their vertical place), pieces of one visual row joined, and running headers, footers and page
numbers removed across the paper."""

from __future__ import annotations

import math
import re
from collections import Counter

import numpy as np

from builder.stages.parse.cleanup import WHITESPACE
from builder.stages.parse.page import Line, RawPage

_HEADER_BAND = 0.1  # share of page height at top and bottom where running headers/footers live
_GUTTER_TOLERANCE = 0.02  # share of page width a column line may overhang the gutter
_PAGE_NUMBER = re.compile(
    r"^(?:page\s*)?[-–—]?\s*(?:\d{1,4}|[ivx]{1,6})\s*[-–—]?(?:\s*(?:of|/)\s*\d{1,4})?$", re.IGNORECASE
)
_DIGITS = re.compile(r"\d+")


def reading_order(page: RawPage) -> list[Line]:
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


def merge_rows(lines: list[Line]) -> list[Line]:
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
    return WHITESPACE.sub("", _DIGITS.sub("#", line.text.lower())), round((line.y0 + line.y1) / 10)


def drop_running_lines(pages: list[RawPage], body_size: float) -> None:
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


def body_font_size(pages: list[RawPage]) -> float:
    sizes: Counter[float] = Counter()
    for page in pages:
        for line in page.lines:
            sizes[line.size] += len(line.text)
    return sizes.most_common(1)[0][0] if sizes else 10.0
