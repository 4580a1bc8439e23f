"""The site's data files: one format version, and each file's writer beside its reader.

Layout (paths relative to the site root; data files are named `<stem>.<hash12><ext>` by the builder so
a visitor's cache never serves stale data, and `manifest.json` names each by role):
- `manifest.json`: written last, read first; names every file (`files`), the model, index and BM25
  parameters, counts and tool versions.
- papers (`data/papers.*.json`): `{"v", "papers": [record, ...]}`, one record per paper in reading-list
  order with its metadata, sections, `chunks: [first doc id, count]`, `text` (its text file's path) and
  `vector` (what the paper as a whole is about, for the paper view of hybrid search: base64 of int8
  values, see `paper_vector_text`).
- chunk table (`data/chunks.*.json`): columnar `{"v", "n", "page_start", "page_span", "section",
  "sections"}`, enough to filter and cite any chunk without its text; section titles stored once.
- per-paper text (`data/text/<id>.*.json`): `{"v", "id", "first", "chunks": [{"id", "s", "e", "t"}],
  "pages": [[page, start, end], ...]}`, fetched when one of the paper's chunks is shown or cited; `pages`
  lets a cited page's text be rebuilt from the chunks, so a quote is checked against exactly that page.
- postings (`data/postings.*.json`): BM25 postings, written and read by `bm25.py`.
- vectors (`data/vectors.*.usearch`): the USearch HNSW file, read by `hnsw.py` (written by the builder,
  which needs usearch and numpy).
A chunk's number (0…n-1, papers in reading-list order, chunks in reading order) is its doc id in the
postings and its key in the USearch file.

Pure functions of plain data (stdlib only), so the builder writes and CPython or Pyodide read with the
same code.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Sequence
from typing import Any

FORMAT_VERSION = 1
MANIFEST_FILE = "manifest.json"


def compact_json(data: Any) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _load(data: bytes | str, what: str) -> dict:
    loaded = json.loads(data)
    if loaded.get("v") != FORMAT_VERSION:
        raise ValueError(f"{what} has format {loaded.get('v')!r}; this reader knows {FORMAT_VERSION}")
    return loaded


# --- manifest ----------------------------------------------------------------------------------------


def manifest_bytes(manifest: dict) -> bytes:
    """Indented: the manifest is the build's human-readable record of itself."""
    return (json.dumps(manifest, indent=1, ensure_ascii=False) + "\n").encode("utf-8")


def read_manifest(data: str | bytes) -> dict:
    manifest = json.loads(data)
    if manifest.get("format_version") != FORMAT_VERSION:
        raise ValueError(
            f"{MANIFEST_FILE} has format {manifest.get('format_version')!r}; this reader knows "
            f"{FORMAT_VERSION} (rebuild the site with this version)"
        )
    return manifest


# --- papers ------------------------------------------------------------------------------------------


def papers_bytes(records: Sequence[dict]) -> bytes:
    return compact_json({"v": FORMAT_VERSION, "papers": list(records)})


def read_papers(data: bytes | str, what: str = "papers file") -> list[dict]:
    return _load(data, what)["papers"]


def paper_vector_text(values: Sequence[float]) -> str:
    """A vector as base64 of int8 values scaled so the largest magnitude is 127: only its direction is
    used (cosine), so no scale is stored, and 384 dimensions take 512 characters."""
    peak = max((abs(value) for value in values), default=0.0) or 1.0
    quantized = bytes(round(value / peak * 127) & 0xFF for value in values)
    return base64.b64encode(quantized).decode("ascii")


def read_paper_vector(text: str) -> list[int]:
    return [value - 256 if value > 127 else value for value in base64.b64decode(text)]


# --- chunk table -------------------------------------------------------------------------------------


def chunk_table_bytes(chunks: Iterable[tuple[int, int, str]]) -> bytes:
    """(page_start, page_end, section) of every chunk in doc-id order, stored columnar: 20k chunks cost
    a few hundred KB."""
    rows = list(chunks)
    titles: dict[str, int] = {}
    section = [titles.setdefault(title, len(titles)) for _, _, title in rows]
    return compact_json(
        {
            "v": FORMAT_VERSION,
            "n": len(rows),
            "page_start": [start for start, _, _ in rows],
            "page_span": [end - start for start, end, _ in rows],
            "section": section,
            "sections": list(titles),
        }
    )


def read_chunk_table(data: bytes | str, what: str = "chunk table") -> dict:
    return _load(data, what)


# --- per-paper text ----------------------------------------------------------------------------------


def paper_text_bytes(
    arxiv_id: str, first: int, chunks: Iterable[dict], pages: Iterable[Sequence[int]]
) -> bytes:
    """`chunks`: {"id", "s", "e", "t"} per chunk (chunk id, character span in the paper, text); `pages`:
    [page, start, end) of every page in the same character offsets."""
    return compact_json(
        {
            "v": FORMAT_VERSION,
            "id": arxiv_id,
            "first": first,
            "chunks": list(chunks),
            "pages": [list(p) for p in pages],
        }
    )


def read_paper_text(data: bytes | str, what: str = "paper text") -> dict:
    return _load(data, what)
