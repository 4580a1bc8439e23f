"""Queries that name a paper by an author or a name and a few of its words: "karpukhin dense retrieval",
"lewis retrieval augmented 2020", "dao io-aware exact attention".

A surname alone names every paper its author wrote first (Tri Dao wrote two FlashAttentions, four
Wangs wrote six papers of the mirror's list): the author narrows, the words pick. The words are read
against each candidate's title and names, as the stem a reader types ("retrieval" for "retrieving",
"aware" for "IO-awareness"), weighed by how rare they are among titles; the best candidate must hold
most of them and beat the next. A query whose words pick no candidate clearly names none, so a content
question that happens to start with a surname keeps the search's own ranking.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from readingroom_core.analysis import STOP_WORDS

STEM = 5  # letters two words must share from their start to count as one ("retriev-al", "-ing")
MOST_WORDS = 6  # a longer query is a question, not an author and what their paper does
HELD_SHARE = 0.5  # of the query's topic words (by weight) the picked paper's title and names must hold
_YEAR = re.compile(r"(?:19|20)\d\d")
_FILLER = frozenset({"paper", "arxiv", "et", "al"})


def same_word(typed: str, known: str, similar: Callable[[str, str], bool]) -> bool:
    """One word as a reader types it: equal, a typo apart, or sharing a stem ("retrieval" and
    "retrieving", "aware" and "awareness")."""
    return similar(typed, known) or (min(len(typed), len(known)) >= STEM and typed[:STEM] == known[:STEM])


def held(
    topic: Sequence[str],
    paper_words: Sequence[str],
    weight: Mapping[str, float],
    similar: Callable[[str, str], bool],
) -> tuple[float, float]:
    """(the weight of the topic words the paper's words hold, the weight of all of them); a word no
    title holds weighs as the rarest."""
    rarest = max(weight.values(), default=1.0)
    total = found = 0.0
    for word in topic:
        share = weight.get(word, rarest)
        total += share
        if any(same_word(word, known, similar) for known in paper_words):
            found += share
    return found, total


def pick(
    candidates: Sequence[int],
    topic: Sequence[str],
    words_of: Callable[[int], Sequence[str]],
    weight: Mapping[str, float],
    similar: Callable[[str, str], bool],
) -> int | None:
    """The one candidate whose words hold most of the topic's weight, and more than any other; an
    author's only paper needs to hold one of the words ("vaswani attention transformer")."""
    scored = []
    for paper in candidates:
        found, total = held(topic, words_of(paper), weight, similar)
        if found and (len(candidates) == 1 or found >= HELD_SHARE * total):
            scored.append((found, paper))
    scored.sort(reverse=True)
    if not scored or (len(scored) > 1 and scored[1][0] == scored[0][0]):
        return None
    return scored[0][1]


def split_query(typed: Sequence[str]) -> tuple[list[str], int | None] | None:
    """The query's words without a year and filler, and the year (None: no year); None where the query
    is too long to be a name and a few words."""
    kept = [word for word in typed if word not in _FILLER]
    years = [word for word in kept if _YEAR.fullmatch(word)]
    kept = [word for word in kept if not _YEAR.fullmatch(word)]
    if len(years) > 1 or not 2 <= len(kept) <= MOST_WORDS:
        return None
    return kept, int(years[0]) if years else None


def topic_words(words: Sequence[str]) -> list[str]:
    return [word for word in words if word not in STOP_WORDS]
