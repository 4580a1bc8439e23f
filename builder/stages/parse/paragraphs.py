"""A page's lines grouped into paragraphs and joined into text: a line-end hyphen is a break unless the
paper writes the compound whole elsewhere (its vocabulary says which)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from builder.stages.parse.page import Line, RawPage

_COMPOUND = re.compile(r"[^\W\d_]+(?:-[^\W\d_]+)+")
_WORD = re.compile(r"[^\W\d_]+")
_BROKEN_WORD = re.compile(r"[^\W\d_]+-\n[^\W\d_]*")
_HEADING_NUMBER = re.compile(r"^(?:\d{1,2}(?:\.\d{1,2})*\.?|[A-Z]\.|[IVX]{1,5}\.)\s")
_TRAILING_WORD = re.compile(r"([^\W\d_]+)-$")
_LEADING_WORD = re.compile(r"^([^\W\d_]+)")


@dataclass
class Paragraph:
    """Lines joined into one paragraph of the page text; sections and references are found on these."""

    lines: list[Line]
    text: str
    flush_left: bool  # starts at its column's left edge, where headings sit and figure labels rarely do
    start: int = 0  # offset in ParsedPaper.text, filled when the page is placed


@dataclass
class Vocabulary:
    """Words and hyphenated pairs written whole somewhere in the paper, to tell compounds from breaks."""

    words: set[str]
    compounds: set[str]

    @classmethod
    def from_pages(cls, pages: list[RawPage]) -> Vocabulary:
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


def _join_lines(lines: list[Line], vocabulary: Vocabulary) -> str:
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


def _line_joint(before: str, after: str, vocabulary: Vocabulary) -> bool | None:
    """True: join with a space; False: join directly; None: join and drop the line-end hyphen."""
    last, first = before[-1], after[0]
    if last in "–/" and before[-2:-1].isdigit() and first.isdigit():
        return False  # a number range broken after its dash: "222–228"
    if last != "-" or not before[-2:-1].isalnum() or not first.isalnum():
        return True
    head, tail = _TRAILING_WORD.search(before), _LEADING_WORD.match(after)
    if not first.islower():
        # "GPT-" + "3", "TF-" + "IDF" keep the hyphen; all-caps "LAN-" + "GUAGE" is a break
        if (
            head
            and tail
            and head[1].isupper()
            and tail[1].isupper()
            and vocabulary.is_word(head[1] + tail[1])
        ):
            return None
        return False
    if head and tail and vocabulary.keeps_hyphen(head[1], tail[1]):
        return False
    return None


def split_paragraphs(page: RawPage, body_size: float, vocabulary: Vocabulary) -> list[Paragraph]:
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


def heading_styled(line: Line, body_size: float) -> bool:
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
    previous_styled = heading_styled(previous, body_size)
    if previous_styled != heading_styled(line, body_size):
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
