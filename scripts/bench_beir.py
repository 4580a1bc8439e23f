"""Run eval-beir on BEIR datasets and print our bm25 / dense / hybrid next to the published numbers.

    python scripts/bench_beir.py --data /work/shared/beir-scifact --data /work/shared/beir-nfcorpus \
        --data /work/shared/beir-arguana [--json] [--record]

Published nDCG@10 are BEIR's BM25 (Elasticsearch) and all-MiniLM-L6-v2 (sentence-transformers); the
goal is a hybrid above the better of the two. Timings are wall-clock on this machine, embedding
included only when the corpus vectors were not cached yet.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from builder.offline import load_onnxruntime_first, use_offline_environment

use_offline_environment()
load_onnxruntime_first()

from measurements import add_record_option, begin  # noqa: E402

from builder.evaluation.beir import MODES, EvalSettings, evaluate_dataset, load_dataset  # noqa: E402
from builder.paths import DEFAULT_CACHE  # noqa: E402

# Published nDCG@10 on the test split: (BM25, all-MiniLM-L6-v2).
PUBLISHED_NDCG10 = {"scifact": (0.679, 0.645), "nfcorpus": (0.322, 0.316), "arguana": (0.397, 0.502)}


def published_for(dataset: str) -> tuple[float, float] | None:
    """Matched on the folder name, so `beir-scifact` and `scifact` both find SciFact."""
    matches = [numbers for name, numbers in PUBLISHED_NDCG10.items() if name in dataset.lower()]
    return matches[0] if len(matches) == 1 else None


def summary(result) -> dict:
    timings = result.timings
    published = published_for(result.dataset)
    return {
        "dataset": result.dataset,
        "queries": result.queries,
        "docs": result.docs,
        "scores": result.scores,
        "published_ndcg@10": dict(zip(("bm25", "dense"), published, strict=True)) if published else None,
        "embed_docs_per_s": timings.docs_embedded / timings.embed_docs_s if timings.embed_docs_s else None,
        "encode_queries_per_s": result.queries / timings.encode_queries_s
        if timings.encode_queries_s
        else None,
        "search_queries_per_s": {
            mode: result.queries / seconds for mode, seconds in timings.search_s.items()
        },
        "build_site_s": timings.build_site_s,
        "settings": result.settings,
    }


def _number(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def format_rows(rows: list[dict]) -> str:
    header = f"{'dataset':<16}{'mode':<8}{'nDCG@10':>9}{'published':>11}{'R@100':>8}{'queries/s':>11}"
    lines = [header, "-" * len(header)]
    for row in rows:
        published = row["published_ndcg@10"] or {}
        for mode in MODES:
            scores = row["scores"][mode]
            lines.append(
                f"{row['dataset']:<16}{mode:<8}{scores['ndcg@10']:>9.3f}{_number(published.get(mode)):>11}"
                f"{scores['recall@100']:>8.3f}{row['search_queries_per_s'][mode]:>11.1f}"
            )
        best = max(published.values()) if published else None
        verdict = (
            "" if best is None else ("  beats" if row["scores"]["hybrid"]["ndcg@10"] > best else "  below")
        )
        lines.append(
            f"{'':<16}{row['queries']} queries, {row['docs']} docs; best published {_number(best)}{verdict}; "
            f"embed {_number(row['embed_docs_per_s'], 1)} docs/s (- = cached), "
            f"encode {_number(row['encode_queries_per_s'], 1)} queries/s, site build {row['build_site_s']:.1f} s"
        )
    lines.append(f"settings: {json.dumps(rows[0]['settings'])}" if rows else "no datasets")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, action="append", required=True, metavar="DIR")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, metavar="DIR")
    parser.add_argument("--query-encoder", choices=("browser", "model"), default="browser")
    parser.add_argument("--fusion", choices=("weighted", "rrf"))
    parser.add_argument("--dense-weight", type=float)
    parser.add_argument("--max-queries", type=int)
    parser.add_argument("--json", action="store_true")
    add_record_option(parser)
    args = parser.parse_args(argv)
    bench_run = begin("beir", argv)
    settings = EvalSettings(
        fusion=args.fusion,
        dense_weight=args.dense_weight,
        query_encoder=args.query_encoder,
        max_queries=args.max_queries,
    )
    rows = []
    for data_dir in args.data:
        result = evaluate_dataset(
            load_dataset(data_dir), settings, args.cache, log=lambda message: print(message, file=sys.stderr)
        )
        rows.append(summary(result))
    print(json.dumps(rows, indent=2) if args.json else format_rows(rows))
    if args.record:
        bench_run.save(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
