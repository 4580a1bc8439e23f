"""What search loads of the papers at start-up: a small table, and the papers' vectors apart.

The papers file (`files.papers`, `sitedata.PaperRecord`) holds everything a paper page shows: abstract,
headings, links, note, vector; 3.7 KB a paper, 1.3 MB gzipped for 1,000 papers. The browser needs little
of it: the paper table (`files.paper_table`) keeps what filters, navigation and result cards read
(`TABLE_FIELDS`, about a tenth), so keyword search starts without the rest. The paper view of hybrid
search needs every paper's vector, but only once semantic search is up: `files.paper_vectors` holds them
as int8 rows, one per paper in table order (the same values as `PaperVector`, 384 bytes instead of 512
characters), fetched with the dense directory.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Sequence
from typing import Any

from readingroom_core.formats.papers import PaperRecord
from readingroom_core.formats.versioned import FORMAT_VERSION, compact_json, load_versioned
from readingroom_core.packedrows import PackedRows

# The record fields search reads: filters (year, categories, tags, authors), navigation (title, authors,
# short names), result cards and citations (id, version, title, authors, year), the doc ids and where the
# text lies in the texts file, with its head's checksum (papertexts.py).
TABLE_FIELDS = (
    "id",
    "version",
    "title",
    "authors",
    "year",
    "categories",
    "tags",
    "short_names",
    "chunks",
    "text",
    "text_sha256",
)


def paper_table_bytes(records: Iterable[PaperRecord]) -> bytes:
    rows = []
    for record in records:
        full = record.to_json()
        rows.append({field: full[field] for field in TABLE_FIELDS})
    return compact_json({"v": FORMAT_VERSION, "papers": rows})


def read_paper_table(data: bytes | str, what: str = "paper table") -> list[PaperRecord]:
    """The table's records (a papers file reads as one too: its extra fields are left out)."""
    records = []
    for row in load_versioned(data, what)["papers"]:
        try:
            records.append(_table_record(row))
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(
                f"{what}: a paper's record is malformed ({error!r}); rebuild the site"
            ) from error
    return records


def _table_record(row: dict[str, Any]) -> PaperRecord:
    first, count = row["chunks"]
    head_bytes, text_bytes = row["text"]
    return PaperRecord(
        id=row["id"],
        title=row["title"],
        first_chunk=first,
        chunk_count=count,
        text_bytes=(head_bytes, text_bytes),
        authors=tuple(row["authors"]),
        year=row["year"],
        categories=tuple(row["categories"]),
        tags=tuple(row["tags"]),
        version=row["version"],
        short_names=tuple(row["short_names"]),
        text_sha256=row["text_sha256"],
    )


def paper_vectors_bytes(records: Sequence[PaperRecord]) -> bytes | None:
    """Every paper's vector as int8 rows in record order; None where a paper has none (no paper view)."""
    if not records or any(record.vector is None for record in records):
        return None
    rows = [base64.b64decode(record.vector or "") for record in records]
    if len({len(row) for row in rows}) != 1:
        raise ValueError("the papers' vectors differ in length")
    return b"".join(rows)


def read_paper_vectors(data: bytes, papers: int, what: str = "paper vectors") -> PackedRows:
    """The int8 rows of `paper_vectors_bytes`, one per paper, packed for scoring them all at once."""
    if not papers or len(data) % papers:
        raise ValueError(f"{what}: {len(data)} bytes do not hold {papers} equal rows; rebuild the site")
    return PackedRows(data, len(data) // papers)
