"""Ranking metrics as BEIR reports them through pytrec_eval (trec_eval definitions).

A run is one ranked list of doc ids per query, best first; qrels map each query to {doc id: grade}.
Grades above 0 are relevant; a retrieved doc missing from the qrels has grade 0. nDCG uses the grade
itself as gain (trec_eval's linear gain, not 2**grade - 1) with a log2(rank + 1) discount, and the ideal
ranking orders all judged relevant docs by grade, so relevant docs never retrieved still count against
the score. A doc id repeated in a ranked list counts only at its first position.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

Qrels = Mapping[str, float]  # doc id -> grade, for one query


def _first_k(ranked: Iterable[str], k: int) -> list[str]:
    """The first `k` distinct doc ids, in order."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    seen: dict[str, None] = {}
    for doc_id in ranked:
        if len(seen) == k:
            break
        seen.setdefault(doc_id)
    return list(seen)


def dcg(gains: Iterable[float]) -> float:
    """Discounted cumulative gain of gains listed in rank order (rank 1 first)."""
    return sum(gain / math.log2(rank + 1) for rank, gain in enumerate(gains, start=1))


def ndcg_at_k(ranked: Sequence[str], qrels: Qrels, k: int) -> float:
    """DCG of the top `k` over the DCG of the best possible top `k`; 0 when nothing is relevant."""
    top = _first_k(ranked, k)
    ideal = dcg(sorted((g for g in qrels.values() if g > 0), reverse=True)[:k])
    if ideal == 0:
        return 0.0
    return dcg(max(qrels.get(doc_id, 0), 0) for doc_id in top) / ideal


def recall_at_k(ranked: Sequence[str], qrels: Qrels, k: int) -> float:
    """Share of the relevant docs found in the top `k`; 0 when nothing is relevant."""
    relevant = {doc_id for doc_id, grade in qrels.items() if grade > 0}
    if not relevant:
        return 0.0
    return len(relevant.intersection(_first_k(ranked, k))) / len(relevant)


def success_at_k(ranked: Sequence[str], qrels: Qrels, k: int) -> float:
    """1 if any relevant doc is in the top `k`, else 0: "did the reader get something useful"."""
    return 1.0 if any(qrels.get(doc_id, 0) > 0 for doc_id in _first_k(ranked, k)) else 0.0


def mrr_at_k(ranked: Sequence[str], qrels: Qrels, k: int) -> float:
    """1 / rank of the first relevant doc in the top `k`, 0 if there is none."""
    for rank, doc_id in enumerate(_first_k(ranked, k), start=1):
        if qrels.get(doc_id, 0) > 0:
            return 1.0 / rank
    return 0.0


METRICS = {"ndcg": ndcg_at_k, "recall": recall_at_k, "mrr": mrr_at_k}


def mean_metric(run: Mapping[str, Sequence[str]], qrels: Mapping[str, Qrels], metric: str, k: int) -> float:
    """`metric`@k averaged over every query in `qrels`; a query the run lacks scores 0.

    Queries without qrels are not scored: nothing says what they should have found.
    """
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {', '.join(METRICS)}, got {metric!r}")
    if not qrels:
        raise ValueError("no queries with qrels to evaluate")
    score = METRICS[metric]
    return sum(score(run.get(query_id, ()), judged, k) for query_id, judged in qrels.items()) / len(qrels)


def evaluate(
    run: Mapping[str, Sequence[str]], qrels: Mapping[str, Qrels], measures: Sequence[tuple[str, int]]
) -> dict[str, float]:
    """{"ndcg@10": ..., "recall@100": ...} for the (metric, k) pairs asked for."""
    return {f"{metric}@{k}": mean_metric(run, qrels, metric, k) for metric, k in measures}
