"""Retrieval quality of a built site over every question set, with and without the paper view.

    python scripts/bench_eval.py --site site [--record]

Runs `python -m builder eval --json` (page- and paper-level Recall@k, MRR, nDCG@10 per mode) on the dev
questions (../shared/eval) and on the extra, tune and report sets (tests/data). Settings are tuned on dev,
extra and tune; report is only ever measured (tests/data/README.md). The paper view is measured on and
off on the three tests/data sets, to show what it adds.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from measurements import add_record_option, begin

from builder.paths import DEV_QUESTIONS, REPO_ROOT

QUESTION_SETS = {
    name: REPO_ROOT / "tests" / "data" / f"questions-{name}.jsonl" for name in ("extra", "tune", "report")
}
WITHOUT_PAPER_VIEW = ["--paper-weight", "0", "--paper-openings", "0"]


def evaluate(site: Path, questions: Path, options: list[str]) -> dict:
    command = [sys.executable, "-m", "builder", "eval", "--site", str(site), "--questions", str(questions)]
    done = subprocess.run([*command, "--json", *options], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--site", type=Path, required=True, help="a built site (the whole mirror)")
    add_record_option(parser)
    args = parser.parse_args(argv)
    bench_run = begin("eval", argv)
    runs = {"dev": (DEV_QUESTIONS, [])}
    for name, path in QUESTION_SETS.items():
        runs[name] = (path, [])
        runs[f"{name} without the paper view"] = (path, WITHOUT_PAPER_VIEW)
    results = {}
    for label, (questions, options) in runs.items():
        print(f"{label} ...", file=sys.stderr, flush=True)
        results[label] = evaluate(args.site, questions, options)
    print(json.dumps(results, indent=1))
    if args.record:
        bench_run.save(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
