"""Navigational queries: does a query that names a paper put that paper first?

    python scripts/bench_navigation.py --site site [--record]

Runs every query of each navigational set (tests/data/questions-navigational*.jsonl: the set the rules
were written with, the names written from the list's citation sentences, tuned on, and the held-out set)
through the engine in hybrid mode (what a visitor gets once semantic search is up) and keyword mode
(before it), and reports top-1 (the first result's paper is the one named) per form of query, and how
many id queries show that paper's passages alone. It also counts the questions of the other sets (dev,
extra, tune, report) that the engine reads as naming a paper: none should be, since they ask about
content.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from builder.offline import load_onnxruntime_first, use_offline_environment

use_offline_environment()
load_onnxruntime_first()

from measurements import add_record_option, begin  # noqa: E402

from builder.paths import DEV_QUESTIONS, REPO_ROOT  # noqa: E402
from builder.query_encoder import OnnxQueryEncoder  # noqa: E402
from readingroom_core.browser import open_folder  # noqa: E402
from readingroom_core.navigation import PaperFinder  # noqa: E402
from readingroom_core.options import SearchOptions  # noqa: E402
from readingroom_core.querysyntax import embedding_text  # noqa: E402

DATA = REPO_ROOT / "tests" / "data"
NAVIGATIONAL_SETS = {
    "rules": DATA / "questions-navigational.jsonl",
    "names": DATA / "questions-navigational-names.jsonl",
    "held-out": DATA / "questions-navigational-heldout.jsonl",
}
OTHER_SETS = {
    "dev": DEV_QUESTIONS,
    **{name: DATA / f"questions-{name}.jsonl" for name in ("extra", "tune", "report")},
}


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def top_one(site_dir: Path, questions: list[dict]) -> dict:
    """Top-1 per mode and per form of query, and the queries that missed."""
    site = open_folder(site_dir)
    encoder = OnnxQueryEncoder.from_site(site_dir, site.manifest)
    vectors = encoder.encode([embedding_text(row["query"]) for row in questions])
    results: dict = {}
    for mode in ("hybrid", "bm25"):
        right: Counter[str] = Counter()
        misses = []
        id_only = 0  # id queries whose every hit is the named paper's (a bare id shows no other paper)
        for row, vector in zip(questions, vectors, strict=True):
            hits = site.engine.search(
                row["query"], [float(x) for x in vector], SearchOptions(k=10, mode=mode)
            )
            gold = row["relevant"][0]["arxiv_id"]
            id_only += row["form"] == "id" and bool(hits) and all(hit.arxiv_id == gold for hit in hits)
            if hits and hits[0].arxiv_id == gold:
                right[row["form"]] += 1
            else:
                misses.append(
                    f"{row['id']} {row['query']!r}: {hits[0].arxiv_id if hits else None} (want {gold})"
                )
        forms = Counter(row["form"] for row in questions)
        results[mode] = {
            "top1": round(sum(right.values()) / len(questions), 3),
            "queries": len(questions),
            "per_form": {form: f"{right[form]}/{count}" for form, count in sorted(forms.items())},
            "id queries showing only that paper": f"{id_only}/{forms['id']}",
            "misses": "; ".join(misses) or "none",
        }
    return results


def false_navigation(site_dir: Path) -> dict:
    """How many content questions of each other set name a paper (goal: none)."""
    finder = PaperFinder(open_folder(site_dir).engine.papers)
    counts = {}
    for name, path in OTHER_SETS.items():
        if path.exists():
            questions = rows(path)
            named = [row["id"] for row in questions if finder.find(embedding_text(row["query"]))]
            counts[name] = {
                "questions": len(questions),
                "named a paper": len(named),
                "which": ", ".join(named),
            }
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--site", type=Path, required=True, help="a built site (the whole mirror)")
    add_record_option(parser)
    args = parser.parse_args(argv)
    bench_run = begin("navigation", argv)
    results = {
        **{
            f"top-1 {name}": top_one(args.site, rows(path))
            for name, path in NAVIGATIONAL_SETS.items()
            if path.exists()
        },
        "other sets": false_navigation(args.site),
    }
    print(json.dumps(results, indent=1))
    if args.record:
        bench_run.save(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
