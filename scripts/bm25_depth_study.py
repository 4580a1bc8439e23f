"""Why the ranged BM25 loses top-10s on a large list, and what would win them back.

For each question it reads every posting of every query term once (impact order, as the site stores
them), then replays bounded readings in memory: the first `prefix` postings per term, optionally with an
unread term's expected weight added to each candidate that did not meet it in the prefix (the chance the
candidate holds the term times the unread tail's mean weight). It reports the top-10 overlap with the
exhaustive ranking, the postings read, and how many missed passages were candidates at all and what
share of their score the prefix had seen: passages that are candidates but lack part of their score call
for exact rescoring of the best candidates, not a deeper prefix. The last rows replay that rescoring (what
`readers.postings.TermIndex.search` does with the forward file): the best `rescore` candidates by their prefix
score get their full scores.

A large list can be stood in for by a small one read with a prefix cut to the same share of its passages:
2,048 of 84,510 (1,000 papers) is 233 of the 112-paper site's 9,601 (its top-10 overlap without
rescoring, 0.606 on the tuning questions, is the 1,000-paper site's 0.607); the default 4,096 is 466 at
1,000 papers and 46 at 10,000.

    python scripts/bm25_depth_study.py --site site --questions tests/data/questions-tune.jsonl \
        [--prefixes 233] [--rescores 100 400]
"""

from __future__ import annotations

import argparse
import heapq
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "wasm")]

from builder.evaluation.evaluate import load_questions  # noqa: E402
from readingroom_core.analysis import analyze  # noqa: E402
from readingroom_core.browser import open_folder  # noqa: E402

K = 10
PREFIXES = (1024, 2048, 4096, 8192)
RESCORES = (50, 100, 200, 400, 800)
TAIL_SHARES = (0.0, 1.0)  # 0: today's reading; 1: the unread tail's expected weight added
Weights = list[tuple[list[int], list[float]]]


def top(scores: dict[int, float]) -> set[int]:
    return {doc for doc, _ in heapq.nlargest(K, scores.items(), key=lambda pair: (pair[1], -pair[0]))}


def bounded(terms: Weights, n_docs: int, prefix: int, tail_share: float) -> tuple[dict[int, float], int]:
    """Scores over each term's first `prefix` postings (0: all), and the postings read."""
    scores: dict[int, float] = {}
    read, tails = 0, []
    for doc_ids, weights in terms:
        count = len(doc_ids) if prefix <= 0 else min(prefix, len(doc_ids))
        read += count
        for doc, weight in zip(doc_ids[:count], weights[:count], strict=True):
            scores[doc] = scores.get(doc, 0.0) + weight
        if tail_share and count < len(doc_ids):
            chance = (len(doc_ids) - count) / (n_docs - count)
            tails.append((set(doc_ids[:count]), tail_share * chance * statistics.fmean(weights[count:])))
    for doc in scores:
        scores[doc] += sum(expected for seen, expected in tails if doc not in seen)
    return scores, read


def rescored(scores: dict[int, float], truth: dict[int, float], count: int) -> dict[int, float]:
    """The best `count` by their prefix scores with their full ones."""
    best = heapq.nlargest(count, scores.items(), key=lambda pair: (pair[1], -pair[0]))
    return scores | {doc: truth[doc] for doc, _ in best}


def study(
    terms_by_question: list[Weights], n_docs: int, prefixes: list[int], rescores: list[int]
) -> list[dict]:
    truths = [bounded(terms, n_docs, 0, 0.0)[0] for terms in terms_by_question]
    rows = []
    for prefix in prefixes:
        for share in TAIL_SHARES:
            overlaps, reads, missed, candidates, seen_shares = [], [], 0, 0, []
            for terms, truth in zip(terms_by_question, truths, strict=True):
                scores, read = bounded(terms, n_docs, prefix, share)
                expected, found = top(truth), top(scores)
                overlaps.append(len(expected & found) / len(expected) if expected else 1.0)
                reads.append(read)
                if share:
                    continue
                for doc in expected - found:
                    missed += 1
                    candidates += doc in scores
                    seen_shares.append(scores.get(doc, 0.0) / truth[doc])
            row = {
                "prefix": prefix,
                "tail_share": share,
                "overlap@10": round(statistics.mean(overlaps), 3),
                "postings_median": statistics.median(reads),
            }
            if not share:
                row |= {"missed": missed, "missed_that_were_candidates": candidates}
                row["missed_score_share_read_median"] = round(statistics.median(seen_shares or [1.0]), 3)
            rows.append(row)
        for count in rescores:
            overlaps = []
            for terms, truth in zip(terms_by_question, truths, strict=True):
                found = top(rescored(bounded(terms, n_docs, prefix, 0.0)[0], truth, count))
                overlaps.append(len(top(truth) & found) / len(top(truth)) if truth else 1.0)
            rows.append(
                {"prefix": prefix, "rescore": count, "overlap@10": round(statistics.mean(overlaps), 3)}
            )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--site", type=Path, required=True)
    parser.add_argument("--questions", type=Path, action="append", required=True)
    parser.add_argument(
        "--prefixes", type=int, nargs="+", default=list(PREFIXES), help="postings read per term"
    )
    parser.add_argument(
        "--rescores", type=int, nargs="+", default=list(RESCORES), help="candidates rescored exactly"
    )
    args = parser.parse_args()
    index = open_folder(args.site).engine.keyword_index
    report = {}
    for path in args.questions:
        terms_by_question = []
        for question in load_questions(path):
            terms = list(dict.fromkeys(analyze(question.query)))
            terms_by_question.append([found for found in index.weights(terms, 0) if found])
        report[path.name] = {
            "chunks": index.n_docs,
            "rows": study(terms_by_question, index.n_docs, args.prefixes, args.rescores),
        }
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
