"""Related papers on a paper's page: the papers of the list nearest to it by the paper's vector as the
site stores it (`formats.papers.PaperVector`, what the paper view of hybrid search scores), so "related" and
search agree on what a paper is about."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from readingroom_core.formats.papers import PaperRecord, PaperVector

RELATED_COUNT = 5


def related_papers(
    papers: Sequence[PaperRecord], count: int = RELATED_COUNT
) -> dict[str, list[tuple[PaperRecord, float]]]:
    """For each paper id, the `count` other papers with the closest vectors: [(paper, cosine)], nearest
    first. Papers without a stored vector are neither given nor offered as related."""
    related: dict[str, list[tuple[PaperRecord, float]]] = {paper.id: [] for paper in papers}
    stored = [(paper, paper.vector) for paper in papers if paper.vector]
    if len(stored) < 2:
        return related
    placed = [paper for paper, _ in stored]
    units = np.array([PaperVector.decode(vector) for _, vector in stored], dtype=np.float32)
    units /= np.maximum(np.linalg.norm(units, axis=1, keepdims=True), 1e-12)
    similarity = units @ units.T
    np.fill_diagonal(similarity, -np.inf)
    for row, paper in enumerate(placed):
        order = np.argsort(-similarity[row], kind="stable")[: min(count, len(placed) - 1)]
        related[paper.id] = [(placed[i], float(similarity[row, i])) for i in order]
    return related
