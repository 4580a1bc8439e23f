"""A short excerpt of a passage around its densest cluster of query matches, with highlight offsets.

Words match on analysed terms, the way the index matches them, so "retrieval" is highlighted for the
query "retrieve" and "GPT-3" for "gpt3". Output is plain text; escaping is the renderer's job.

Passages about results often hold a table: its rows come out of the PDF as runs of numbers
("GPT-3 (LoRA) 4.7M 73.4 91.7 ..."), a poor excerpt when the caption or the prose beside it says the
same in words. Paragraphs that read as table rows are told apart; the excerpt prefers matches in
prose and slides its window off the table, and where table text is shown its rows stay apart (" · ").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from readingroom_core.analysis import analyze

DEFAULT_WIDTH = 240
ELLIPSIS = "\u2026"
# Runs of letters/digits, hyphen- or apostrophe-joined: the unit that analyze() turns into terms.
_WORD_RE = re.compile(r"[^\W_]+(?:[-\u2010\u2011'\u2019][^\W_]+)*")
_SPACE_RE = re.compile(r"\s+")
_LONGEST_WORD = 30  # a cut may grow by this much to keep a word whole
_PARAGRAPH_RE = re.compile(r"\n\s*\n")
ROW_JOINT = " \u00b7 "  # between paragraphs when one is table text, so rows do not run together
# A cell of numbers: digits and no lower-case letters ("73.4", "175B", "GPT-3", "(+0.3)", "53.8/29.8").
_NUMBER_CELL_RE = re.compile(r"(?<!\S)[^\sa-z]*\d[^\sa-z]*(?!\S)")
_LOWER_WORD_RE = re.compile(r"(?<!\S)[(\[\"\u201c]?[a-z][a-z'\u2019-]+[.,;:)\]\"\u201d]?(?!\S)")
_TABLE_MIN_TOKENS = 6  # "Appendix D.1 and Appendix D.2)." is a broken line of prose
_TABLE_NUMBER_SHARE = 0.3  # prose with many numbers ("Test F1 to 93.2 (1.5 point ...") stays below
_TABLE_WORD_SHARE = 0.2  # prose is at least a third lower-case words; a row of names is not
_TABLE_WORD_MIN_TOKENS = (
    8  # shorter runs of capitalised words are headings ("C.2 Ablation for Different ...")
)


@dataclass(frozen=True)
class Snippet:
    text: str
    highlights: list[tuple[int, int]] = field(default_factory=list)  # (start, end) offsets into text


@dataclass(frozen=True)
class _Match:
    start: int
    end: int
    terms: frozenset[str]


@lru_cache(maxsize=1 << 16)
def _word_terms(word: str) -> frozenset[str]:
    """Analysing every word of every shown hit dominated snippet time in Pyodide; words repeat a lot."""
    return frozenset(analyze(word))


def find_matches(text: str, query_terms: Iterable[str]) -> list[_Match]:
    """Words of `text` whose analysed terms share a term with the query, in text order."""
    wanted = set(query_terms)
    if not wanted:
        return []
    matches = []
    for word in _WORD_RE.finditer(text):
        shared = _word_terms(word.group()) & wanted
        if shared:
            matches.append(_Match(word.start(), word.end(), shared))
    return matches


def is_table_text(paragraph: str) -> bool:
    """A paragraph that reads as table rows: many number cells, or hardly any lower-case words."""
    tokens = len(paragraph.split())
    if tokens < _TABLE_MIN_TOKENS:
        return False
    numbers = len(_NUMBER_CELL_RE.findall(paragraph))
    words = len(_LOWER_WORD_RE.findall(paragraph))
    if numbers >= _TABLE_NUMBER_SHARE * tokens:
        return True
    return tokens >= _TABLE_WORD_MIN_TOKENS and words < _TABLE_WORD_SHARE * tokens


@lru_cache(maxsize=1024)
def _flatten(text: str) -> tuple[str, tuple[tuple[int, int], ...]]:
    """`text` on one line (whitespace collapsed) and the [start, end) spans of its table paragraphs.

    Cached: telling tables from prose costs about half as much again as finding the matches, and a
    visitor refining a query meets the same passages again."""
    paragraphs = [p for p in (_SPACE_RE.sub(" ", part).strip() for part in _PARAGRAPH_RE.split(text)) if p]
    pieces: list[str] = []
    tables: list[tuple[int, int]] = []
    at, previous_table = 0, False
    for index, paragraph in enumerate(paragraphs):
        table = is_table_text(paragraph)
        if index:
            joint = ROW_JOINT if table or previous_table else " "
            pieces.append(joint)
            at += len(joint)
        if table:
            tables.append((at, at + len(paragraph)))
        pieces.append(paragraph)
        at += len(paragraph)
        previous_table = table
    return "".join(pieces), tuple(tables)


def _in_tables(position: int, tables: Sequence[tuple[int, int]]) -> bool:
    return any(start <= position < end for start, end in tables)


def _table_overlap(start: int, end: int, tables: Sequence[tuple[int, int]]) -> int:
    return sum(max(0, min(end, t_end) - max(start, t_start)) for t_start, t_end in tables)


def _densest_cluster(matches: list[_Match], width: int, tables: Sequence[tuple[int, int]]) -> tuple[int, int]:
    """Indices [first, last] of the run of matches within `width` chars that covers the most distinct
    query terms, then holds the most matches in prose, then the fewest in table rows; the earliest such
    run wins ties."""
    in_prose = [not _in_tables(m.start, tables) for m in matches]
    best, best_key = (0, 0), (-1, -1, 0)
    last = 0
    for first, start in enumerate(matches):
        last = max(last, first)
        while last + 1 < len(matches) and matches[last + 1].end - start.start <= width:
            last += 1
        run = matches[first : last + 1]
        prose = sum(in_prose[first : last + 1])
        key = (len(frozenset().union(*(m.terms for m in run))), prose, prose - len(run))
        if key > best_key:
            best, best_key = (first, last), key
    return best


def _window_start(
    centred: int, lowest: int, highest: int, width: int, tables: Sequence[tuple[int, int]]
) -> int:
    """Where a `width` window starts: `centred` unless a start in [lowest, highest] (each keeps the
    cluster in view) shows less table text; table edges are the starts worth trying."""
    if not tables or highest <= lowest:
        return centred
    candidates = {centred, lowest, highest}
    for t_start, t_end in tables:
        candidates.update((t_end + len(ROW_JOINT), t_start - width))
    return min(
        (c for c in candidates if lowest <= c <= highest),
        key=lambda c: (_table_overlap(c, c + width, tables), abs(c - centred)),
    )


def _widen_to_words(text: str, start: int, end: int) -> tuple[int, int]:
    """[start, end) grown to whole space-separated tokens, unless a token is absurdly long (a URL)."""
    token_start = text.rfind(" ", 0, start) + 1
    if text[start : start + 1] != " " and start - token_start <= _LONGEST_WORD:  # on a space: a boundary
        start = token_start
    token_end = text.find(" ", end)
    token_end = len(text) if token_end < 0 else token_end
    if token_end - end <= _LONGEST_WORD:
        end = token_end
    return start, end


def _row_start(position: int, tables: Sequence[tuple[int, int]], width: int, centred: int) -> int:
    """The latest start that keeps the table paragraph holding `position` readable from its first cell
    (`centred` when that paragraph began long before), or `position` itself outside tables."""
    for t_start, t_end in tables:
        if t_start <= position < t_end:
            return t_start if position - t_start <= width // 2 else min(centred, position)
    return position


def _trim_joints(text: str, start: int, end: int) -> tuple[int, int]:
    """A cut that lands on a row joint does not show it as the excerpt's first or last character."""
    joint = ROW_JOINT.strip()
    while start < end and text[start] in (joint, " "):
        start += 1
    while end > start and text[end - 1] in (joint, " "):
        end -= 1
    return start, end


