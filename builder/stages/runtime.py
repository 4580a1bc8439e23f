"""The search core as the wheel the site's Pyodide installs (render copies it next to Pyodide and ORT Web)."""

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
