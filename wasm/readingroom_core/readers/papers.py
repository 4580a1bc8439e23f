"""What search loads of the papers at start-up (`formats.papers`): the paper table's records, and the
papers' vectors as rows packed for scoring them all at once."""

from __future__ import annotations

from typing import Any

from readingroom_core.formats.papers import PaperRecord
from readingroom_core.formats.versioned import load_versioned
from readingroom_core.packedrows import PackedRows


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


def read_paper_vectors(data: bytes, papers: int, what: str = "paper vectors") -> PackedRows:
    """The int8 rows of `paper_vectors_bytes`, one per paper, packed for scoring them all at once."""
    if not papers or len(data) % papers:
        raise ValueError(f"{what}: {len(data)} bytes do not hold {papers} equal rows; rebuild the site")
    return PackedRows(data, len(data) // papers)
