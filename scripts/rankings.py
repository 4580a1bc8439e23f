"""Every question's top 10 chunk ids in every search mode, written as JSON, or compared with an earlier file.

A change that must not move search results (a refactor, a faster reader) is checked by dumping the
rankings of one site before and after it:

    python scripts/rankings.py --site site --out before.json          # on the old code
    python scripts/rankings.py --site site --against before.json      # on the new code: exit 1 on a change

The questions are the dev questions (../shared/eval) and the tuning and report sets (tests/data).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "wasm")]

from builder.evaluation.evaluate import load_questions, top_chunk_ids  # noqa: E402
from builder.offline import load_onnxruntime_first, use_offline_environment  # noqa: E402
from builder.paths import DEV_QUESTIONS  # noqa: E402
from readingroom_core.options import SearchOptions  # noqa: E402

MODES = ("hybrid", "bm25", "dense")
QUESTION_SETS = {
    "dev": DEV_QUESTIONS,
    **{name: ROOT / "tests" / "data" / f"questions-{name}.jsonl" for name in ("extra", "tune", "report")},
}


def rankings(site: Path, k: int) -> dict[str, dict[str, list[str]]]:
    """{"<set>/<mode>": {question id: [chunk id, ...]}} for every question set that exists here."""
    ranked: dict[str, dict[str, list[str]]] = {}
    for name, path in QUESTION_SETS.items():
        if not path.exists():
            continue
        questions = load_questions(path)
        for mode in MODES:
            top = top_chunk_ids(site, [q.query for q in questions], SearchOptions(k=k, mode=mode))
            ranked[f"{name}/{mode}"] = {q.id: ids for q, ids in zip(questions, top, strict=True)}
    return ranked


def differences(before: dict, after: dict) -> list[str]:
    lines = [f"{key}: only in one file" for key in sorted(before.keys() ^ after.keys())]
    for key in sorted(before.keys() & after.keys()):
        for question, ids in before[key].items():
            if after[key].get(question) != ids:
                lines.append(f"{key} {question}: {ids} -> {after[key].get(question)}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--site", type=Path, default=ROOT / "site", help="a built site (default: site/)")
    parser.add_argument("--k", type=int, default=10, help="results per question (default 10)")
    target = parser.add_mutually_exclusive_group(required=True)
    target.add_argument("--out", type=Path, help="write the rankings here")
    target.add_argument("--against", type=Path, help="compare with rankings written earlier")
    args = parser.parse_args(argv)
    use_offline_environment()
    load_onnxruntime_first()
    ranked = rankings(args.site, args.k)
    count = sum(len(by_question) for by_question in ranked.values())
    if args.out:
        args.out.write_text(json.dumps(ranked, indent=1) + "\n", encoding="utf-8")
        print(f"{count} rankings ({len(ranked)} set/mode pairs) written to {args.out}")
        return 0
    changed = differences(json.loads(args.against.read_text(encoding="utf-8")), ranked)
    print("\n".join(changed) or f"all {count} rankings identical to {args.against}")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
