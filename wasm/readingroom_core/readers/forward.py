"""The forward file read by range (`formats.forward`): the common terms' frequencies in the documents a
keyword query rescores, a checked group of documents at a time."""

from __future__ import annotations

import sys
from array import array
from itertools import accumulate

from readingroom_core.formats.forward import FORWARD_SHA_BYTES
from readingroom_core.formats.postings import TermDirectory, page_values
from readingroom_core.ranges import Block, BlockReader, DamagedData

FORWARD_GAP_BYTES = 1024  # groups this close are read in one request


class ForwardFile:
    """The groups of the documents asked for, and the index that locates and checks them, read whole once
    (with a query's pages where the query will need it: `index_block`)."""

    def __init__(self, directory: TermDirectory, blocks: BlockReader) -> None:
        self.path = directory.forward
        self.group = directory.forward_group
        self.n_docs = directory.n
        self._index = directory.forward_index
        self._reader = blocks
        # the groups' starts, and their sha256 prefixes end to end
        self._starts_shas: tuple[array[int], bytes] | None = None

    @property
    def index_read(self) -> bool:
        return self._starts_shas is not None

    def index_block(self) -> Block:
        path, size, sha = self._index
        return Block(path, 0, size, sha)

    def held_terms(self, doc_ids: list[int]) -> dict[int, dict[int, int]]:
        """Each of the documents' {term rank: frequency} from the forward file, its groups read in one batch."""
        starts, shas = self._forward_index()
        group = self.group
        numbers = sorted({doc_id // group for doc_id in doc_ids})
        width = FORWARD_SHA_BYTES
        blocks = [
            Block(self.path, starts[g], starts[g + 1], shas[g * width : (g + 1) * width].hex())
            for g in numbers
        ]
        wanted = set(doc_ids)
        held: dict[int, dict[int, int]] = {}
        for number, data in zip(numbers, self._reader.read(blocks, FORWARD_GAP_BYTES), strict=True):
            values, at = page_values(data, f"{self.path}: group {number}"), 0
            for doc_id in range(number * group, min((number + 1) * group, self.n_docs)):
                if at >= len(values) or (end := at + 1 + 2 * values[at]) > len(values):
                    raise DamagedData(f"{self.path}: group {number} is cut short")
                if doc_id in wanted:  # rank gaps and frequencies, summed and paired in C, not one by one
                    ranks = accumulate(values[at + 1 : end : 2])
                    held[doc_id] = dict(zip(ranks, values[at + 2 : end : 2], strict=True))
                at = end
            if at != len(values):
                raise DamagedData(f"{self.path}: group {number} does not hold {group} documents")
        return held

    def _forward_index(self) -> tuple[array[int], bytes]:
        if self._starts_shas is None:
            (data,) = self._reader.read([self.index_block()])
            size = self._index[1]
            groups = (size - 4) // (4 + FORWARD_SHA_BYTES)
            starts = array("I")
            starts.frombytes(data[: 4 * (groups + 1)])
            if sys.byteorder != "little":
                starts.byteswap()
            at = 4 * (groups + 1)
            self._starts_shas = (starts, data[at:size])
        return self._starts_shas
