"""Whether a search's best matches are weak on both sides, so the page says so instead of presenting the
nearest passages as answers ("purple elephant banana smoothie", a topic the list does not hold).

Both sides: the keyword side (how much of the query's weight, rare words weighing most, the best passage
holds) and the dense side (the best cosine of query and passage). The floors come from
scripts/calibrate_weak_match.py on the 112-paper mirror site, over the answerable questions of the
dev, extra, tune and report sets (152) and the 41 queries of tests/data/questions-weak.jsonl, which
records what they call weak in docs/measurements/weak.json:

- no answerable question has a best cosine under 0.354; nonsense and unrelated queries mostly score
  0.13-0.37, so under NOTHING_CLOSE (0.30) nothing is close in meaning;
- a short query (at most SHORT_QUERY_TERMS terms) names its topic in a few words, and every answerable
  short question has either a passage holding nearly all its weight (keyword coverage 1.0: "adjacent
  weight tying", "reparameterization trick", "salient span masking") or a cosine of 0.50 or more;
  unrelated and absent topics score under SHORT_WEAK_SIMILARITY with partial coverage; a short query
  with no word the list uses is held to UNKNOWN_WORDS_SIMILARITY instead (a paraphrase in other words
  scores above nonsense, though under SHORT_WEAK_SIMILARITY). Long questions
  paraphrase on purpose (their coverage is often under 0.35, their cosine down to 0.35), so only the
  first floor applies to them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Protocol

from readingroom_core.analysis import analyze

NOTHING_CLOSE = 0.30
SHORT_QUERY_TERMS = 6
SHORT_WEAK_SIMILARITY = 0.47
# A short query none of whose words the list uses is a paraphrase or nonsense: nonsense scores 0.24-0.37
# on the mirror, "thermodynamics of perceptrons" (a true paraphrase in tests/support/corpus.py) 0.43.
UNKNOWN_WORDS_SIMILARITY = 0.40
FULL_MATCH = 0.9  # keyword coverage at which a passage holds the query's words


class Passage(Protocol):
    """What the check reads of a hit (`engine.Hit`)."""

    @property
    def text(self) -> str: ...
    @property
    def similarity(self) -> float | None: ...
    @property
    def named(self) -> bool: ...


def keyword_coverage(
    hits: Sequence[Passage], terms: Sequence[str], doc_freq: Callable[[str], int], n_docs: int
) -> float:
    """The largest share of the query's term weight (inverse document frequency; a word the corpus
    never uses weighs most) that one passage holds."""
    weights = {term: math.log(1 + (n_docs + 0.5) / (doc_freq(term) + 0.5)) for term in dict.fromkeys(terms)}
    total = sum(weights.values())
    if not total:
        return 0.0
    best = 0.0
    for hit in hits:
        held = set(analyze(hit.text)).intersection(weights)
        best = max(best, sum(weights[term] for term in held) / total)
    return best


def weak_match(
    hits: Sequence[Passage], terms: Sequence[str], doc_freq: Callable[[str], int], n_docs: int
) -> bool:
    """Whether nothing matches the query well, in words or in meaning (see the module's floors).

    Without the dense side (keyword-only search) it is weak only when no passage holds any query word.
    A result the query named (navigation) is a match however it scores.
    """
    if not hits or any(hit.named for hit in hits):
        return False
    similarity = max((hit.similarity for hit in hits if hit.similarity is not None), default=None)
    if similarity is None:
        return keyword_coverage(hits, terms, doc_freq, n_docs) == 0.0
    if similarity < NOTHING_CLOSE:
        return keyword_coverage(hits, terms, doc_freq, n_docs) < FULL_MATCH
    if len(terms) > SHORT_QUERY_TERMS:
        return False
    coverage = keyword_coverage(hits, terms, doc_freq, n_docs)
    if coverage >= FULL_MATCH:
        return False
    return similarity < (SHORT_WEAK_SIMILARITY if coverage else UNKNOWN_WORDS_SIMILARITY)
