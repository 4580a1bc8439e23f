"""A short excerpt of a passage around its densest cluster of query matches, with highlight offsets.

Words match on analysed terms, the way the index matches them, so "retrieval" is highlighted for the
query "retrieve" and "GPT-3" for "gpt3". Output is plain text; escaping is the renderer's job.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache

from readingroom_core.analysis import analyze

DEFAULT_WIDTH = 240
ELLIPSIS = "\u2026"
# Runs of letters/digits, hyphen- or apostrophe-joined: the unit that analyze() turns into terms.
_WORD_RE = re.compile(r"[^\W_]+(?:[-\u2010\u2011'\u2019][^\W_]+)*")
_SPACE_RE = re.compile(r"\s+")
_LONGEST_WORD = 30  # a cut may grow by this much to keep a word whole


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


def _densest_cluster(matches: list[_Match], width: int) -> tuple[int, int]:
    """Indices [first, last] of the run of matches within `width` chars that covers the most distinct
    query terms, then the most matches; the earliest such run wins ties."""
    best, best_key = (0, 0), (-1, -1)
    last = 0
    for first, start in enumerate(matches):
        last = max(last, first)
        while last + 1 < len(matches) and matches[last + 1].end - start.start <= width:
            last += 1
        run = matches[first : last + 1]
        key = (len(frozenset().union(*(m.terms for m in run))), len(run))
        if key > best_key:
            best, best_key = (first, last), key
    return best


def _widen_to_words(text: str, start: int, end: int) -> tuple[int, int]:
    """[start, end) grown to whole space-separated tokens, unless a token is absurdly long (a URL)."""
    token_start = text.rfind(" ", 0, start) + 1
    if start - token_start <= _LONGEST_WORD:
        start = token_start
    token_end = text.find(" ", end)
    token_end = len(text) if token_end < 0 else token_end
    if token_end - end <= _LONGEST_WORD:
        end = token_end
    return start, end


def make_snippet(text: str, query_terms: Iterable[str], width: int = DEFAULT_WIDTH) -> Snippet:
    """About `width` characters of `text` (whitespace collapsed) centred on the densest cluster of
    matches, cut at word boundaries, with an ellipsis on each cut side."""
    text = _SPACE_RE.sub(" ", text).strip()
    matches = find_matches(text, query_terms)
    if len(text) <= width:
        return Snippet(text, [(m.start, m.end) for m in matches])
    if matches:
        first, last = _densest_cluster(matches, width)
        cluster_start, cluster_end = matches[first].start, matches[last].end
        margin = max(0, width - (cluster_end - cluster_start)) // 2
        start = max(0, min(cluster_start - margin, len(text) - width))
        end = min(len(text), max(start + width, cluster_end))
    else:
        start, end = 0, width
    start, end = _widen_to_words(text, start, end)
    prefix = ELLIPSIS if start > 0 else ""
    suffix = ELLIPSIS if end < len(text) else ""
    shift = len(prefix) - start
    highlights = [(m.start + shift, m.end + shift) for m in matches if m.start >= start and m.end <= end]
    return Snippet(prefix + text[start:end] + suffix, highlights)
