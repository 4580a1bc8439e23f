"""The papers' texts, read by range: a result card, a phrase check or a cited page reads the few chunks it
needs, not its paper's whole text (format 9; commit f2ce399 measured the bytes it saves a query).
Written by builder/writers/texts.py, read by `readers/texts.py`.

`files.texts` (`data/texts.*.bin`, ranged) holds each paper, in reading-list order, as its head and then
its chunks in groups of `GROUP_CHUNKS`, every piece raw-deflated on its own:
- the head (`TextHead`, compact JSON): each chunk's span in the paper's text, each page's span, and each
  group's size and sha256 prefix;
- a group: compact JSON, one entry per chunk: its text, or [text, id] for an id that `chunk_id` does not
  rebuild (a BEIR document's).
Groups deflate against a preset dictionary, the list's commonest words (`files.text_dictionary`, fetched
with the keyword files): small groups then take nearly what whole papers gzipped would (commit f2ce399).
The paper table gives each paper's head size, its whole size and its head's sha256 prefix
(`PaperRecord.text_bytes`, `text_sha256`): the manifest checks the table, the table a head and the head
its groups. The page spans rebuild a cited page's text from the chunks, so a quote is checked on that page.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from array import array
from dataclasses import dataclass, field
from typing import Any

from readingroom_core.ranges import DamagedData

# Chunks a group: larger groups save few bytes and make each read larger, smaller ones deflate worse
# (measured on the mirror's texts in commit f2ce399).
GROUP_CHUNKS = 8
DICTIONARY_BYTES = 32 << 10  # deflate's window: a preset dictionary longer than this is never reached
SHA_DIGITS = 16  # 64 bits of a head's or a group's sha256, as the forward index keeps of its groups


def chunk_id(paper_id: str, start: int, end: int, text: str) -> str:
    """A chunk's id: 64 bits of the sha256 of its paper, span and text. The texts file leaves out the ids
    it can rebuild so, 6% of the texts' bytes (commit a91d93c)."""
    return hashlib.sha256(f"{paper_id}\0{start}\0{end}\0{text}".encode()).hexdigest()[:16]


@dataclass(frozen=True)
class TextChunk:
    """A chunk's text and its character span [start, end) in the paper's text."""

    id: str
    start: int
    end: int
    text: str


@dataclass(frozen=True)
class PageRange:
    """A page's character span [start, end) in the paper's text (pages are 1-based)."""

    page: int
    start: int
    end: int


@dataclass(frozen=True)
class PaperText:
    """A paper's chunks and the span of each of its pages, as the builder hands them to the texts file."""

    id: str
    chunks: tuple[TextChunk, ...]
    pages: tuple[PageRange, ...] = field(default=())


@dataclass(frozen=True)
class TextHead:
    """A paper's chunk spans (start, end pairs, flat), page spans and groups: each (size, sha256 prefix),
    in file order after the head."""

    spans: array[int]
    pages: tuple[PageRange, ...]
    groups: tuple[tuple[int, str], ...]

    def to_json(self) -> dict[str, Any]:
        return {
            "spans": self.spans.tolist(),
            "pages": [[p.page, p.start, p.end] for p in self.pages],
            "groups": [list(group) for group in self.groups],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TextHead:
        return cls(
            array("q", data["spans"]),
            tuple(PageRange(*page) for page in data["pages"]),
            tuple((size, sha) for size, sha in data["groups"]),
        )

    @property
    def chunk_count(self) -> int:
        return len(self.spans) // 2

    def span(self, index: int) -> tuple[int, int]:
        return self.spans[2 * index], self.spans[2 * index + 1]


def chunk_entry(chunk: TextChunk, paper_id: str) -> str | list[str]:
    """A chunk as its group stores it: its text, with its id only where `chunk_id` does not rebuild it."""
    if chunk.id == chunk_id(paper_id, chunk.start, chunk.end, chunk.text):
        return chunk.text
    return [chunk.text, chunk.id]  # an id of another kind (a BEIR document's)


def entry_chunk(entry: Any, paper_id: str, start: int, end: int) -> TextChunk:
    """The chunk a group's entry stores (`chunk_entry`), its span [start, end) from its paper's head."""
    text, explicit = (entry, None) if isinstance(entry, str) else entry
    return TextChunk(explicit or chunk_id(paper_id, start, end, text), start, end, text)


def deflated(data: bytes, dictionary: bytes | None = None) -> bytes:
    """A head (no dictionary) or a group (against the preset dictionary) as stored: raw deflate."""
    packer = (
        zlib.compressobj(9, zlib.DEFLATED, -15, 9, zdict=dictionary)
        if dictionary
        else zlib.compressobj(9, zlib.DEFLATED, -15, 9)
    )
    return packer.compress(data) + packer.flush()


def inflated(data: bytes, dictionary: bytes | None, path: str) -> bytes:
    unpacker = zlib.decompressobj(-15, zdict=dictionary) if dictionary else zlib.decompressobj(-15)
    try:
        plain = unpacker.decompress(data) + unpacker.flush()
    except zlib.error as error:
        raise DamagedData(
            f"{path}: a paper's text could not be decompressed; the site's data is damaged"
        ) from error
    if not unpacker.eof:
        raise DamagedData(f"{path}: a paper's text is cut short; the site's data is damaged")
    return plain


def loaded(plain: bytes, path: str) -> Any:
    try:
        return json.loads(plain)
    except ValueError as error:
        raise DamagedData(f"{path}: a paper's text is not valid JSON; the site's data is damaged") from error
