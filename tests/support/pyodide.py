"""Run the search core in Pyodide under Node, the way the site's browser runs it, and in CPython alike.

Both interpreters answer the same JSON requests through the same driver (`wasm/node/core_driver.py`),
so tests and benchmarks compare interpreters and nothing else. Pyodide comes from
`wasm/node_modules/pyodide` (`npm ci` in `wasm/`); the core is installed from its own wheel
(`builder.site.runtime.build_core_wheel`, as the site's build makes it).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from builder.site.runtime import PYODIDE_PACKAGE, WASM_DIR

NODE_SCRIPT = WASM_DIR / "node" / "run_core.mjs"
DRIVER = WASM_DIR / "node" / "core_driver.py"
STDERR_TAIL = 4000  # Pyodide's errors start with a megabyte of minified JavaScript; keep the Python end


def find_node() -> str | None:
    return shutil.which("node")


def missing_runtime() -> str | None:
    """Why Pyodide cannot run here (for a skip message), or None when node and the npm package exist."""
    if find_node() is None:
        return "node is not on PATH (Node 20+ runs Pyodide)"
    if not (PYODIDE_PACKAGE / "pyodide.mjs").is_file():
        return f"{PYODIDE_PACKAGE} is missing; run `npm ci --prefix wasm`"
    return None


def run_in_pyodide(request: dict, wheel: Path, timeout: float = 900) -> dict:
    """The driver's reply to `request` from Pyodide in Node; `reply["runtime"]` has the load times."""
    reason = missing_runtime()
    if reason:
        raise RuntimeError(reason)
    finished = subprocess.run(
        [find_node(), str(NODE_SCRIPT), "--wheel", str(wheel)],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if finished.returncode != 0:
        tail = finished.stderr[-STDERR_TAIL:]
        raise RuntimeError(f"Pyodide run failed (exit {finished.returncode}); end of its stderr:\n{tail}")
    return json.loads(finished.stdout)


@cache
def _cpython_driver():
    spec = importlib.util.spec_from_file_location("readingroom_core_driver", DRIVER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_in_cpython(request: dict) -> dict:
    """The same driver's reply to `request` from this interpreter, through the same JSON round trip."""
    return json.loads(_cpython_driver().handle(json.dumps(request)))


def encode_queries(site_dir: Path, queries: Sequence[str]) -> list[list[float]]:
    """Query vectors from the site's own encoder files (what the browser's ONNX model computes)."""
    from builder.query_encoder import OnnxQueryEncoder
    from readingroom_core.formats.manifest import read_manifest

    site_dir = Path(site_dir)
    manifest = read_manifest((site_dir / "manifest.json").read_bytes())
    return OnnxQueryEncoder.from_site(site_dir, manifest).encode(list(queries))
