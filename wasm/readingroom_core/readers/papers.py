"""What search loads of the papers at start-up (`formats.papers`): the paper table's records, and the
papers' vectors as rows packed for scoring them all at once."""

from __future__ import annotations

from readingroom_core.formats.papers import PaperRecord
from readingroom_core.formats.versioned import load_versioned
from readingroom_core.packedrows import PackedRows


def read_paper_table(data: bytes | str, what: str = "paper table") -> list[PaperRecord]:
    """The table's records (a papers file reads as one too: its extra fields are left out)."""
    records = []
    for row in load_versioned(data, what)["papers"]:
        try:
            records.append(PaperRecord.from_table_row(row))
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(
                f"{what}: a paper's record is malformed ({error!r}); rebuild the site"
            ) from error
    return records


def read_paper_vectors(data: bytes, papers: int, what: str = "paper vectors") -> PackedRows:
    """The int8 rows of `paper_vectors_bytes`, one per paper, packed for scoring them all at once."""
    if not papers or len(data) % papers:
        raise ValueError(f"{what}: {len(data)} bytes do not hold {papers} equal rows; rebuild the site")
    return PackedRows(data, len(data) // papers)
