"""Ask's sources: does the evidence a model is given hold the page that answers the question?

    python scripts/bench_ask_sources.py --site site [--record] [--caps 16,24,32,40,48]

Runs every answerable question of the question sets through `readingroom_core.answers.select_evidence`
(what the CLI and the browser's worker run) at prompt budgets of 4,500, 16,000 and 64,000 tokens, and
reports per set the share whose sources hold a gold page, and for questions with several gold papers
the share whose sources hold every one. dev, extra and tune are the sets the candidate cap
(`sourcing.MAX_CANDIDATES`) was chosen on; report is not tuned on. `--caps` measures other caps on the
tuning sets (how the cap was chosen); `--no-parts` turns off the search for a question's parts.
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
from readingroom_core import answers, sourcing  # noqa: E402
from readingroom_core.browser import open_folder  # noqa: E402
from readingroom_core.querysyntax import embedding_text  # noqa: E402

DATA = REPO_ROOT / "tests" / "data"
TUNE_SETS = {
    "dev": DEV_QUESTIONS,
    "extra": DATA / "questions-extra.jsonl",
    "tune": DATA / "questions-tune.jsonl",
}
REPORT_SETS = {"report": DATA / "questions-report.jsonl"}
BUDGETS = (4500, 16000, 64000)


def rows(path: Path) -> list[dict]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [row for row in map(json.loads, filter(str.strip, lines)) if row.get("relevant")]


def gold_pages(row: dict) -> set[tuple[str, int]]:
    return {(gold["arxiv_id"], page) for gold in row["relevant"] for page in gold["pages"]}


def measure(site, encoder, questions: list[dict], budgets=BUDGETS) -> dict:
    """Per budget: the share with a gold page among the sources, the multi-paper share with every gold
    paper, the mean source count, and the questions that missed."""
    vectors = encoder.encode([embedding_text(answers.retrieval_query(row["query"])) for row in questions])
    results = {}
    for budget in budgets:
        page_hits, every_paper, multi, counts, misses = 0, 0, 0, [], []
        for row, vector in zip(questions, vectors, strict=True):
            found = answers.select_evidence(site.engine, row["query"], [float(x) for x in vector], budget)
            cited = {(s.arxiv_id, p) for s in found.sources for p in range(s.page_start, s.page_end + 1)}
            counts.append(len(found.sources))
            hit = bool(cited & gold_pages(row))
            page_hits += hit
            if not hit:
                misses.append(row["id"])
            papers = {gold["arxiv_id"] for gold in row["relevant"]}
            if len(papers) > 1:
                multi += 1
                every = papers <= {s.arxiv_id for s in found.sources}
                every_paper += every
                if not every:
                    misses.append(f"{row['id']} (a paper)")
        results[str(budget)] = {
            "questions": len(questions),
            "gold page": round(page_hits / len(questions), 3),
            "multi-paper questions": multi,
            "every gold paper": round(every_paper / multi, 3) if multi else None,
            "mean sources": round(sum(counts) / len(counts), 1),
            "missed": ", ".join(misses) or "none",
        }
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--site", type=Path, required=True, help="a built site (the whole mirror)")
    parser.add_argument("--caps", help="comma-separated candidate caps to measure on the tuning sets")
    parser.add_argument("--no-parts", action="store_true", help="search the whole question only")
    add_record_option(parser)
    args = parser.parse_args(argv)
    bench_run = begin("ask-sources", argv)
    site = open_folder(args.site)
    encoder = OnnxQueryEncoder.from_site(args.site, site.manifest)
    if args.no_parts:
        sourcing.PART_ROUNDS = 0
    tuning = [row for path in TUNE_SETS.values() if path.exists() for row in rows(path)]
    results: dict = {"cap": sourcing.MAX_CANDIDATES, "per-paper cap": sourcing.MAX_PER_PAPER}
    if args.caps:
        chosen = sourcing.MAX_CANDIDATES
        for cap in map(int, args.caps.split(",")):
            sourcing.MAX_CANDIDATES = cap
            results[f"tuning sets, cap {cap}"] = measure(site, encoder, tuning, BUDGETS[1:])
        sourcing.MAX_CANDIDATES = chosen
    results["tuning sets (dev, extra, tune)"] = measure(site, encoder, tuning)
    for name, path in REPORT_SETS.items():
        results[f"{name} (not tuned on)"] = measure(site, encoder, rows(path))
    print(json.dumps(results, indent=1))
    if args.record:
        bench_run.save(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
