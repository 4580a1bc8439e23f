"""`manifest.json`: the one file the browser runtime reads first, and the build's record of itself.

It names every data file (with size and checksum), the model and how its vectors were quantized and
indexed, the counts, and the tool versions, so a site can be checked and reproduced. The record and
its JSON form are `readingroom_core.formats.manifest.Manifest`; this module fills it in and puts it on disk.
"""

from __future__ import annotations

import os
import platform
import time
from dataclasses import asdict
from importlib import metadata
from pathlib import Path
from typing import Any

from builder.embedding import ModelIdentity
from builder.writers.hnsw import IndexParams
from readingroom_core.formats.manifest import (
    MANIFEST_FILE,
    Artifact,
    Bm25Section,
    Counts,
    DataFiles,
    IndexSection,
    Manifest,
    ModelSection,
    manifest_bytes,
)
from readingroom_core.formats.manifest import read_manifest as parse_manifest

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


def model_section(identity: ModelIdentity) -> ModelSection:
    """The model as the site names it: everything but the build machine's path to it."""
    fields = asdict(identity)
    fields.pop("path")
    return ModelSection(**fields)


def make_manifest(
    *,
    title: str,
    base_url: str,
    model: ModelIdentity,
    index: IndexParams,
    bm25: Bm25Section,
    encoder: dict[str, Any],
    counts: Counts,
    files: DataFiles,
    artifacts: list[Artifact],
) -> Manifest:
    """The manifest of a site whose runtime is not packed yet (render adds it)."""
    return Manifest(
        title=title,
        base_url=base_url,
        model=model_section(model),
        index=IndexSection(**asdict(index)),
        bm25=bm25,
        encoder=encoder,
        counts=counts,
        files=files,
        artifacts=tuple(artifacts),
        tools=tool_versions(),
        built_at=build_time(),
    )


def write_manifest(site_dir: Path, manifest: Manifest) -> Path:
    path = site_dir / MANIFEST_FILE
    path.write_bytes(manifest_bytes(manifest))
    return path


def read_manifest(site_dir: Path) -> Manifest:
    path = site_dir / MANIFEST_FILE
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist: build the site first (`python -m builder build`)")
    return parse_manifest(path.read_bytes())
