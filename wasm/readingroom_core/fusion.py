"""Combine ranked lists from several retrievers into one, and keep one paper from filling the page.

Retrievers score on unrelated scales (BM25 is unbounded, cosine similarity lies in [-1, 1]), so raw
scores are never added: either ranks are fused (reciprocal rank fusion) or each retriever's scores are
min-max normalised over its own candidate list first. Rankings are lists of (doc id, score), best first,
higher score better. Ties are broken by doc id, so equal inputs always give the same order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

Ranking = Sequence[tuple[int, float]]
DEFAULT_RRF_K = 60


@dataclass(frozen=True)
class Fused:
    doc_id: int
    score: float
    ranks: dict[str, int | None] = field(default_factory=dict)  # 1-based per retriever, None if absent


def ranks_by_doc(rankings: Mapping[str, Ranking]) -> dict[int, dict[str, int | None]]:
    """For every doc in any ranking, its 1-based rank in each retriever (None where it is missing)."""
    names = sorted(rankings)
    ranks: dict[int, dict[str, int | None]] = {}
    for name in names:
        for rank, (doc_id, _) in enumerate(rankings[name], start=1):
            ranks.setdefault(doc_id, dict.fromkeys(names))[name] = rank
    return ranks


def _in_order(scores: dict[int, float], ranks: dict[int, dict[str, int | None]]) -> list[Fused]:
    ordered = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
    return [Fused(doc_id, score, ranks[doc_id]) for doc_id, score in ordered]


def reciprocal_rank_fusion(rankings: Mapping[str, Ranking], k: int = DEFAULT_RRF_K) -> list[Fused]:
    """Score = sum over retrievers of 1 / (k + rank); a retriever that missed a doc adds nothing."""
    if k < 0:
        raise ValueError(f"rrf k must be >= 0, got {k}")
    ranks = ranks_by_doc(rankings)
    scores = {
        doc_id: sum(1.0 / (k + rank) for rank in doc_ranks.values() if rank is not None)
        for doc_id, doc_ranks in ranks.items()
    }
    return _in_order(scores, ranks)


def min_max_normalize(scores: Sequence[float]) -> list[float]:
    """Scores mapped onto [0, 1] by their own min and max; equal scores (or a single one) all become 1."""
    if not scores:
        return []
    low, high = min(scores), max(scores)
    if high == low:
        return [1.0] * len(scores)
    return [(score - low) / (high - low) for score in scores]


def weighted_score_fusion(rankings: Mapping[str, Ranking], weights: Mapping[str, float]) -> list[Fused]:
    """Score = sum over retrievers of weight * min-max normalised score; a doc missing from a list gets 0."""
    missing = sorted(set(rankings) - set(weights))
    if missing:
        raise ValueError(f"no fusion weight for retriever(s) {', '.join(missing)}")
    ranks = ranks_by_doc(rankings)
    scores = dict.fromkeys(ranks, 0.0)
    for name in sorted(rankings):
        ranking = rankings[name]
        normalized = min_max_normalize([score for _, score in ranking])
        for (doc_id, _), value in zip(ranking, normalized, strict=True):
            scores[doc_id] += weights[name] * value
    return _in_order(scores, ranks)


def with_paper_prior(
    fused: Iterable[Fused], paper_of: Callable[[int], int], paper_scores: Mapping[int, float], weight: float
) -> list[Fused]:
    """Each result's score plus `weight` times its paper's score, min-max normalised over the papers.

    A passage is more likely the answer when its whole paper is about the question: a paraphrase often
    matches a paper's abstract and its passages as a whole better than any single passage.
    """
    fused = list(fused)
    if not paper_scores or weight == 0:
        return fused
    normalized = dict(zip(paper_scores, min_max_normalize(list(paper_scores.values())), strict=True))
    scores = {r.doc_id: r.score + weight * normalized.get(paper_of(r.doc_id), 0.0) for r in fused}
    ranks = {r.doc_id: r.ranks for r in fused}
    return _in_order(scores, ranks)


def single_ranking(name: str, ranking: Ranking, names: Iterable[str] = ()) -> list[Fused]:
    """One retriever's list as fused results, keeping its own scores (nothing to fuse them with)."""
    all_names = sorted({name, *names})
    results = []
    for rank, (doc_id, score) in enumerate(ranking, start=1):
        ranks: dict[str, int | None] = dict.fromkeys(all_names)
        ranks[name] = rank
        results.append(Fused(doc_id, score, ranks))
    return results


def diversify(
    fused: Iterable[Fused],
    k: int,
    paper_of: Callable[[int], object],
    section_of: Callable[[int], object],
    pages_of: Callable[[int], Iterable[int]],
    per_paper: int = 0,
    per_section: int = 0,
    per_page: int = 1,
) -> list[Fused]:
    """The first `k` results, in order, skipping any that would exceed a cap (0 = no cap): results per
    paper, per (paper, section), and per (paper, page), where a chunk counts on every page it spans.

    Results are cited by page, so a second chunk on a page already shown (often its overlapping
    neighbour) tells the reader nothing new; skipping it lets another page or paper in.
    """
    taken: list[Fused] = []
    paper_counts: dict[object, int] = {}
    section_counts: dict[tuple[object, object], int] = {}
    page_counts: dict[tuple[object, int], int] = {}
    for result in fused:
        if len(taken) >= k:
            break
        paper = paper_of(result.doc_id)
        section = (paper, section_of(result.doc_id))
        pages = [(paper, page) for page in pages_of(result.doc_id)]
        if per_paper and paper_counts.get(paper, 0) >= per_paper:
            continue
        if per_section and section_counts.get(section, 0) >= per_section:
            continue
        if per_page and any(page_counts.get(page, 0) >= per_page for page in pages):
            continue
        paper_counts[paper] = paper_counts.get(paper, 0) + 1
        section_counts[section] = section_counts.get(section, 0) + 1
        for page in pages:
            page_counts[page] = page_counts.get(page, 0) + 1
        taken.append(result)
    return taken
