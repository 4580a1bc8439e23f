"""The search core as the wheel the site's Pyodide installs, and the interpreter snapshot made from it
(render copies both next to Pyodide and ORT Web)."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from builder.paths import REPO_ROOT

WASM_DIR = REPO_ROOT / "wasm"
PYODIDE_PACKAGE = WASM_DIR / "node_modules" / "pyodide"
SNAPSHOT_SCRIPT = WASM_DIR / "node" / "python_snapshot.mjs"
SNAPSHOT_TIMEOUT_S = 300


def build_core_wheel(out_dir: Path) -> Path:
    """Build the pure-Python `readingroom_core` wheel into `out_dir` and return its path.

    The sources are copied to a scratch folder first, so setuptools' build/ and egg-info never land in
    wasm/. Without setuptools installed, `build` makes an isolated environment (which needs PyPI).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for stale in out_dir.glob("readingroom_core-*.whl"):  # so the one wheel left is this build's
        stale.unlink()
    with tempfile.TemporaryDirectory(prefix="readingroom-core-wheel-") as scratch:
        source = Path(scratch) / "wasm"
        source.mkdir()
        shutil.copy2(WASM_DIR / "pyproject.toml", source)
        shutil.copytree(
            WASM_DIR / "readingroom_core",
            source / "readingroom_core",
            ignore=shutil.ignore_patterns("__pycache__"),
        )
        isolation = ["--no-isolation"] if importlib.util.find_spec("setuptools") else []
        command = [
            sys.executable,
            "-m",
            "build",
            "--wheel",
            *isolation,
            str(source),
            "--outdir",
            str(out_dir),
        ]
        finished = subprocess.run(command, capture_output=True, text=True, check=False)
        if finished.returncode != 0:
            raise RuntimeError(f"building the core wheel failed:\n{finished.stdout}\n{finished.stderr}")
    wheels = sorted(out_dir.glob("readingroom_core-*-py3-none-any.whl"))
    if len(wheels) != 1:
        raise RuntimeError(
            f"expected one readingroom_core wheel in {out_dir}, found {[w.name for w in wheels]}"
        )
    return wheels[0]


def python_snapshot(wheel: bytes) -> bytes:
    """Pyodide's memory after booting and importing the core from `wheel` (the bytes the site ships), made
    by Node (wasm/node/python_snapshot.mjs): a visitor's search worker restores it instead of booting Python.
    The same wheel gives the same snapshot (the wheel's bytes pass through Python's memory)."""
    node = shutil.which("node")
    if node is None:
        raise RuntimeError("node is not installed; the build needs Node.js (as `npm ci --prefix wasm` does)")
    with tempfile.TemporaryDirectory(prefix="readingroom-snapshot-") as scratch:
        wheel_path = Path(scratch) / "core.whl"
        wheel_path.write_bytes(wheel)
        out = Path(scratch) / "python.snapshot"
        finished = subprocess.run(
            [node, str(SNAPSHOT_SCRIPT), str(wheel_path), str(out)],
            capture_output=True,
            text=True,
            check=False,
            timeout=SNAPSHOT_TIMEOUT_S,
        )
        if finished.returncode != 0 or not out.exists():
            raise RuntimeError(f"making the Python snapshot failed:\n{finished.stdout}\n{finished.stderr}")
        return out.read_bytes()
