"""BM25: the postings a build computes (`Postings`, from `analysis.analyze`, the code that analyses
queries), the one weight formula, and an in-memory scorer over them.

The site stores the postings by range (`formats.postings`); `BM25Index` scores every posting in memory, the
exhaustive reference the ranged index is measured against. Doc ids are chunk positions 0..N-1; a term's
entry is [doc id deltas] or [doc id deltas, term frequencies] (frequencies left out when all are 1).
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import accumulate

from readingroom_core.analysis import analyze

Entry = list[list[int]]  # one term's postings as stored: [deltas] or [deltas, frequencies]


@dataclass(frozen=True)
class Postings:
    """The BM25 parameters, every document's length and every term's entry (what `formats.postings` stores)."""

    k1: float
    b: float
    avgdl: float
    doc_lengths: list[int]
    terms: dict[str, Entry]

    @property
    def n(self) -> int:
        return len(self.doc_lengths)


def build_postings(docs: Sequence[str], k1: float = 1.2, b: float = 0.75) -> Postings:
    """Postings for `docs`, whose positions are their doc ids (chunk order); terms come from
    `analysis.analyze`, the code that analyses queries."""
    by_term: dict[str, list[tuple[int, int]]] = {}
    doc_lengths: list[int] = []
    for doc_id, text in enumerate(docs):
        terms = analyze(text)
        doc_lengths.append(len(terms))
        for term, frequency in Counter(terms).items():
            by_term.setdefault(term, []).append((doc_id, frequency))
    return Postings(
        k1=k1,
        b=b,
        avgdl=sum(doc_lengths) / len(doc_lengths) if doc_lengths else 0.0,
        doc_lengths=doc_lengths,
        terms={term: encode_entry(by_term[term]) for term in sorted(by_term)},
    )


def encode_entry(postings: list[tuple[int, int]]) -> Entry:
    """[doc id deltas] or [doc id deltas, frequencies] for ascending (doc id, frequency) pairs."""
    doc_ids = [doc_id for doc_id, _ in postings]
    deltas = [doc_ids[0]] + [later - earlier for earlier, later in zip(doc_ids, doc_ids[1:], strict=False)]
    frequencies = [frequency for _, frequency in postings]
    return [deltas] if all(frequency == 1 for frequency in frequencies) else [deltas, frequencies]


def decode_entry(entry: Entry) -> tuple[list[int], list[int]]:
    """Doc ids and term frequencies of one term's postings entry."""
    doc_ids = list(accumulate(entry[0]))
    frequencies = entry[1] if len(entry) > 1 else [1] * len(doc_ids)
    return doc_ids, frequencies


def lucene_idf(n_docs: int, doc_freq: int) -> float:
    """Lucene's BM25 idf, which stays positive even for terms in most documents."""
    return math.log(1 + (n_docs - doc_freq + 0.5) / (doc_freq + 0.5))


