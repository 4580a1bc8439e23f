"""The site's data files: content-hashed, compact, and split so the browser loads only what it shows.

Layout (all paths relative to the site root, all named `<stem>.<hash12>.<ext>` so a visitor's cache
can never serve stale data):
- `data/papers.*.json`   paper metadata, sections, and where each paper's chunks sit;
- `data/chunks.*.json`   the chunk table loaded at start: page span and section of every chunk
                         (columnar), enough to filter and cite without any chunk text;
- `data/text/<id>.*.json` one file per paper with its chunks' ids, offsets and text, and each page's
                         offsets, fetched when a result from that paper is shown or cited;
- `data/postings.*.json`, `data/vectors.*.usearch`, `model/*`: the retrieval artifacts.
A chunk's number (0…n-1, papers in reading-list order, chunks in reading order) is its doc id in the
postings and its key in the USearch file.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from builder.models import Chunk, PageSpan, PaperMeta

FORMAT_VERSION = 1


@dataclass(frozen=True)
class Artifact:
    path: str  # relative to the site root, with forward slashes
    bytes: int
    sha256: str


def compact_json(data: Any) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def write_hashed(site_dir: Path, folder: str, stem: str, suffix: str, data: bytes) -> Artifact:
    sha = hashlib.sha256(data).hexdigest()
    relative = f"{folder}/{stem}.{sha[:12]}{suffix}"
    path = site_dir / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return Artifact(relative, len(data), sha)


def safe_stem(arxiv_id: str) -> str:
    return arxiv_id.replace("/", "_")


def year_of(meta: PaperMeta) -> int | None:
    date = meta.published or meta.updated
    return int(date[:4]) if date[:4].isdigit() else None


def paper_text_file(arxiv_id: str, first: int, chunks: list[Chunk], pages: list[PageSpan]) -> bytes:
    """`pages` lists [page, start, end) of every page in the chunks' offsets, so a cited page's text can
    be rebuilt from the chunks and a quote checked against exactly that page."""
    return compact_json(
        {
            "v": FORMAT_VERSION,
            "id": arxiv_id,
            "first": first,
            "chunks": [{"id": c.chunk_id, "s": c.char_start, "e": c.char_end, "t": c.text} for c in chunks],
            "pages": [[p.page, p.start, p.end] for p in pages],
        }
    )


def paper_record(meta: PaperMeta, extra: dict[str, Any], first: int, count: int, text_path: str) -> dict:
    return {
        "id": meta.arxiv_id,
        "version": meta.version,
        "title": meta.title,
        "authors": meta.authors,
        "abstract": meta.abstract,
        "published": meta.published,
        "updated": meta.updated,
        "year": year_of(meta),
        "categories": meta.categories,
        "primary_category": meta.primary_category,
        "abs_url": meta.abs_url,
        "pdf_url": meta.pdf_url,
        **extra,
        "chunks": [first, count],
        "text": text_path,
    }


def chunk_table(chunks: list[Chunk]) -> dict[str, Any]:
    """Columnar, so 20k chunks cost a few hundred KB; section titles are stored once."""
    titles: dict[str, int] = {}
    section = [titles.setdefault(c.section, len(titles)) for c in chunks]
    return {
        "v": FORMAT_VERSION,
        "n": len(chunks),
        "page_start": [c.page_start for c in chunks],
        "page_span": [c.page_end - c.page_start for c in chunks],
        "section": section,
        "sections": list(titles),
    }
