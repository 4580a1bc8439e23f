"""Where the low-match note's floors (readingroom_core/weakmatch.py) come from, and how they do.

For every answerable question of the dev, extra, tune and report sets, and every query of
tests/data/questions-weak.jsonl (unrelated common words, topics the list does not hold, nonsense), prints
the two sides weakmatch weighs: the best cosine of the top 20 and the keyword coverage of the best
passage, with the query's term count; then the false alarms (answerable questions called weak: the goal
is none) and the weak share of each group of the weak set.

    python scripts/calibrate_weak_match.py --site SITE [--record]
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

from builder.paths import DEV_QUESTIONS, REPO_ROOT  # noqa: E402
from builder.query_encoder import OnnxQueryEncoder  # noqa: E402
from readingroom_core.browser import open_folder  # noqa: E402
from readingroom_core.options import SearchOptions  # noqa: E402
from readingroom_core.querysyntax import embedding_text, parse_query  # noqa: E402
from readingroom_core.weakmatch import keyword_coverage, weak_match  # noqa: E402

DATA = REPO_ROOT / "tests" / "data"
ANSWERABLE = [DEV_QUESTIONS, *(DATA / f"questions-{name}.jsonl" for name in ("extra", "tune", "report"))]
WEAK = DATA / "questions-weak.jsonl"


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def sides(site, vectors, queries: list[str]) -> list[dict]:
    """Per query: best cosine, keyword coverage, term count and the verdict, as the page gets them."""
    engine = site.engine
    found = []
    for query, vector in zip(queries, vectors, strict=True):
        hits = engine.search(query, [float(x) for x in vector], SearchOptions(k=20))
        terms = parse_query(embedding_text(query)).terms
        found.append(
            {
                "query": query,
                "cosine": round(
                    max((h.similarity for h in hits if h.similarity is not None), default=0.0), 3
                ),
                "coverage": round(keyword_coverage(hits, terms, engine.doc_freq, engine.n_chunks), 2),
                "terms": len(terms),
                "weak": weak_match(hits, terms, engine.doc_freq, engine.n_chunks),
            }
        )
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--site", type=Path, required=True)
    add_record_option(parser)
    args = parser.parse_args(argv)
    bench_run = begin("weak", argv)
    site = open_folder(args.site)
    encoder = OnnxQueryEncoder.from_site(args.site, site.manifest)
    groups: dict[str, list[str]] = {"answerable": []}
    for path in ANSWERABLE:
        groups["answerable"] += [row["query"] for row in rows(path) if row["relevant"]]
    for row in rows(WEAK):
        groups.setdefault(row["group"], []).append(row["query"])
    results = {}
    for name, queries in groups.items():
        found = sides(site, encoder.encode([embedding_text(q) for q in queries]), queries)
        weak = [row["query"] for row in found if row["weak"]]
        print(f"== {name}: {len(weak)}/{len(found)} called weak")
        for row in sorted(found, key=lambda row: row["cosine"])[: 12 if name == "answerable" else len(found)]:
            print(
                f"  {'WEAK' if row['weak'] else '    '} cos {row['cosine']:.3f} cov {row['coverage']:.2f} "
                f"terms {row['terms']:2d}  {row['query'][:70]}"
            )
        missed = [row["query"] for row in found if not row["weak"]]
        results[name] = {
            "queries": len(found),
            "called weak": len(weak),
            "which" if name == "answerable" else "not called weak": "; ".join(
                weak if name == "answerable" else missed
            )
            or "none",
        }
    if args.record:
        bench_run.save(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
