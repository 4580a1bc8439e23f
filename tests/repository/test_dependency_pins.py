"""A version pinned in two places is one fact: pyproject.toml says it, and what else names it agrees.

usearch's int8 cast rule is not recorded in its files, so the browser's reader
(readingroom_core.readers.hnsw) reads the files of exactly one usearch version: the builder must install
that one.
"""

import tomllib

from builder.paths import REPO_ROOT
from readingroom_core.formats import hnsw


def pinned_version(name: str) -> str:
    dependencies = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "dependencies"
    ]
    (requirement,) = [d for d in dependencies if d.startswith(f"{name}==")]
    return requirement.removeprefix(f"{name}==")


def test_the_installed_usearch_writes_what_the_reader_reads():
    assert pinned_version("usearch") == ".".join(map(str, hnsw.PINNED_VERSION))
