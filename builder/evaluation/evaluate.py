"""`query` and `eval` over a built site, with the browser's own encoder and search core.

Queries are embedded by the shipped ONNX encoder through onnxruntime and searched by
`readingroom_core`, exactly what a visitor's browser runs, so these numbers are the product's.

Relevance for dev questions (`{"id", "query", "relevant": [{"arxiv_id", "pages"}]}`):
- page level: a retrieved chunk is relevant if it comes from a gold paper and its page span covers a
  gold page; each gold (paper, page) is credited once, to the first chunk that covers it, so a
  second chunk on an already found page earns nothing;
- paper level: the ranked chunks become a ranked list of papers (first occurrence), and a paper is
  relevant if it is a gold paper.
recall@k is the share of questions with at least one relevant chunk (paper) in the top k, the reading
of "a chunk counts" that the seed designs' reference figures use; nDCG@10 credits each gold page
(paper) once against an ideal that finds them all.
Questions with an empty `relevant` list cannot be answered from the corpus; they are left out of the
metrics and reported by how confidently the system answered them anyway (top fused score).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from builder.evaluation import metrics
from builder.query_encoder import OnnxQueryEncoder
from readingroom_core.browser import open_folder
from readingroom_core.engine import Hit, SearchEngine
from readingroom_core.options import SearchOptions
from readingroom_core.querysyntax import embedding_text

MODES = ("hybrid", "bm25", "dense")
CUTOFFS = (1, 5, 10, 20)


class QuestionsFileError(ValueError):
    """A questions file line that is not a question; the message names file and line."""


@dataclass(frozen=True)
class Question:
    id: str
    query: str
    gold_pages: frozenset[tuple[str, int]]  # (arxiv_id, page)
    kind: str = ""  # factual, paraphrase, keyword, ...: metrics are also reported per kind

    @property
    def gold_papers(self) -> frozenset[str]:
        return frozenset(paper for paper, _ in self.gold_pages)


def load_questions(path: Path) -> list[Question]:
    questions = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            gold = frozenset((r["arxiv_id"], int(p)) for r in row["relevant"] for p in r["pages"])
            questions.append(Question(str(row["id"]), row["query"], gold, str(row.get("kind") or "")))
        except (ValueError, KeyError, TypeError) as exc:
            raise QuestionsFileError(
                f"{path}:{number}: not a question line ({exc}); expected "
                '{"id", "query", "relevant": [{"arxiv_id", "pages": [..]}]}'
            ) from exc
    return questions


def top_chunk_ids(site_dir: Path, queries: Sequence[str], options: SearchOptions) -> list[list[str]]:
    """Each query's ranked chunk ids as `python -m builder query` finds them: the browser must agree."""
    site = open_folder(site_dir)
    vectors = OnnxQueryEncoder.from_site(site_dir, site.manifest).encode([embedding_text(q) for q in queries])
    return [
        [hit.chunk_id for hit in site.engine.search(query, vector, options)]
        for query, vector in zip(queries, vectors, strict=True)
    ]


def page_ranking(hits: Sequence[Hit], question: Question) -> list[str]:
    """Chunks as item ids for the metrics: a credited gold page, or a unique miss."""
    credited: set[tuple[str, int]] = set()
    items = []
    for rank, hit in enumerate(hits):
        covered = [
            (paper, page)
            for paper, page in sorted(question.gold_pages)
            if paper == hit.arxiv_id
            and hit.page_start <= page <= hit.page_end
            and (paper, page) not in credited
        ]
        if covered:
            credited.add(covered[0])
            items.append(f"{covered[0][0]} p.{covered[0][1]}")
        else:
            items.append(f"miss {rank}")
    return items


def paper_ranking(hits: Sequence[Hit]) -> list[str]:
    return list(dict.fromkeys(hit.arxiv_id for hit in hits))


@dataclass
class ModeScores:
    page: list[dict[str, float]] = field(default_factory=list)
    paper: list[dict[str, float]] = field(default_factory=list)
    kinds: list[str] = field(default_factory=list)  # the kind of each `page` row's question
    negative_top_scores: list[float] = field(default_factory=list)