class BM25Index:
    """Okapi BM25 (with the classic (k1 + 1) numerator) over the postings."""

    def __init__(self, postings: Postings) -> None:
        self.n_docs = postings.n
        self.k1 = postings.k1
        self.b = postings.b
        self.avgdl = postings.avgdl
        self.doc_lengths = postings.doc_lengths
        self._terms = postings.terms
        self._decoded: dict[str, tuple[list[int], list[int]] | None] = {}
        self._weights: dict[str, tuple[list[int], list[float]] | None] = {}
        # for "did you mean", built when first needed: all terms in order, and per initial letter met so
        # far its terms by length with their lengths
        self._sorted_terms: list[str] | None = None
        self._by_initial: dict[str, tuple[list[int], list[str]]] = {}
        self._length_norms = [length_norm(self.k1, self.b, self.avgdl, dl) for dl in self.doc_lengths]

    def postings(self, term: str) -> tuple[list[int], list[int]] | None:
        """(doc ids, term frequencies) of `term`, or None when no document has it."""
        if term not in self._decoded:
            entry = self._terms.get(term)
            self._decoded[term] = decode_entry(entry) if entry is not None else None
        return self._decoded[term]

    def doc_freq(self, term: str) -> int:
        """How many documents hold `term` (0 when none), without decoding its postings."""
        entry = self._terms.get(term)
        return len(entry[0]) if entry is not None else 0

    def terms_near(self, term: str, shortest: int, longest: int) -> list[str]:
        """Indexed terms that could be `term` misspelt: same first letter, a length in [shortest, longest]."""
        initial = term[:1]
        if not initial:
            return []
        if initial not in self._by_initial:
            if self._sorted_terms is None:
                self._sorted_terms = sorted(self._terms)  # the file keeps its terms sorted: a linear pass
            first = bisect_left(self._sorted_terms, initial)
            after = bisect_left(self._sorted_terms, chr(ord(initial) + 1), first)
            terms = sorted(self._sorted_terms[first:after], key=len)
            self._by_initial[initial] = ([len(known) for known in terms], terms)
        lengths, terms = self._by_initial[initial]
        found = terms[bisect_left(lengths, shortest) : bisect_right(lengths, longest)]
        return [known for known in found if known != term]

    def weights(self, term: str) -> tuple[list[int], list[float]] | None:
        """(doc ids, BM25 weight of `term` in each), or None when no document has it; kept once computed.

        A term's weights never change, and the common terms (model, language, retrieval…) hold most
        postings and come back query after query, so caching them halves a typical query's scoring
        time in Pyodide.
        """
        cached = self._weights.get(term)
        if cached is None and term not in self._weights:
            found = self.postings(term)
            if found is not None:
                doc_ids, frequencies = found
                idf = lucene_idf(self.n_docs, len(doc_ids))
                norms = [self._length_norms[doc_id] for doc_id in doc_ids]
                cached = (doc_ids, term_weights(idf, self.k1, frequencies, norms))
            self._weights[term] = cached
        return cached

    def search(
        self, query_terms: Iterable[str], k: int, allowed: Callable[[int], bool] | None = None
    ) -> list[tuple[int, float]]:
        """Top `k` (doc id, score) for documents holding any query term, best first, ties by doc id.

        Each distinct term counts once. `allowed` is asked once per candidate while scoring, so a filter
        never shrinks the result below k when enough allowed documents match.
        """
        return sum_scores((self.weights(term) for term in dict.fromkeys(query_terms)), k, allowed)


def sum_scores(
    weighted: Iterable[tuple[Sequence[int], Sequence[float]] | None],
    k: int,
    allowed: Callable[[int], bool] | None,
) -> list[tuple[int, float]]:
    """Top `k` (doc id, summed weight) over each term's (doc ids, weights), terms in query order (the
    sums, and so the ranking, are the same bit for bit whichever index supplied the weights)."""
    if k <= 0:
        return []
    scores: dict[int, float] = {}
    for found in weighted:
        if found is None:
            continue
        doc_ids, weights = found
        if allowed is None and not scores:
            scores = dict(zip(doc_ids, weights, strict=True))  # 0.0 + weight is weight
            continue
        add = scores.get
        # `allowed` is asked again for each term that holds a document: remembering its answers for every
        # document of full postings (a quoted title's: 800,000 at 10,000 papers) costs far more memory
        # (commit 978e5ff)
        for doc_id, weight in zip(doc_ids, weights, strict=True):
            if allowed is None or allowed(doc_id):
                scores[doc_id] = add(doc_id, 0.0) + weight
    return top_scores(scores, k)


def term_weights(idf: float, k1: float, frequencies: Iterable[int], norms: Iterable[float]) -> list[float]:
    """BM25 weight of a term in each document from its frequency there and the document's length norm
    (k1 * (1 - b + b * dl / avgdl)); the one formula both indexes use."""
    k1_plus_one = k1 + 1
    return [
        idf * frequency * k1_plus_one / (frequency + norm)
        for frequency, norm in zip(frequencies, norms, strict=True)
    ]


def length_norm(k1: float, b: float, avgdl: float, doc_length: int) -> float:
    return k1 * (1 - b + b * doc_length / (avgdl or 1.0))


def top_scores(scores: dict[int, float], k: int) -> list[tuple[int, float]]:
    """The `k` best (doc id, score) pairs, best first, ties by doc id.

    Only the pairs scoring at least the k-th best score are ordered through a key function: ordering
    all of them (thousands for a common term) would cost a third of a query's BM25 time in Pyodide
    (commit b7ab095).
    """
    if len(scores) > k:
        threshold = heapq.nlargest(k, scores.values())[-1]
        pairs = [pair for pair in scores.items() if pair[1] >= threshold]
    else:
        pairs = list(scores.items())
    pairs.sort(key=_best_first)
    return pairs[:k]


def _best_first(pair: tuple[int, float]) -> tuple[float, int]:
    return -pair[1], pair[0]
