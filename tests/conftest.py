import os
from dataclasses import dataclass
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# onnxruntime must be imported before usearch: the other order segfaults (onnxruntime 1.31.1 with
# usearch 2.26.6 / numkong), and test modules import both.
import onnxruntime  # noqa: E402, F401

from builder.paths import SHARED_MIRROR, bundled_model_dir  # noqa: E402


@pytest.fixture(scope="session")
def mirror_dir() -> Path:
    if not (SHARED_MIRROR / "pdf").is_dir():
        pytest.skip("../shared/arxiv-mirror is not present")
    return SHARED_MIRROR


@pytest.fixture(scope="session")
def model_dir() -> Path:
    return bundled_model_dir()


SMALL_PAPERS = ("1904.08375", "2412.19048", "2305.13245")  # 7 pages each: fast to build
ADDED_PAPER = "1410.3831"  # 8 pages


@dataclass(frozen=True)
class BuiltSites:
    """Two builds sharing one cache: the small papers, then the same list plus one paper."""

    first: Path
    second: Path
    cache: Path


def write_corpus(path: Path, ids, title: str = "Test site") -> Path:
    entries = "\n".join(f'[[paper]]\nid = "{i}"\ntags = ["t{n % 2}"]\n' for n, i in enumerate(ids))
    path.write_text(f'[site]\ntitle = "{title}"\n\n{entries}', encoding="utf-8")
    return path


def run_build(corpus: Path, out: Path, cache: Path, mirror: Path, *extra: str) -> int:
    from builder.cli import main

    args = [
        "build",
        "--corpus",
        str(corpus),
        "--out",
        str(out),
        "--cache",
        str(cache),
        "--mirror",
        str(mirror),
    ]
    return main([*args, "--offline", "--no-progress", *extra])


@pytest.fixture(scope="session")
def built_sites(tmp_path_factory, mirror_dir) -> BuiltSites:
    """Built once per session; several test modules read these sites (building costs a model load)."""
    root = tmp_path_factory.mktemp("sites")
    cache = root / "cache"
    first = write_corpus(root / "first.toml", SMALL_PAPERS)
    assert run_build(first, root / "first", cache, mirror_dir) == 0
    second = write_corpus(root / "second.toml", (*SMALL_PAPERS, ADDED_PAPER))
    assert run_build(second, root / "second", cache, mirror_dir) == 0
    return BuiltSites(root / "first", root / "second", cache)
