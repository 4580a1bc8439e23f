"""Built sites served on loopback for the browser tests: what chromium needs, one build from the suite's
cache, and `builder serve` in a thread that stops with the test.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from builder.commands.serve import serve_in_thread
from support.builds import run_build
from support.chromium import CHROMIUM
from support.pyodide import missing_runtime


def require_browser() -> None:
    """Skip the test unless Pyodide's npm package and Debian's chromium are here."""
    reason = missing_runtime() or (None if CHROMIUM.exists() else f"{CHROMIUM} is not installed")
    if reason:
        pytest.skip(reason)


def corpus_text(
    ids: Sequence[str],
    title: str,
    base_url: str | None = None,
    tags: Sequence[list[str]] | None = None,
    whole_index_mb: float | None = None,
) -> str:
    """A reading list of `ids`, tagged t0/t1 alternately unless `tags` gives each paper's tags."""
    tags = tags or [[f"t{n % 2}"] for n in range(len(ids))]
    entries = "".join(
        f"[[paper]]\nid = {json.dumps(arxiv_id)}\ntags = {json.dumps(paper_tags)}\n\n"
        for arxiv_id, paper_tags in zip(ids, tags, strict=True)
    )
    site = f"[site]\ntitle = {json.dumps(title)}\n"
    if base_url:
        site += f"base_url = {json.dumps(base_url)}\n"
    if whole_index_mb is not None:
        site += f"whole_index_mb = {whole_index_mb}\n"
    return f"{site}\n{entries}"


def build_from_cache(root: Path, corpus: str, cache: Path, source, *extra: str) -> Path:
    """`corpus` built into root/site from a copy of `cache` (the suite's parsed texts and embeddings: no
    model work again); `source` and `extra` as support.builds.run_build takes them."""
    corpus_file = root / "corpus.toml"
    corpus_file.write_text(corpus, encoding="utf-8")
    shutil.copytree(cache, root / "cache")
    assert run_build(corpus_file, root / "site", root / "cache", source, *extra) == 0
    return root / "site"


@contextmanager
def serving(site: Path) -> Iterator[str]:
    """The site's URL on 127.0.0.1 while the block runs (`builder serve` reads base_url from the manifest)."""
    server, url = serve_in_thread(site)
    try:
        yield url
    finally:
        server.shutdown()
        server.server_close()
