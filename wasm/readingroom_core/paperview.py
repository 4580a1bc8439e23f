"""The paper view of hybrid search: how close each paper as a whole is to the query.

A question often describes a paper in other words than any one passage uses; the paper's vector
(`formats.papers.PaperVector`: its passages and its abstract together, read from `files.paper_vectors`)
catches that. The engine adds each paper's similarity to its passages' fused scores
(`fusion.with_paper_prior`) and lets the opening passage of the closest papers join the dense candidates
(`with_openings`).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterator, Sequence

from readingroom_core.filters import Allowed
from readingroom_core.formats.papers import PaperRecord
from readingroom_core.fusion import Ranking
from readingroom_core.lru import LastResult
from readingroom_core.packedrows import PackedRows, integer_query


class PaperView:
    """The papers' vectors (`readers.papers.read_paper_vectors`), read on first use through `load`; a site
    without them (BEIR, where a passage is its own paper) has no paper view."""

    def __init__(self, papers: Sequence[PaperRecord], load: Callable[[], PackedRows] | None = None) -> None:
        self._papers = papers
        self._load = load
        self._vectors: PackedRows | None = None
        self._norms: list[float] = []
        self._last: LastResult[tuple[float, ...], dict[int, float]] = LastResult()

    def load(self) -> None:
        """Read the vectors now if not yet (the browser reads them with the dense directory)."""
        if self._vectors is None and self._load is not None:
            self._vectors = self._load()
            self._norms = [math.sqrt(square) or 1.0 for square in self._vectors.squares]

    def similarities(self, query_vector: Sequence[float]) -> dict[int, float]:
        """Each paper's vector's product with the query over the vector's norm (the cosine, for a unit
        query), by paper index; {} on sites without them. All papers at once (`PackedRows`, several times
        faster than a product per paper; commit 93d9da5), kept for the runs of the step after the first
        (`lru.LastResult`)."""
        self.load()
        if self._vectors is None:
            return {}
        vectors = self._vectors
        return self._last.get(tuple(query_vector), lambda: self._similarities(vectors, query_vector))

    def _similarities(self, vectors: PackedRows, query_vector: Sequence[float]) -> dict[int, float]:
        query, scale = integer_query(query_vector)
        products = vectors.products(query)
        return {
            index: product * scale / norm
            for index, (product, norm) in enumerate(zip(products, self._norms, strict=True))
        }

    def with_openings(
        self, dense: Ranking, similarities: dict[int, float], openings: int, allowed: Allowed | None
    ) -> Ranking:
        """The dense candidates plus the first passage of the `openings` papers most like the query,
        scored by that paper similarity where it beats the passage's own: the opening states what the
        whole paper is about, which is what a question describing the paper in other words asks for."""
        if not openings or not similarities:
            return dense
        scores = dict(dense)
        added = 0
        for index in most_similar_first(similarities, openings):
            doc_id = self._papers[index].first_chunk
            if allowed is not None and not allowed.test(doc_id):
                continue
            scores[doc_id] = max(scores.get(doc_id, -1.0), similarities[index])
            added += 1
            if added == openings:  # before asking for one more, which orders every other paper (3 ms)
                break
        return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def most_similar_first(similarities: dict[int, float], first: int) -> Iterator[int]:
    """Paper indexes by similarity, ties by index: the `first` best ordered on their own, the rest only if
    the caller reads on (filters ruled papers out): ordering every paper is a noticeable part of a warm
    query on a large list (commit d0a8eeb)."""
    head = list(similarities)
    if 0 < first < len(head):
        threshold = heapq.nlargest(first, similarities.values())[-1]
        head = [index for index, similarity in similarities.items() if similarity >= threshold]
    ordered = sorted(head, key=lambda index: (-similarities[index], index))
    yield from ordered
    if len(ordered) < len(similarities):
        chosen = set(ordered)
        rest = (index for index in similarities if index not in chosen)
        yield from sorted(rest, key=lambda index: (-similarities[index], index))