def make_snippet(text: str, query_terms: Iterable[str], width: int = DEFAULT_WIDTH) -> Snippet:
    """About `width` characters of `text` (whitespace collapsed, table rows kept apart) around the
    densest cluster of matches, preferring prose to table rows, cut at word boundaries, with an
    ellipsis on each cut side."""
    text, tables = _flatten(text)
    matches = find_matches(text, query_terms)
    if len(text) <= width:
        return Snippet(text, [(m.start, m.end) for m in matches])
    last_start = len(text) - width
    if matches:
        first, last = _densest_cluster(matches, width, tables)
        cluster_start, cluster_end = matches[first].start, matches[last].end
        margin = max(0, width - (cluster_end - cluster_start)) // 2
        centred = max(0, min(cluster_start - margin, last_start))
        # up to the cluster itself: a window shorter than `width` beats one that ends on table rows;
        # but a match in a table row keeps the start of its row in view
        lowest, highest = max(0, cluster_end - width), _row_start(cluster_start, tables, width, centred)
        start = _window_start(centred, lowest, highest, width, tables)
    else:
        cluster_end = 0
        start = _window_start(0, 0, last_start, width, tables)
    end = min(len(text), max(start + width, cluster_end))
    start, end = _widen_to_words(text, start, end)
    start, end = _trim_joints(text, start, end)
    prefix = ELLIPSIS if start > 0 else ""
    suffix = ELLIPSIS if end < len(text) else ""
    shift = len(prefix) - start
    highlights = [(m.start + shift, m.end + shift) for m in matches if m.start >= start and m.end <= end]
    return Snippet(prefix + text[start:end] + suffix, highlights)
