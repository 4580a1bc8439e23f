"""The papers' texts read by range (`formats.texts`): a chunk costs two batches of ranges
(`ranges.Announce`): the heads of the papers named, then the groups; both are kept decoded, bounded,
between steps.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate

from readingroom_core.formats.papers import PaperRecord
from readingroom_core.formats.texts import GROUP_CHUNKS, TextChunk, TextHead, entry_chunk, inflated, loaded
from readingroom_core.lru import Recent
from readingroom_core.ranges import Block, BlockReader

# Heads and decoded groups kept between steps, the least recently used forgotten (engine.forget_past_texts):
# a head is its spans (about 84 chunks a paper) and a group 8 chunks' text, about 10 KB.
KEPT_HEADS = 1024
KEPT_GROUPS = 1024
# Each head and group is its own request, even beside another: the worker reads ahead the very ranges
# `unread` names, and finds a range it fetched only under the same bounds.
ALONE = -1


@dataclass(frozen=True)
class TextLocation:
    """Where a paper's text lies in the texts file: its head, then its groups, up to `end`."""

    start: int
    head_end: int
    end: int


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
            head = TextHead.from_json(loaded(inflated(data, None, self.path), self.path))
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
        entries = loaded(inflated(data, self._dictionary, self.path), self.path)
        first = number * GROUP_CHUNKS
        if not isinstance(entries, list) or len(entries) != min(GROUP_CHUNKS, head.chunk_count - first):
            raise ValueError(
                f"{self.path}: a group of paper {paper.id} does not hold the chunks its head lists"
            )
        chunks = []
        for index, entry in enumerate(entries, first):
            chunks.append(entry_chunk(entry, paper.id, *head.span(index)))
        return tuple(chunks)