def score_ranking(ranked: list[str], relevant: set[str]) -> dict[str, float]:
    qrels = dict.fromkeys(relevant, 1)
    scores = {f"recall@{k}": metrics.success_at_k(ranked, qrels, k) for k in CUTOFFS}
    scores["mrr"] = metrics.mrr_at_k(ranked, qrels, max(CUTOFFS))
    scores["ndcg@10"] = metrics.ndcg_at_k(ranked, qrels, 10)
    return scores


def evaluate(
    engine: SearchEngine, encode, questions: Sequence[Question], options: SearchOptions | None = None
) -> dict:
    """Metrics per level and mode, averaged over answerable questions."""
    base = options or SearchOptions()
    vectors = encode([embedding_text(q.query) for q in questions])
    results = {mode: ModeScores() for mode in MODES}
    depth = max(CUTOFFS)
    for question, vector in zip(questions, vectors, strict=True):
        for mode in MODES:
            hits = engine.search(question.query, vector, replace(base, k=depth, mode=mode))
            scores = results[mode]
            if not question.gold_pages:
                scores.negative_top_scores.append(hits[0].score if hits else 0.0)
                continue
            relevant_pages = {f"{paper} p.{page}" for paper, page in question.gold_pages}
            scores.page.append(score_ranking(page_ranking(hits, question), relevant_pages))
            scores.kinds.append(question.kind)
            scores.paper.append(score_ranking(paper_ranking(hits), set(question.gold_papers)))
    return summarise(results, len([q for q in questions if q.gold_pages]))


def _mean(rows: list[dict[str, float]]) -> dict[str, float]:
    return {key: round(statistics.fmean(r[key] for r in rows), 4) for key in rows[0]} if rows else {}


def summarise(results: dict[str, ModeScores], answerable: int) -> dict:
    summary: dict = {"questions": answerable, "page": {}, "paper": {}, "page_by_kind": {}, "negatives": {}}
    for mode, scores in results.items():
        summary["page"][mode] = _mean(scores.page)
        summary["paper"][mode] = _mean(scores.paper)
        summary["page_by_kind"][mode] = {
            kind: {"questions": len(rows), **_mean(rows)}
            for kind in sorted(set(scores.kinds))
            if (rows := [row for row, k in zip(scores.page, scores.kinds, strict=True) if k == kind])
        }
        if scores.negative_top_scores:
            tops = sorted(scores.negative_top_scores)
            summary["negatives"][mode] = {
                "count": len(tops),
                "top_score_min": round(tops[0], 4),
                "top_score_median": round(statistics.median(tops), 4),
                "top_score_max": round(tops[-1], 4),
            }
    return summary


def format_table(summary: dict) -> str:
    columns = [*(f"recall@{k}" for k in CUTOFFS), "mrr", "ndcg@10"]
    lines = [f"{summary['questions']} answerable questions"]
    for level in ("page", "paper"):
        lines.append("")
        lines.append(f"{level + ' level':14s}" + "".join(f"{c:>10s}" for c in columns))
        for mode in MODES:
            row = summary[level][mode]
            lines.append(f"{mode:14s}" + "".join(f"{row.get(c, 0.0):>10.3f}" for c in columns))
    kinds = summary.get("page_by_kind", {}).get("hybrid", {})
    if len(kinds) > 1:
        lines.append("")
        lines.append(
            f"{'hybrid, page level, by kind':30s}"
            + "".join(f"{c:>10s}" for c in ("recall@10", "mrr", "ndcg@10"))
        )
        for kind, row in kinds.items():
            label = f"{kind or '(no kind)'} ({row['questions']})"
            lines.append(
                f"{label:30s}" + "".join(f"{row[c]:>10.3f}" for c in ("recall@10", "mrr", "ndcg@10"))
            )
    for mode, negatives in summary["negatives"].items():
        lines.append(
            f"unanswerable ({negatives['count']}), {mode} top score: min {negatives['top_score_min']}, "
            f"median {negatives['top_score_median']}, max {negatives['top_score_max']}"
        )
    return "\n".join(lines)
