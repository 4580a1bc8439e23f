"""The search worker's memory at a built site, measured in Pyodide under Node (wasm/node/worker_memory.mjs):
the scale bench's questions, each through the calls the browser's worker makes, then all of them again.

    python scripts/worker_memory.py --site /tmp/scale/list-10000/site

Pyodide's WebAssembly memory grows in steps of a fifth and never shrinks, so the worker heap the scale
bench reports is set by the allocator's peak: this prints that peak, what is in use and what lies free
inside the allocator's arena after every 25 questions, which shows what a change to the core's caches or
to one query's transient needs does to it in minutes rather than a browser run. The questions' vectors
come from the site's own query encoder (onnxruntime); the core from a wheel of this tree.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from builder.offline import load_onnxruntime_first, use_offline_environment

use_offline_environment()
load_onnxruntime_first()

from bench_scale import QUESTION_SETS, read_questions  # noqa: E402

from builder.paths import REPO_ROOT  # noqa: E402
from builder.query_encoder import OnnxQueryEncoder  # noqa: E402
from builder.site.manifest import read_manifest  # noqa: E402
from builder.site.runtime import build_core_wheel  # noqa: E402
from readingroom_core.querysyntax import embedding_text  # noqa: E402

NODE_SCRIPT = REPO_ROOT / "wasm" / "node" / "worker_memory.mjs"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--site", type=Path, required=True, help="a built site folder")
    parser.add_argument(
        "--questions", type=Path, nargs="+", default=QUESTION_SETS, help="JSONL, 'query' per line"
    )
    args = parser.parse_args(argv)
    site = args.site.resolve()
    questions = read_questions(args.questions)
    encoder = OnnxQueryEncoder.from_site(site, read_manifest(site))
    vectors = encoder.encode([embedding_text(question) for question in questions])
    with tempfile.TemporaryDirectory(prefix="worker-memory-") as scratch:
        wheel = build_core_wheel(Path(scratch))
        asked = Path(scratch) / "questions.json"
        asked.write_text(
            json.dumps({"questions": questions, "vectors": [list(map(float, v)) for v in vectors]})
        )
        command = [
            "node",
            str(NODE_SCRIPT),
            "--wheel",
            str(wheel),
            "--site",
            str(site),
            "--questions",
            str(asked),
        ]
        return subprocess.run(command, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
