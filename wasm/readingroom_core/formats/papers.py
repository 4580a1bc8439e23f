"""The papers, as the pages read them and as search loads them.

- the papers file (`data/papers.*.json`, `files.papers`): `{"v", "papers": [PaperRecord, ...]}` in
  reading-list order: everything a paper page shows (abstract, headings, links, note, vector); 3.7 KB a
  paper, 1.3 MB gzipped for 1,000 papers;
- the paper table (`files.paper_table`): `{"v", "papers": [...]}` with only the fields search reads
  (`TABLE_FIELDS`, about a tenth), so keyword search starts without the rest;
- the papers' vectors (`files.paper_vectors`): the paper view needs every paper's vector, but only once
  semantic search is up; one int8 row per paper in table order (the same values as `PaperVector`, 384
  bytes instead of 512 characters), fetched with the dense directory.

builder/writers/papers.py writes them, `readers/papers.py` reads the table and the vectors. A paper's
chunks are doc ids `first_chunk … first_chunk + chunk_count - 1` (`formats.chunks`), and its
`text_bytes` and `text_sha256` locate and check its part of the texts file (`formats.texts`).
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

from readingroom_core.formats.versioned import FORMAT_VERSION, compact_json, load_versioned

# The record fields search reads: filters (year, categories, tags, authors), navigation (title, authors,
# short names), result cards and citations (id, version, title, authors, year), the doc ids and where the
# text lies in the texts file, with its head's checksum (`formats.texts`).
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


@dataclass(frozen=True)
class SectionEntry:
    """A heading of a paper, for its page's table of contents."""

    title: str
    page: int
    level: int


@dataclass(frozen=True)
class PaperRecord:
    """One paper of the papers file. Its chunks are doc ids `first_chunk … first_chunk + chunk_count - 1`;
    `text_bytes` is (its head's size, its whole size) in the texts file (`formats.texts`), papers in table
    order; `vector` is what the paper as a whole is about (see
    `PaperVector`), absent where a site has no paper view (BEIR, where a passage is its own paper)."""

    id: str
    title: str
    first_chunk: int
    chunk_count: int
    text_bytes: tuple[int, int] = (0, 0)
    authors: tuple[str, ...] = ()
    year: int | None = None
    categories: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    version: str = ""
    abstract: str = ""
    published: str = ""
    updated: str = ""
    first_version: str = ""
    primary_category: str = ""
    abs_url: str = ""
    pdf_url: str = ""
    note: str = ""
    pages: int = 0
    sections: tuple[SectionEntry, ...] = ()
    vector: str | None = None
    short_names: tuple[str, ...] = ()  # "LoRA", "BERT": names the paper gives itself (navigation.short_names)
    text_sha256: str = ""  # its text head's sha256 prefix (formats.texts.SHA_DIGITS)

    @property
    def doc_ids(self) -> range:
        return range(self.first_chunk, self.first_chunk + self.chunk_count)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id,
            "version": self.version,
            "title": self.title,
            "authors": list(self.authors),
            "abstract": self.abstract,
            "published": self.published,
            "updated": self.updated,
            "first_version": self.first_version,
            "year": self.year,
            "categories": list(self.categories),
            "primary_category": self.primary_category,
            "abs_url": self.abs_url,
            "pdf_url": self.pdf_url,
            "tags": list(self.tags),
            "note": self.note,
            "pages": self.pages,
            "sections": [asdict(s) for s in self.sections],
            "short_names": list(self.short_names),
        }
        if self.vector is not None:
            data["vector"] = self.vector
        data.update(
            chunks=[self.first_chunk, self.chunk_count],
            text=list(self.text_bytes),
            text_sha256=self.text_sha256,
        )
        return data

    @classmethod
    def from_table_row(cls, row: dict[str, Any]) -> PaperRecord:
        """The fields the paper table holds (TABLE_FIELDS): what search loads at start-up."""
        first, count = row["chunks"]
        head_bytes, text_bytes = row["text"]
        return cls(
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

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PaperRecord:
        """Every field, as `to_json` writes them into the papers file."""
        return replace(
            cls.from_table_row(data),
            abstract=data["abstract"],
            published=data["published"],
            updated=data["updated"],
            first_version=data["first_version"],
            primary_category=data["primary_category"],
            abs_url=data["abs_url"],
            pdf_url=data["pdf_url"],
            note=data["note"],
            pages=data["pages"],
            sections=tuple(SectionEntry(**s) for s in data["sections"]),
            vector=data.get("vector"),
        )


def papers_bytes(records: Iterable[PaperRecord]) -> bytes:
    return compact_json({"v": FORMAT_VERSION, "papers": [record.to_json() for record in records]})


def read_papers(data: bytes | str, what: str = "papers file") -> list[PaperRecord]:
    return [PaperRecord.from_json(record) for record in load_versioned(data, what)["papers"]]


class PaperVector:
    """The one definition of a paper's vector as the site stores it: base64 of int8 values scaled so the
    largest magnitude is 127. Only its direction is used (cosine), so no scale is stored, and 384
    dimensions take 512 characters. The paper view of hybrid search and related papers both read it."""

    @staticmethod
    def encode(values: Sequence[float]) -> str:
        peak = max((abs(value) for value in values), default=0.0) or 1.0
        quantized = bytes(round(value / peak * 127) & 0xFF for value in values)
        return base64.b64encode(quantized).decode("ascii")

    @staticmethod
    def decode(text: str) -> list[int]:
        return [value - 256 if value > 127 else value for value in base64.b64decode(text)]
