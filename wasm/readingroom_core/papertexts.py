"""Paper texts read by range: a result card, a phrase check or a cited page reads the few chunks it needs,
not its paper's whole text (at 10,000 papers a first-sight query fetched about 250 KB of whole texts).

`files.texts` (`data/texts.*.bin`, ranged) holds each paper, in reading-list order, as its head and then
its chunks in groups of `GROUP_CHUNKS`, every piece raw-deflated on its own:
- the head (`TextHead`, compact JSON): each chunk's span in the paper's text, each page's span, and each
  group's size and sha256 prefix;
- a group: compact JSON, one entry per chunk: its text, or [text, id] for an id that `sitedata.chunk_id`
  does not rebuild (a BEIR document's).
Groups deflate against a preset dictionary, the list's commonest words (`files.text_dictionary`, fetched
with the keyword files): small groups then take about what whole papers gzipped took (the mirror's texts,
groups of 8: 1.25 times without it, 1.05 with it). The paper table gives each paper's head size, its whole
size and its head's sha256 prefix (`PaperRecord.text_bytes`, `text_sha256`): the manifest checks the table,
the table a head and the head its groups. A chunk costs two batches of ranges (`ranges.Announce`): the
heads of the papers named, then the groups.
"""

from __future__ import annotations

import hashlib
import json
import re
import zlib
from array import array
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from readingroom_core.formats.papers import PaperRecord
from readingroom_core.formats.texts import PageRange, PaperText, TextChunk, chunk_id
from readingroom_core.formats.versioned import compact_json
from readingroom_core.lru import Recent
from readingroom_core.ranges import Block, BlockReader, DamagedData

GROUP_CHUNKS = 8  # 16 took 0.95 of the bytes and twice each read; 4 took 1.07 (the mirror's texts)
DICTIONARY_BYTES = 32 << 10  # deflate's window: a preset dictionary longer than this is never reached
DICTIONARY_SAMPLE_CHARS = 8 << 20  # the words counted for it, from chunks spread over the whole list
SHA_DIGITS = 16  # 64 bits of a head's or a group's sha256, as the forward index keeps of its groups
# Heads and decoded groups kept between steps, the least recently used forgotten (engine.forget_past_texts):
# a head is its spans (about 84 chunks a paper) and a group 8 chunks' text, about 10 KB.
KEPT_HEADS = 1024
KEPT_GROUPS = 1024
# Each head and group is its own request, even beside another: the worker reads ahead the very ranges
# `unread` names, and finds a range it fetched only under the same bounds.
ALONE = -1
_WORD_RE = re.compile(r" ?[^\W\d_]+[,.]?")


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


@dataclass(frozen=True)
class TextLocation:
    """Where a paper's text lies in the texts file: its head, then its groups, up to `end`."""

    start: int
    head_end: int
    end: int


# --- writing -------------------------------------------------------------------------------------------


