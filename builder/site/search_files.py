"""The files search reads, as bytes by site path: the postings directory, dictionary, pages and forward
file (`writers/postings.py`, `writers/forward.py`) and the dense directory, lists and rows
(`writers/dense.py`), quantized as `writers/hnsw.py` quantizes the HNSW file (which the build writes
beside the site: search does not read it).

The site build and the BEIR evaluation both write their indexes through `search_index_files`, so the
files `eval-beir` measures are the ones a site ships; only the naming differs (content-hashed names on a
site, fixed ones in memory).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from builder.writers.dense import dense_files
from builder.writers.hnsw import IndexParams, calibrate_scale, quantize
from builder.writers.postings import TermLayout
from readingroom_core.bm25 import Postings, build_postings
from readingroom_core.formats.versioned import sorted_json

# (folder, stem, suffix, bytes) -> the file's site path
Namer = Callable[[str, str, str, bytes], str]


def hashed_name(folder: str, stem: str, suffix: str, data: bytes) -> str:
    """`<folder>/<stem>.<sha256[:12]><suffix>`, as `builder.site.store.write_hashed` names files."""
    return f"{folder}/{stem}.{hashlib.sha256(data).hexdigest()[:12]}{suffix}"


@dataclass(frozen=True)
class IndexFiles:
    """Search's index files: the roles' paths (postings, dense), every file's bytes by path,
    which of them are read by range (never gzipped: ranges are of the file's own bytes)."""

    roles: dict[str, str]
    files: dict[str, bytes]
    ranged: frozenset[str]
    params: IndexParams
    k1: float
    b: float


def search_index_files(texts: Sequence[str], vectors: np.ndarray, name: Namer = hashed_name) -> IndexFiles:
    """Every index file for passages `texts` (doc id = position) and their float `vectors`."""
    return index_files(build_postings(texts), vectors, name)


def plain_name(folder: str, stem: str, suffix: str, data: bytes) -> str:
    """`<folder>/<stem><suffix>`: fixed names, for sites held in memory or made by benchmarks."""
    return f"{folder}/{stem}{suffix}"


def index_files(postings: Postings, vectors: np.ndarray, name: Namer = hashed_name) -> IndexFiles:
    """Every index file for `postings` (a benchmark may compute them its own way) and `vectors`."""
    files: dict[str, bytes] = {}

    def add(stem: str, suffix: str, data: bytes) -> str:
        path = name("data", stem, suffix, data)
        files[path] = data
        return path

    layout = TermLayout(postings)
    terms = add("terms", ".json", layout.terms_bytes)
    pages = add("postings-pages", ".bin", layout.pages_bytes)
    forward = add("postings-forward", ".bin", layout.forward_bytes)
    forward_index = add("postings-forward-index", ".bin", layout.forward_index_bytes)
    directory = layout.directory_bytes(terms, pages, forward, forward_index)
    roles = {"postings": add("postings", ".json", directory), "forward_index": forward_index}
    params = IndexParams(scale=calibrate_scale(vectors))
    dense = dense_files(quantize(vectors, params.scale))
    lists = add("dense-lists", ".bin", dense.lists)
    rows = add("dense-rows", ".bin", dense.rows)
    list_of = add("dense-list-of", ".bin", dense.list_of)
    roles["dense"] = add("dense", ".json", sorted_json(dense.directory(lists, rows, list_of).to_json()))
    ranged = frozenset({terms, pages, forward, forward_index, lists, rows, list_of})
    return IndexFiles(roles, files, ranged, params, postings.k1, postings.b)
