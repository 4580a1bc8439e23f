"""The paper view of hybrid search: how close each paper as a whole is to the query.

A question often describes a paper in other words than any one passage uses; the paper's vector
(`sitedata.PaperVector`: its passages and its abstract together, stored by `papertable`) catches that.
The engine adds each paper's similarity to its passages' fused scores (`fusion.with_paper_prior`) and
lets the opening passage of the closest papers join the dense candidates (`with_openings`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from readingroom_core.filters import Allowed
from readingroom_core.fusion import Ranking
from readingroom_core.hnsw import dot
from readingroom_core.sitedata import PaperRecord


class PaperView:
    """The papers' vectors (`papertable.read_paper_vectors`), read on first use through `load`; a site
    without them (BEIR, where a passage is its own paper) has no paper view."""

    def __init__(
        self, papers: Sequence[PaperRecord], load: Callable[[], list[list[int]]] | None = None
    ) -> None:
        self._papers = papers
        self._load = load
        self._vectors: list[tuple[list[int], float]] | None = None  # (vector, its norm) by paper index

    def load(self) -> list[tuple[list[int], float]]:
        """The vectors, read now if not yet (the browser reads them with the dense directory)."""
        if self._vectors is None:
            vectors = self._load() if self._load else []
            self._vectors = [(vector, math.sqrt(dot(vector, vector)) or 1.0) for vector in vectors]
        return self._vectors

    def similarities(self, query_vector: Sequence[float]) -> dict[int, float]:
        """Cosine of the query and each paper's vector, by paper index; {} on sites without them."""
        return {index: dot(query_vector, vector) / norm for index, (vector, norm) in enumerate(self.load())}

    def with_openings(
        self, dense: Ranking, similarities: dict[int, float], openings: int, allowed: Allowed | None
    ) -> Ranking:
        """The dense candidates plus the first passage of the `openings` papers most like the query,
        scored by that paper similarity where it beats the passage's own: the opening states what the
        whole paper is about, which is what a question describing the paper in other words asks for."""
        if not openings or not similarities:
            return dense
        scores = dict(dense)
        papers = sorted(similarities, key=lambda index: (-similarities[index], index))
        added = 0
        for index in papers:
            if added == openings:
                break
            doc_id = self._papers[index].first_chunk
            if allowed is not None and not allowed.test(doc_id):
                continue
            scores[doc_id] = max(scores.get(doc_id, -1.0), similarities[index])
            added += 1
        return sorted(scores.items(), key=lambda item: (-item[1], item[0]))