def preset_dictionary(texts: Sequence[str]) -> bytes:
    """The commonest words of `texts` (with their leading space, and a trailing comma or stop), the
    commonest last (deflate reaches near bytes more cheaply), at most DICTIONARY_BYTES; counted over
    about DICTIONARY_SAMPLE_CHARS of texts taken evenly from the whole list."""
    total = sum(map(len, texts))
    step = max(1, -(-total // DICTIONARY_SAMPLE_CHARS))
    counts: Counter[str] = Counter()
    for text in texts[::step]:
        counts.update(_WORD_RE.findall(text))
    words, size = [], 0
    for word, _ in counts.most_common():
        words.append(word)
        size += len(word.encode("utf-8"))
        if size >= DICTIONARY_BYTES:
            break
    return "".join(reversed(words)).encode("utf-8")[-DICTIONARY_BYTES:]


def texts_file_bytes(
    texts: Sequence[PaperText], dictionary: bytes
) -> tuple[bytes, list[tuple[int, int, str]]]:
    """The texts file, and for each paper (its head's size, its whole size, its head's sha256 prefix)."""
    parts: list[bytes] = []
    located = []
    for text in texts:
        groups = [
            _deflated(
                compact_json([_chunk_entry(chunk, text.id) for chunk in text.chunks[at : at + GROUP_CHUNKS]]),
                dictionary,
            )
            for at in range(0, len(text.chunks), GROUP_CHUNKS)
        ]
        head = TextHead(
            array("q", [value for chunk in text.chunks for value in (chunk.start, chunk.end)]),
            text.pages,
            tuple((len(group), _sha(group)) for group in groups),
        )
        head_bytes = _deflated(compact_json(head.to_json()))
        parts += [head_bytes, *groups]
        located.append((len(head_bytes), len(head_bytes) + sum(map(len, groups)), _sha(head_bytes)))
    return b"".join(parts), located


def _chunk_entry(chunk: TextChunk, paper_id: str) -> str | list[str]:
    if chunk.id == chunk_id(paper_id, chunk.start, chunk.end, chunk.text):
        return chunk.text
    return [chunk.text, chunk.id]  # an id of another kind (a BEIR document's)


def _deflated(data: bytes, dictionary: bytes | None = None) -> bytes:
    packer = (
        zlib.compressobj(9, zlib.DEFLATED, -15, 9, zdict=dictionary)
        if dictionary
        else zlib.compressobj(9, zlib.DEFLATED, -15, 9)
    )
    return packer.compress(data) + packer.flush()


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:SHA_DIGITS]


# --- reading -------------------------------------------------------------------------------------------


class PaperTexts:
    """Chunks' texts and pages' texts, read by range through the engine's `BlockReader` and kept decoded
    (heads and groups, bounded) between steps."""

    def __init__(
        self,
        path: str,
        dictionary: bytes,
        papers: Sequence[PaperRecord],
        paper_of: Sequence[int],
        blocks: BlockReader,
    ) -> None:
        self.path = path
        self._dictionary = dictionary
        self._papers = papers
        self._paper_of = paper_of
        self._blocks = blocks
        starts = [0, *accumulate(paper.text_bytes[1] for paper in papers)]
        self._locations = [
            TextLocation(start, start + paper.text_bytes[0], end)
            for paper, start, end in zip(papers, starts, starts[1:], strict=False)
        ]
        self._heads: Recent[int, TextHead] = Recent(KEPT_HEADS)  # paper index -> its head
        self._groups: Recent[tuple[int, int], tuple[TextChunk, ...]] = Recent(KEPT_GROUPS)

    def chunk(self, doc_id: int) -> TextChunk:
        """The chunk's text and span (its paper's head, then its group, each read once while kept)."""
        paper_index = self._paper_of[doc_id]
        position = doc_id - self._papers[paper_index].first_chunk
        group = self._groups.get((paper_index, position // GROUP_CHUNKS))
        if group is None:
            self.read([doc_id])
            group = self._groups[(paper_index, position // GROUP_CHUNKS)]
        return group[position % GROUP_CHUNKS]

    def read(self, doc_ids: Iterable[int]) -> None:
        """Reads what these chunks need and is not kept: the heads in one batch, then the groups in one."""
        wanted = [(self._paper_of[doc_id], doc_id) for doc_id in doc_ids]
        self._read_heads(paper_index for paper_index, _ in wanted)
        groups = {
            (paper_index, (doc_id - self._papers[paper_index].first_chunk) // GROUP_CHUNKS)
            for paper_index, doc_id in wanted
        }
        self._read_groups(groups)

    def head(self, paper_index: int) -> TextHead:
        self._read_heads([paper_index])
        return self._heads[paper_index]

    def read_pages(self, pages_of: Mapping[int, Iterable[int]]) -> None:
        """Reads what `page_texts` needs for these papers' pages (paper index -> pages) in two batches:
        their heads, then the groups that cover the pages (one at a time, each paper would cost a round
        trip of its own)."""
        self._read_heads(pages_of.keys())
        self.read(
            doc_id for paper_index, pages in pages_of.items() for doc_id in self._covering(paper_index, pages)
        )

    def page_texts(self, paper_index: int, pages: Sequence[int]) -> dict[int, str]:
        """Each listed page's text, rebuilt from the chunks that cover it (only their groups are read);
        text no chunk covers (the bibliography) shows as an ellipsis line."""
        spans = {page.page: (page.start, page.end) for page in self.head(paper_index).pages}
        covering = self._covering(paper_index, pages)
        self.read(covering)
        chunks = sorted((self.chunk(doc_id) for doc_id in covering), key=lambda c: c.start)
        texts = {}
        for page in pages:
            if page not in spans:
                continue
            start, end = spans[page]
            parts: list[str] = []
            cursor = start
            for chunk in chunks:
                if chunk.end <= cursor or chunk.start >= end:
                    continue
                begin = max(chunk.start, cursor)
                if begin > cursor and parts:
                    parts.append("\n\u2026\n")
                stop = min(chunk.end, end)
                parts.append(chunk.text[begin - chunk.start : stop - chunk.start])
                cursor = stop
            texts[page] = "".join(parts).strip()
        return texts

    def _covering(self, paper_index: int, pages: Iterable[int]) -> list[int]:
        """The doc ids of the paper's chunks that hold some of these pages' text."""
        head = self.head(paper_index)
        spans = {page.page: (page.start, page.end) for page in head.pages}
        wanted = [spans[page] for page in pages if page in spans]
        first = self._papers[paper_index].first_chunk
        return [
            first + index
            for index in range(head.chunk_count)
            if any(head.spans[2 * index] < end and head.spans[2 * index + 1] > start for start, end in wanted)
        ]

    def page_breaks(self, doc_id: int) -> tuple[tuple[int, int], ...]:
        """(offset in the chunk's text, page) of each page that starts inside the chunk."""
        paper_index = self._paper_of[doc_id]
        start, end = self.head(paper_index).span(doc_id - self._papers[paper_index].first_chunk)
        return tuple(
            (page.start - start, page.page)
            for page in self.head(paper_index).pages
            if start < page.start < end
        )

    def unread(self, doc_ids: Iterable[int]) -> list[Block]:
        """What reading these chunks would fetch next, in order: the heads not kept, then the groups not
        kept of the papers whose heads are (the worker fetches them ahead while the query is embedded)."""
        heads: dict[int, Block] = {}
        groups: dict[tuple[int, int], Block] = {}
        for doc_id in doc_ids:
            paper_index = self._paper_of[doc_id]
            head = self._heads.get(paper_index)
            if head is None:
                heads.setdefault(paper_index, self._head_block(paper_index))
                continue
            number = (doc_id - self._papers[paper_index].first_chunk) // GROUP_CHUNKS
            if (paper_index, number) not in self._groups:
                groups.setdefault((paper_index, number), self._group_block(paper_index, head, number))
        return [*heads.values(), *groups.values()]

    def trim(self) -> None:
        """Heads and groups past their bounds, the least recently used: once a step is done, never within
        one (a step that forgot what it read would name it again round after round)."""
        self._heads.trim()
        self._groups.trim()

    def _read_heads(self, paper_indexes: Iterable[int]) -> None:
        missing = []
        for index in set(paper_indexes):
            if index in self._heads:
                self._heads[index]  # now the most recently used
            else:
                missing.append(index)
        missing.sort()
        found = self._blocks.read([self._head_block(index) for index in missing], gap=ALONE, keep=False)
        for index, data in zip(missing, found, strict=True):
            head = TextHead.from_json(_load(_inflated(data, None, self.path), self.path))
            if head.chunk_count != self._papers[index].chunk_count:
                raise ValueError(
                    f"{self.path}: paper {self._papers[index].id}'s text does not hold the chunks the paper table lists"
                )
            self._heads[index] = head

    def _read_groups(self, groups: set[tuple[int, int]]) -> None:
        missing = []
        for group in groups:
            if group in self._groups:
                self._groups[group]  # now the most recently used
            else:
                missing.append(group)
        missing.sort()
        blocks = [self._group_block(index, self._heads[index], number) for index, number in missing]
        found = self._blocks.read(blocks, gap=ALONE, keep=False)
        for (index, number), data in zip(missing, found, strict=True):
            self._groups[(index, number)] = self._decoded_group(index, number, data)

    def _head_block(self, paper_index: int) -> Block:
        location = self._locations[paper_index]
        return Block(self.path, location.start, location.head_end, self._papers[paper_index].text_sha256)

    def _group_block(self, paper_index: int, head: TextHead, number: int) -> Block:
        start = self._locations[paper_index].head_end + sum(size for size, _ in head.groups[:number])
        size, sha = head.groups[number]
        return Block(self.path, start, start + size, sha)

    def _decoded_group(self, paper_index: int, number: int, data: bytes) -> tuple[TextChunk, ...]:
        paper = self._papers[paper_index]
        head = self._heads[paper_index]
        entries = _load(_inflated(data, self._dictionary, self.path), self.path)
        first = number * GROUP_CHUNKS
        if not isinstance(entries, list) or len(entries) != min(GROUP_CHUNKS, head.chunk_count - first):
            raise ValueError(
                f"{self.path}: a group of paper {paper.id} does not hold the chunks its head lists"
            )
        chunks = []
        for index, entry in enumerate(entries, first):
            text, explicit = (entry, None) if isinstance(entry, str) else entry
            start, end = head.span(index)
            chunks.append(TextChunk(explicit or chunk_id(paper.id, start, end, text), start, end, text))
        return tuple(chunks)


def _inflated(data: bytes, dictionary: bytes | None, path: str) -> bytes:
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


def _load(plain: bytes, path: str) -> Any:
    try:
        return json.loads(plain)
    except ValueError as error:
        raise DamagedData(f"{path}: a paper's text is not valid JSON; the site's data is damaged") from error
