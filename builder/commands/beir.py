"""`eval-beir`: the site's search scored on a BEIR dataset (builder/evaluation/beir.py), as a table or
JSON."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from builder.evaluation.beir import (
    DEFAULT_CANDIDATES,
    MODES,
    QUERY_ENCODERS,
    BeirResult,
    EvalSettings,
    evaluate_dataset,
    load_dataset,
)
from builder.paths import DEFAULT_CACHE


def add_beir_command(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "eval-beir",
        help="score the site's search (bm25, dense, hybrid) on a BEIR dataset",
        description="Index a BEIR dataset (corpus.jsonl, queries.jsonl, qrels/<split>.tsv) in memory with "
        "the site's own pipeline and report nDCG@10 and Recall@100 for bm25, dense and hybrid search. "
        "Corpus embeddings are cached, so reruns are fast.",
    )
    parser.add_argument("--data", type=Path, required=True, metavar="DIR", help="the BEIR dataset folder")
    parser.add_argument("--split", default="test", help="which qrels/<split>.tsv to score (default: test)")
    parser.add_argument(
        "--cache",
        type=Path,
        default=DEFAULT_CACHE,
        metavar="DIR",
        help=f"embeddings go under DIR/beir, the query encoder under DIR/encoder (default: {DEFAULT_CACHE})",
    )
    parser.add_argument(
        "--candidates",
        type=int,
        default=DEFAULT_CANDIDATES,
        help=f"results per retriever before fusion (default: {DEFAULT_CANDIDATES})",
    )
    parser.add_argument("--fusion", choices=("weighted", "rrf"), help="default: the site's")
    parser.add_argument(
        "--dense-weight", type=float, help="weighted fusion's dense share (default: the site's)"
    )
    parser.add_argument(
        "--query-encoder",
        choices=QUERY_ENCODERS,
        default="browser",
        help="browser: the int8 ONNX encoder visitors run (default); model: sentence-transformers in float",
    )
    parser.add_argument(
        "--keep-identical-ids",
        action="store_true",
        help="keep a hit whose doc id equals the query id (BEIR drops it; it matters for ArguAna)",
    )
    parser.add_argument("--max-queries", type=int, help="score only the first N queries (quick checks)")
    parser.add_argument("--json", action="store_true", help="print the scores as JSON")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars (they go to stderr)")
    return parser


def settings_from_args(args: argparse.Namespace) -> EvalSettings:
    return EvalSettings(
        candidates=args.candidates,
        fusion=args.fusion,
        dense_weight=args.dense_weight,
        ignore_identical_ids=not args.keep_identical_ids,
        query_encoder=args.query_encoder,
        max_queries=args.max_queries,
    )


def format_table(result: BeirResult) -> str:
    lines = [
        f"{result.dataset}: {result.queries} queries over {result.docs} docs",
        "mode     nDCG@10  Recall@100",
    ]
    for mode in MODES:
        scores = result.scores[mode]
        lines.append(f"{mode:<8} {scores['ndcg@10']:>7.4f}  {scores['recall@100']:>10.4f}")
    timings = result.timings
    searches = ", ".join(
        f"{mode} {result.queries / seconds:.1f}" for mode, seconds in timings.search_s.items()
    )
    embedded = (
        f"embedded {timings.docs_embedded} docs in {timings.embed_docs_s:.1f} s, "
        if timings.docs_embedded
        else ""
    )
    lines.append(
        f"time: {embedded}site built in {timings.build_site_s:.1f} s, queries encoded in "
        f"{timings.encode_queries_s:.1f} s; queries/s {searches}"
    )
    settings = ", ".join(f"{key}={value}" for key, value in result.settings.items())
    lines.append(f"settings: {settings}")
    return "\n".join(lines)


def run_beir_command(args: argparse.Namespace) -> int:
    try:
        dataset = load_dataset(args.data, args.split)
    except (FileNotFoundError, ValueError) as error:
        print(f"eval-beir: {error}", file=sys.stderr)
        return 2
    progress = not args.no_progress and not args.json
    result = evaluate_dataset(
        dataset,
        settings_from_args(args),
        cache_dir=args.cache,
        progress=progress,
        log=lambda message: print(message, file=sys.stderr) if progress else None,
    )
    print(json.dumps(result.scores, indent=2) if args.json else format_table(result))
    return 0
