"""The chunk table (`data/chunks.*.bin`, `ChunkTable`): page and section of every chunk as typed columns (a
JSON header, then the columns), enough to filter and cite any chunk without its text; section titles
stored once.

A chunk's number (0…n-1, papers in reading-list order, chunks in reading order) is its doc id in the
postings and the dense lists, and its key in the USearch HNSW file the builder writes beside the site.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from readingroom_core.formats.versioned import FORMAT_VERSION, compact_json, little_endian, load_versioned

CHUNK_COLUMNS = ("page_start", "page_span", "section")
_UNSIGNED = "BHI"  # the typed arrays a column may be stored as: 1, 2 or 4 bytes a value


@dataclass(frozen=True)
class ChunkTable:
    """Page and section of every chunk by doc id, stored as typed columns, each in the fewest bytes that
    hold its largest value (at 10,000 papers, 842,003 chunks: 1 + 1 + 2 bytes a chunk): smaller to fetch
    than JSON lists, no parse, and a fraction of their memory once loaded (format 8, commit c32b87b)."""

    page_start: Sequence[int]
    page_span: Sequence[int]  # page_end - page_start
    section: Sequence[int]  # index into `sections`
    sections: list[str]

    @property
    def n(self) -> int:
        return len(self.page_start)

    @classmethod
    def from_rows(cls, rows: Iterable[tuple[int, int, str]]) -> ChunkTable:
        """(page_start, page_end, section title) of every chunk in doc-id order."""
        rows = list(rows)
        titles: dict[str, int] = {}
        section = [titles.setdefault(title, len(titles)) for _, _, title in rows]
        return cls(
            page_start=[start for start, _, _ in rows],
            page_span=[end - start for start, end, _ in rows],
            section=section,
            sections=list(titles),
        )

    def page_end(self, doc_id: int) -> int:
        return self.page_start[doc_id] + self.page_span[doc_id]

    def section_of(self, doc_id: int) -> str:
        return self.sections[self.section[doc_id]]

    def to_bytes(self) -> bytes:
        """A little-endian uint32 header length, the header ({"v", "n", "columns": [[name, typecode], ...],
        "sections"}) as JSON, then each column's values, little-endian."""
        columns = [_column(name, getattr(self, name)) for name in CHUNK_COLUMNS]
        header = compact_json(
            {
                "v": FORMAT_VERSION,
                "n": self.n,
                "columns": [
                    [name, values.typecode] for name, values in zip(CHUNK_COLUMNS, columns, strict=True)
                ],
                "sections": self.sections,
            }
        )
        return len(header).to_bytes(4, "little") + header + b"".join(little_endian(c) for c in columns)

    @classmethod
    def from_bytes(cls, data: bytes, what: str) -> ChunkTable:
        size = int.from_bytes(data[:4], "little")
        if len(data) < 4 + size:
            raise ValueError(f"{what} is cut short before its columns; rebuild the site")
        header = load_versioned(data[4 : 4 + size], what)
        n, at, columns = header["n"], 4 + size, {}
        for name, code in header["columns"]:
            if code not in _UNSIGNED:
                raise ValueError(f"{what}: column {name!r} has type {code!r}, not one of {_UNSIGNED}")
            values = array(code)
            end = at + n * values.itemsize
            if end > len(data):
                raise ValueError(f"{what} is cut short in its column {name!r}; rebuild the site")
            values.frombytes(data[at:end])
            if sys.byteorder != "little":
                values.byteswap()
            columns[name], at = values, end
        if at != len(data) or set(columns) != set(CHUNK_COLUMNS):
            raise ValueError(
                f"{what} does not hold the columns {CHUNK_COLUMNS} of {n} chunks; rebuild the site"
            )
        sections = header["sections"]
        if max(columns["section"], default=-1) >= len(sections):
            raise ValueError(f"{what} names a section it does not list; rebuild the site")
        return cls(columns["page_start"], columns["page_span"], columns["section"], sections)


def _column(name: str, values: Sequence[int]) -> array[int]:
    """The values as the smallest unsigned typed array that holds them."""
    largest = max(values, default=0)
    code = next((code for code in _UNSIGNED if largest < 1 << 8 * array(code).itemsize), None)
    if code is None or min(values, default=0) < 0:
        raise ValueError(f"chunk table column {name!r} holds values outside 0..2**32-1")
    return array(code, values)


def chunk_table_bytes(table: ChunkTable) -> bytes:
    return table.to_bytes()


def read_chunk_table(data: bytes, what: str = "chunk table") -> ChunkTable:
    return ChunkTable.from_bytes(data, what)
