"""Citations in an LLM's answer, and the sentences it left without one: how an answer is read.

The one citation shape the prompt asks for, after every claim:

    [arXiv:2312.10997 p.7 "short verbatim quote"]

one citation per bracket, several brackets for several sources, `pp.7-8` when the quote's page is not
known. Parsing is lenient about what models really write: several citations in one bracket separated
by `;` or `,`, `pp.` ranges with any dash, `p. 7` / `page 7`, a missing `arXiv:` prefix, typographic
quotes (“…”, «…», „…“), a colon or comma between the parts, `(p. 7)`, round brackets
(`(arXiv:ID, p.7)`), Markdown emphasis or code marks around any part, and citations inside list items
and table cells. A bare arXiv id counts only when a page follows it; `[arXiv:ID]` (brackets and the
`arXiv:` prefix, no page) is a citation with page 0, which verification flags as naming no page.
Text inside markup echoed from the prompt (`<source cite="arXiv:ID p.7" title="…">`, or any
`attribute="arXiv:…"`) is never a citation.

Whose quote is it: a citation's quote is
1. the one inside its brackets; else
2. the one right after its closing bracket (the product's own spec writes `[arXiv:ID p.7] *"quote"*`):
   quoted (“…” or "…", in italics or not) or in italics alone, after nothing but spaces and at most one
   colon or dash; else
3. the one right before it (`"quote" [arXiv:ID p.7]`) that no earlier citation took.
One exception keeps quote-first writing readable: when a citation has a quote right before it and the
quote right after it is followed at once by the next citation (`"q1" [A] "q2" [B]`), it takes the one
before, and the one after is the next citation's. So in `[A] [B] "q"` the quote is B's alone, in
`[A] "q" [B]` it is A's, and in a bracket of several (`[A; B] "q"`) it is the last one's. A quote
taken from outside the brackets becomes part of the citation's span.

Uncited claims are sentences with no citation. Sentences are split out of the answer line by line:
headings, lines ending in ":" (list and table intros), table header and rule rows, code and sentences
under 4 words are not claims; no phrase exempts a sentence ("The sources do not say it, but BERT has
340M parameters." is a claim).
A citation right after a sentence's full stop belongs to that sentence.

`verification` checks what this module reads against the sources' page text.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

SHAPE = '[arXiv:ID p.N "short verbatim quote"]'
MIN_CLAIM_WORDS = 4

MAX_QUOTE_CHARS = 1000  # a longer "quote" is not read as one (and would not be a short verbatim quote)

# Every pattern below is linear in the answer: each repetition that could run over unbounded input has a
# bound, and no two unbounded runs of the same characters follow each other, which would make "See
# arXiv:ID" followed by a long run of spaces take seconds (tests/core/test_citation_speed.py).
_ID = r"(?:\d{4}\.\d{4,5}|[a-z][a-z.-]{0,24}/\d{7})(?:v\d{1,3})?"
_PAGE = (
    r"(?:pp?\.?|pages?)\s{0,8}(?P<first>\d{1,4})"
    r"(?:\s{0,8}(?:-|\u2010|\u2011|\u2012|\u2013|\u2014|to)\s{0,8}(?:pp?\.?\s{0,8})?(?P<last>\d{1,4}))?"
)
_MARKS = r"[\s*_`]{0,12}"
_MARKS_RE = re.compile(_MARKS)
_OPENING = {'"': '"', "\u201c": "\u201d\u201c\"", "\u201d": "\u201d\"", "\u00ab": "\u00bb", "\u201e": "\u201c\u201d\"",
            "\u2033": "\u2033\""}  # fmt: skip
_CITATION_RE = re.compile(
    rf"(?P<open>[\[(]{_MARKS})?(?:arxiv{_MARKS}:?{_MARKS}(?P<id>{_ID})|(?<![\w.])(?P<bare>{_ID}))"
    rf"(?:{_MARKS}[,:;]?{_MARKS}(?P<paren>\()?{_PAGE}(?(paren)\)))?",
    re.IGNORECASE,
)
_AFTER_PAGE_RE = re.compile(r"[\s*_`,:;\u2013\u2014-]{0,16}")
_CLOSE_RE = re.compile(rf"{_MARKS}[\])]")
# A quote written just before the citation instead of inside it: “…” [arXiv:ID p.N]
_QUOTE_BEFORE_OPEN, _QUOTE_BEFORE_CLOSE = '"\u201c\u00ab', '"\u201d\u00bb'
_QUOTE_BEFORE_MARKS = frozenset(" \t\r\n*_`,:\u2013\u2014-")
_QUOTE_BEFORE_CHARS = (8, 400)
_NEXT_IN_GROUP_RE = re.compile(rf"{_MARKS}[;,]{_MARKS}(?=(?:arxiv|{_ID}))", re.IGNORECASE)
# What may stand between a citation's closing bracket and a quote after it: spaces, at most one colon
# or dash, emphasis marks (the quote's own opening marks are read by _read_quote).
_BEFORE_QUOTE_AFTER_RE = re.compile(r"[ \t]{0,4}(?:[:\u2013\u2014-][ \t]{0,4})?")
_ITALIC_QUOTE_RE = re.compile(
    rf"(\*{{1,2}}|_{{1,2}})(?=[^\s*_])([^*_\n]{{8,{MAX_QUOTE_CHARS}}}?)(?<=\S)\1(?![*_\w])"
)
_CLOSING_MARKS_RE = re.compile(r"[*_]{0,3}")
_SPACES_AND_MARKS_RE = re.compile(_MARKS)
# Markup echoed from the prompt: a citation inside a tag, or an attribute's value, is not one.
_TAG_RE = re.compile(r"<[A-Za-z/][^<>\n]{0,2000}>")
_ATTRIBUTE_VALUE_RE = re.compile(r"=\s{0,4}[\"']?\s{0,4}$")


@dataclass
class Citation:
    arxiv_id: str
    page: int
    page_end: int
    quote: str
    start: int  # offsets of the citation in the answer
    end: int
    status: str = ""
    reason: str = ""
    source: int | None = None
    found_page: int | None = None
    highlight: tuple[int, int] | None = None

    @property
    def verified(self) -> bool:
        return self.status == "verified"

    @property
    def pages_label(self) -> str:
        return pages_label(self.page, self.page_end)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["verified"] = self.verified
        data["highlight"] = list(self.highlight) if self.highlight else None
        return data


@dataclass(frozen=True)
class Uncited:
    text: str
    start: int
    end: int


# --- citations ---------------------------------------------------------------------------------------


def pages_label(first: int, last: int) -> str:
    """Pages as a citation names them: `p.7`, or `pp.7-8` for a span (page 0: none named)."""
    if first == 0:
        return "no page"
    return f"p.{first}" if first == last else f"pp.{first}-{last}"


def _end_of_run(pattern: re.Pattern[str], text: str, at: int) -> int:
    """Where the run of `pattern` (which may match nothing) that starts at `at` ends."""
    match = pattern.match(text, at)
    return match.end() if match else at


def _read_quote(answer: str, at: int) -> tuple[str, int] | None:
    """The quote opening at `at` (after optional marks) and the offset after its closing mark."""
    skipped = _end_of_run(_MARKS_RE, answer, at)
    opening = answer[skipped : skipped + 1]
    closers = _OPENING.get(opening)
    if not closers:
        return None
    limit = min(len(answer), skipped + 2 + MAX_QUOTE_CHARS)
    ends = [at for at in (answer.find(c, skipped + 1, limit) for c in closers + "\n") if at >= 0]
    end = min(ends, default=-1)
    if end < 0 or answer[end] == "\n":
        return None
    return answer[skipped + 1 : end], end + 1


def _quote_before(answer: str, start: int, earliest: int) -> str:
    """The quote that ends just before `start` (after marks such as ", "), not before `earliest`."""
    end = start
    while end > earliest and start - end < 16 and answer[end - 1] in _QUOTE_BEFORE_MARKS:
        end -= 1
    if end <= earliest or answer[end - 1] not in _QUOTE_BEFORE_CLOSE:
        return ""
    shortest, longest = _QUOTE_BEFORE_CHARS
    opening = max(answer.rfind(c, max(earliest, end - 2 - longest), end - 1) for c in _QUOTE_BEFORE_OPEN)
    quote = answer[opening + 1 : end - 1]
    if opening < 0 or len(quote) < shortest or any(c in quote for c in "\u201c\u201d\u00ab\u00bb\n"):
        return ""
    return quote


def _quote_after(answer: str, at: int) -> tuple[str, int] | None:
    """The quote right after a citation's closing bracket at `at` (quoted, in italics or not, or in
    italics alone; after spaces and at most one colon or dash) and the offset after it."""
    start = _end_of_run(_BEFORE_QUOTE_AFTER_RE, answer, at)
    quoted = _read_quote(answer, start)
    if quoted:
        quote, end = quoted
        return quote, _end_of_run(_CLOSING_MARKS_RE, answer, end)
    italic = _ITALIC_QUOTE_RE.match(answer, start)
    if italic and len(italic.group(2).split()) >= 2:
        return italic.group(2), italic.end()
    return None


def _starts_citation(answer: str, at: int) -> bool:
    match = _CITATION_RE.match(answer, _end_of_run(_SPACES_AND_MARKS_RE, answer, at))
    return match is not None and match.group("first") is not None


def _echoed_markup(answer: str) -> list[tuple[int, int]]:
    return [match.span() for match in _TAG_RE.finditer(answer)]


def _in_markup(answer: str, start: int, tags: list[tuple[int, int]]) -> int | None:
    """Where the echoed markup around `start` (a tag, or an attribute's value) ends, or None when
    `start` is not inside markup."""
    inside = bisect_left(tags, (start + 1, -1)) - 1
    if inside >= 0 and tags[inside][0] < start < tags[inside][1]:
        return tags[inside][1]
    value = _ATTRIBUTE_VALUE_RE.search(answer, max(0, start - 10), start)
    if value is None:
        return None
    mark = value.group().strip("= \t\r\n")
    closing = answer.find(mark, start, start + 200) if mark else -1
    return closing + 1 if closing >= 0 else start + 1


def _closing(answer: str, end: int, in_group: bool) -> int | None:
    """The end of the citation's bracket (or of its separator from the next citation in the group)
    when it has one; None when the citation stands outside any bracket."""
    closing = _CLOSE_RE.match(answer, end)
    if closing and in_group:
        return closing.end()
    joined = _NEXT_IN_GROUP_RE.match(answer, end)
    if joined and in_group:
        return joined.end()
    return None


def _outside_quote(answer: str, start: int, end: int, earliest: int) -> tuple[str, int]:
    """A citation's quote from outside its brackets and the citation's new end (see the docstring)."""
    before = _quote_before(answer, start, earliest)
    after = _quote_after(answer, end)
    if after and not (before and _starts_citation(answer, after[1])):
        return after
    return before, end


def parse_citations(answer: str) -> list[Citation]:
    """Every citation in `answer`, in order, with its offsets; see the module docstring for the shapes
    and for whose quote a quote is."""
    citations: list[Citation] = []
    tags = _echoed_markup(answer)
    at = 0
    while (match := _CITATION_RE.search(answer, at)) is not None:
        start = match.start()
        skip_to = _in_markup(answer, start, tags)
        if skip_to is not None:
            at = max(skip_to, start + 1)
            continue
        paged = match.group("first") is not None
        in_group = match.group("open") is not None or bool(citations and citations[-1].end == start)
        end = match.end()
        quoted = _read_quote(answer, _end_of_run(_AFTER_PAGE_RE, answer, end))
        quote = ""
        if quoted:
            quote, end = quoted
        closed = _closing(answer, end, in_group)
        if not paged and (closed is None or match.group("id") is None):
            at = match.end()
            continue  # a bare id, or arXiv:ID in running text: a mention, not a citation
        end = closed if closed is not None else end
        if not quote:
            quote, end = _outside_quote(answer, start, end, citations[-1].end if citations else 0)
        first = int(match.group("first") or 0)
        last = int(match.group("last") or first)
        arxiv_id = match.group("id") or match.group("bare")
        citations.append(Citation(arxiv_id, min(first, last), max(first, last), quote.strip(), start, end))
        at = end
    return citations


# --- uncited claims ----------------------------------------------------------------------------------

_ABBREVIATIONS = re.compile(
    r"(?:\b(?:e\.g|i\.e|et al|etc|vs|cf|fig|figs|eq|eqs|sec|tab|no|approx|resp|p|pp|ch|vol|dr|mr|ms)|\b[A-Z])\.$",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"[.!?][\"'\u201d\u2019)*_]*(?=\s|$)")
_SPACES = re.compile(r"\s*")
_LIST_MARK = re.compile(r"^\s*(?:[-*+\u2022]|\d{1,3}[.)])\s+")
_HTML_TAG = re.compile(r"<(script|style)\b[^<]{0,2000}</\1\s{0,8}>|<[^<>]{0,500}>", re.IGNORECASE)
_MD_LINK = re.compile(r"!?\[([^\[\]]{0,500})\]\([^)]{0,2000}\)")
_WORD = re.compile(r"[^\W\d_]{2,}")


def _claim_lines(answer: str) -> list[tuple[int, str]]:
    """(offset, line) of every line that can hold claims: no headings, code, rules, table header or
    separator rows, and no line that only introduces what follows."""
    lines = []
    offset = 0
    in_code = False
    previous_was_table = False
    for raw in answer.splitlines(keepends=True):
        line = raw.rstrip("\r\n")
        start = offset
        offset += len(raw)
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            in_code = not in_code
            continue
        is_table = stripped.startswith("|")
        table_header = is_table and not previous_was_table
        previous_was_table = is_table
        if (
            in_code
            or not stripped
            or stripped.startswith("#")
            or re.fullmatch(r"[-*_=|:\s]+", stripped)
            or stripped.rstrip("*_ ").endswith(":")
            or table_header
        ):
            continue
        lines.append((start, line))
    return lines


def _sentences(line: str, cited: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """[start, end) of each sentence of `line` (a table row is one); a citation right after a full
    stop belongs to the sentence before it. `cited` are citation spans relative to the line, in order."""
    starts = [start for start, _ in cited]
    stop_of = dict(cited)
    cuts = []
    for match in _SENTENCE_END.finditer(line):
        end = match.end()
        if _ABBREVIATIONS.search(line[max(0, match.start() - 8) : match.start() + 1]):
            continue
        inside = bisect_left(starts, end) - 1  # the last citation that starts before this end
        if inside >= 0 and end <= cited[inside][1]:
            continue
        following = _end_of_run(_SPACES, line, end)
        cuts.append(stop_of.get(following, end))
    bounds, start = [], 0
    for cut in sorted(set(cuts)):
        bounds.append((start, cut))
        start = cut
    bounds.append((start, len(line)))
    return bounds


def find_uncited(answer: str, citations: Sequence[Citation]) -> list[Uncited]:
    """The sentences that make a claim and cite nothing. No phrase exempts a sentence: one that says
    "the sources do not cover X" and then states X is a claim like any other."""
    uncited = []
    spans = sorted((c.start, c.end) for c in citations)
    first = 0
    for line_start, line in _claim_lines(answer):
        line_end = line_start + len(line)
        first = bisect_left(spans, (line_start, -1), first)
        last = bisect_left(spans, (line_end, -1), first)
        cited = [(start - line_start, end - line_start) for start, end in spans[first:last]]
        cited_starts = [start for start, _ in cited]
        body_start = _end_of_run(_LIST_MARK, line, 0)
        for start, end in _sentences(line, cited):
            start = max(start, body_start)
            if end <= start or bisect_left(cited_starts, start) < bisect_left(cited_starts, end):
                continue
            sentence = line[start:end]
            if len(_WORD.findall(sentence)) < MIN_CLAIM_WORDS:
                continue  # markup removed below only lowers the count: skip the work
            plain = _MD_LINK.sub(r"\1", _HTML_TAG.sub(" ", sentence))
            if len(_WORD.findall(plain)) < MIN_CLAIM_WORDS:
                continue
            lead = len(sentence) - len(sentence.lstrip())
            text = sentence.strip()
            uncited.append(Uncited(text, line_start + start + lead, line_start + start + lead + len(text)))
    return uncited
