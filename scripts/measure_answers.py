"""Answers on a built site: prompt size by default, what real tokenizers make of it, evidence time, and
how the mock provider's citations fare in verification.

    python scripts/measure_answers.py --site site [--questions ../shared/eval/dev-questions.jsonl] [--json]

For each question whose gold paper is on the site: the default evidence (hybrid, DEFAULT_BUDGET) is
selected, its prompt counted by `count_tokens` and by o200k, cl100k and Llama 2 (wasm/node/count_tokens.mjs),
and the mock's "mixed" answer, written from that prompt (tests/support/mock_llm.py), verified: the share of its
citations whose state is the one the mock meant (verified for true ones, invented / page not found /
quote not found for the planted ones), and whether the planted uncited sentence is found.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import onnxruntime  # noqa: F401  (before usearch: the other import order segfaults)

from builder.evaluation.evaluate import load_questions
from builder.paths import DEV_QUESTIONS, REPO_ROOT
from builder.query_encoder import OnnxQueryEncoder
from readingroom_core.answers import DEFAULT_BUDGET, retrieval_query, select_evidence, verify
from readingroom_core.browser import open_folder
from readingroom_core.querysyntax import embedding_text

sys.path.insert(0, str(REPO_ROOT / "tests"))
from support.mock_llm import write_answer  # noqa: E402

COUNTER = REPO_ROOT / "wasm" / "node" / "count_tokens.mjs"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", type=Path, default=REPO_ROOT / "site")
    parser.add_argument("--questions", type=Path, default=DEV_QUESTIONS)
    parser.add_argument("--budget", type=int, default=DEFAULT_BUDGET)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    site = open_folder(args.site)
    manifest, engine = site.manifest, site.engine
    encoder = OnnxQueryEncoder.from_site(args.site, manifest)
    on_site = {paper["id"] for paper in engine.papers}
    questions = [q for q in load_questions(args.questions) if q.gold_papers & on_site]
    prompts, rows = [], []
    meant = right = planted_uncited = found_uncited = 0
    for question in questions:
        vector = encoder.encode([embedding_text(retrieval_query(question.query))])[0]
        started = time.perf_counter()
        found = select_evidence(engine, question.query, vector, budget=args.budget)
        seconds = time.perf_counter() - started
        evidence = found.to_dict()
        answer = write_answer(found.prompt.messages[-1]["content"], "mixed")
        checked = verify(answer.text, evidence)
        got = [(c["arxiv_id"], c["status"]) for c in checked["citations"]]
        wanted = [(arxiv_id, status) for arxiv_id, _, _, status in answer.expected]
        meant += len(wanted)
        right += sum(g == w for g, w in zip(got, wanted, strict=False)) if len(got) == len(wanted) else 0
        planted_uncited += len(answer.uncited)
        found_uncited += sum(
            f"{claim}." in [u["text"] for u in checked["uncited"]] for claim in answer.uncited
        )
        prompts.append({"system": found.prompt.system, "messages": found.prompt.messages})
        rows.append({"id": question.id, "sources": len(found.sources), "estimate": found.prompt_tokens,
                     "evidence_s": seconds, "extra_uncited": len(checked["uncited"]) - len(answer.uncited)})  # fmt: skip
    counts = json.loads(
        subprocess.run(
            ["node", str(COUNTER)], input=json.dumps(prompts), capture_output=True, text=True, check=True
        ).stdout
    )
    for row, count in zip(rows, counts, strict=True):
        row.update(count)
    summary = {
        "questions": len(rows),
        "budget": args.budget,
        "sources_median": statistics.median(r["sources"] for r in rows),
        "estimate_median": statistics.median(r["estimate"] for r in rows),
        **{
            f"{name}_median": statistics.median(r[name] for r in rows)
            for name in ("o200k", "cl100k", "llama2")
        },
        **{f"{name}_max": max(r[name] for r in rows) for name in ("o200k", "cl100k", "llama2")},
        "evidence_s_median": round(statistics.median(r["evidence_s"] for r in rows), 4),
        "mock_citations": meant,
        "mock_citations_as_meant": right,
        "mock_uncited_planted": planted_uncited,
        "mock_uncited_found": found_uncited,
        "unplanted_uncited": sum(r["extra_uncited"] for r in rows),
    }
    if args.json:
        print(json.dumps({"summary": summary, "questions": rows}, indent=1))
    else:
        for row in rows:
            print(f"{row['id']:6s} sources {row['sources']:2d}  estimate {row['estimate']:5d}  o200k {row['o200k']:5d}  "
                  f"cl100k {row['cl100k']:5d}  llama2 {row['llama2']:5d}  evidence {row['evidence_s'] * 1000:.0f} ms")  # fmt: skip
        print(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
