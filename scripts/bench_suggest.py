"""Cost of "did you mean" (`SearchEngine.suggest`) per query, in CPython and in Pyodide under Node.

    python scripts/bench_suggest.py --site site/ [--repeat 5] [--json out.json]

The browser asks for a suggestion with every search, so its cost adds to every query. Two sets of
queries: the dev questions as written (words the corpus mostly knows), and the same questions with one
typo each (two adjacent letters of the longest word swapped, deterministic). Reports the first call
(term lists built) apart, then p50/p95/max with the engine's memo of corrections cleared before each
call ("fresh": a word met for the first time, text files already read) and without ("memoized").
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

from measurements import add_record_option, begin

from builder.paths import DEV_QUESTIONS
from builder.site.runtime import build_core_wheel

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # tests/support: the harness
from support.pyodide import missing_runtime, run_in_cpython, run_in_pyodide  # noqa: E402


def with_typo(question: str) -> str:
    """The question with its longest word's middle two letters swapped ("retrieval" -> "retrieavl")."""
    words = question.split()
    longest = max(range(len(words)), key=lambda i: (len(words[i].strip("?,.")), -i))
    word = words[longest].strip("?,.")
    middle = len(word) // 2
    typo = word[: middle - 1] + word[middle] + word[middle - 1] + word[middle + 1 :]
    words[longest] = words[longest].replace(word, typo)
    return " ".join(words)


def summary(seconds: list[list[float]]) -> dict:
    """p50/p95/max in milliseconds over every timed call (first call excluded)."""
    flat = sorted(t * 1000 for per_case in seconds for t in per_case)
    return {
        "calls": len(flat),
        "p50_ms": round(statistics.median(flat), 3),
        "p95_ms": round(flat[min(len(flat) - 1, int(0.95 * len(flat)))], 3),
        "max_ms": round(flat[-1], 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--site", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--questions", type=Path, default=DEV_QUESTIONS)
    parser.add_argument("--no-pyodide", action="store_true")
    parser.add_argument("--json", type=Path)
    add_record_option(parser)
    args = parser.parse_args(argv)
    bench_run = begin("suggest", argv)
    questions = [
        json.loads(line)["query"] for line in args.questions.read_text().splitlines() if line.strip()
    ]
    sets = {"as written": questions, "one typo": [with_typo(q) for q in questions]}
    runs = [("cpython", run_in_cpython)]
    if not args.no_pyodide:
        reason = missing_runtime()
        if reason:
            print(f"Pyodide skipped: {reason}", file=sys.stderr)
        else:
            wheel = build_core_wheel(Path(tempfile.mkdtemp(prefix="bench-suggest-")))
            runs.append(("pyodide", lambda request: run_in_pyodide(request, wheel)))
    results = []
    for interpreter, run in runs:
        for name, queries in sets.items():
            request = {
                "op": "suggest",
                "site": str(args.site.resolve()),
                "repeat": args.repeat,
                "cases": [{"query": q} for q in queries],
            }
            reply = run(request)
            row = {
                "interpreter": interpreter,
                "set": name,
                "first_call_ms": round(reply["first_call_s"] * 1000, 1),
                "suggested": sum(s is not None for s in reply["suggestions"]),
                "queries": len(queries),
                "fresh": summary(reply["fresh_s"]),
                "memoized": summary(reply["memoized_s"]),
                "suggestions": [[q, s] for q, s in zip(queries, reply["suggestions"], strict=True)],
            }
            results.append(row)
            fresh, memo = row["fresh"], row["memoized"]
            print(
                f"{interpreter:8} {name:11} first call {row['first_call_ms']:6.1f} ms | fresh p50 "
                f"{fresh['p50_ms']:6.2f} p95 {fresh['p95_ms']:6.2f} max {fresh['max_ms']:6.2f} ms | memoized "
                f"p50 {memo['p50_ms']:5.2f} p95 {memo['p95_ms']:5.2f} ms | suggested {row['suggested']}/{row['queries']}"
            )
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    if args.record:  # the figures; each query's suggestion stays in --json
        bench_run.save(
            [{key: value for key, value in row.items() if key != "suggestions"} for row in results]
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
