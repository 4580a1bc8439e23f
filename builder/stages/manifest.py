"""`manifest.json`: the one file the browser runtime reads first, and the build's record of itself.

It names every data file (with size and checksum), the model and how its vectors were quantized and
indexed, the counts, and the tool versions, so a site can be checked and reproduced.
"""

from __future__ import annotations

import json
import os
import platform
import time
from dataclasses import asdict
from importlib import metadata
from pathlib import Path
from typing import Any

from builder.stages.embed import ModelIdentity
from builder.stages.store import FORMAT_VERSION, Artifact

MANIFEST_FILE = "manifest.json"
TOOLS = (
    "readingroom",
    "pymupdf",
    "arxiv",
    "sentence-transformers",
    "transformers",
    "torch",
    "onnx",
    "onnxruntime",
    "usearch",
    "numpy",
    "jinja2",
)


def tool_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in TOOLS:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "absent"
    return versions


def build_time() -> str:
    """UTC build time; SOURCE_DATE_EPOCH (the reproducible-builds convention) overrides the clock."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    seconds = int(epoch) if epoch and epoch.isdigit() else int(time.time())
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(seconds))


def make_manifest(
    *,
    title: str,
    base_url: str,
    model: ModelIdentity,
    index: dict[str, Any],
    bm25: dict[str, Any],
    encoder: dict[str, Any],
    counts: dict[str, int],
    files: dict[str, str],
    artifacts: list[Artifact],
) -> dict[str, Any]:
    identity = asdict(model)
    identity.pop("path")
    return {
        "format_version": FORMAT_VERSION,
        "title": title,
        "base_url": base_url,
        "model": identity,
        "index": index,
        "bm25": bm25,
        "encoder": encoder,
        "counts": counts,
        "files": files,
        "artifacts": [asdict(a) for a in sorted(artifacts, key=lambda a: a.path)],
        "tools": tool_versions(),
        "built_at": build_time(),
    }


def write_manifest(site_dir: Path, manifest: dict[str, Any]) -> Path:
    path = site_dir / MANIFEST_FILE
    path.write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def read_manifest(site_dir: Path) -> dict[str, Any]:
    path = site_dir / MANIFEST_FILE
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist: build the site first (`python -m builder build`)")
    return json.loads(path.read_text(encoding="utf-8"))
