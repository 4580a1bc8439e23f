"""Dense search a query reads by range (`formats.dense`): coarse lists of 1-bit codes, then int8 rescoring
of the best.

A query scores the centroids, reads the nearest lists holding `scan` rows, ranks their rows by the product
with the query that a list's mean, a row's code and its weight estimate (`code_scorer`), and rescores the
best `rescore` by their int8 rows, read by range, with the exact cosine the HNSW reader computes
(`readers/hnsw.py`: the query held as 15-bit integers), and with them the rows between them that the same
requests bring. With every list probed and every row rescored, the search is exact over the int8 rows. A
filter that allows few chunks (one paper: "Search in this paper") reads the lists that hold them, found in
the list-of file, instead of widening the scan until enough are found, which at 10,000 papers read every
list (commit ebe1f53).
"""

from __future__ import annotations

import heapq
import math
import sys
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from readingroom_core.formats.dense import LIST_OF_BLOCK_DOCS, ROW_SHA_BYTES, DenseDirectory
from readingroom_core.lru import LastResult, Recent
from readingroom_core.packedrows import PackedRows, integer_query
from readingroom_core.ranges import Block, BlockReader
from readingroom_core.readers.hnsw import QUERY_RESOLUTION, dot

# Rows whose codes a query scores (the nearest lists until they hold this many) and rows it rescores;
# 0 is all. A budget in rows, not lists, so the bytes a query reads do not grow with the list count
# (lists hold ~sqrt(N) rows). The fewest bytes that keep recall@10 near the exact int8 scan on the tuning
# questions at 10,000 papers; a wider scan helps the 1,000-paper list's held-out questions too little to
# pay its bytes (scripts/ranged_search_study.py, removed in cf98ed9, last version at 68a4b03; commits
# e17c62e and 4d9db53; what they give now: docs/measurements/scale.json).
DEFAULT_SCAN = 2560
DEFAULT_RESCORE = 140
# A row's residual estimate errs in proportion to its residual's size (RaBitQ's bound: |r| |q| / sqrt(D)
# up to a constant), so rows are ranked for rescoring by the estimate plus this many times its weight
# times the query's norm: a row that may be near is rescored rather than dropped. Chosen on the tuning
# questions at 10,000 papers, where values near 1 do equally well (commit 32589ef).
OPTIMISM = 1.0
# Rows this close are read in one request, the bytes between thrown away; lists likewise (the build
# chains similar lists side by side).
ROW_GAP_BYTES = 4096
LIST_GAP_BYTES = 8192
# Lists kept decoded between queries: at 10,000 papers (128 rows a list) about 35 KB each in CPython, so
# about 35 MB, what some twenty-five queries read, a bound the worker's heap affords (`lru`; commits
# 39f58e6 and 4d9db53).
KEPT_LISTS = 1024


@dataclass(frozen=True)
class ListData:
    """One list as read: its rows' doc ids, their codes as integers, their residual weights, and the sha256
    prefixes of its row blocks, end to end. The doc ids and prefixes are packed, since as a list of ints
    and hex strings they outweighed the codes (commit 0dafd2f); the codes stay integers, since making
    them from the bytes at each scan saved little memory for a slower scan (commit 4020d5a)."""

    doc_ids: array[int]
    codes: list[int]
    weights: bytes
    row_shas: bytes

    def row_sha(self, block: int) -> str:
        return self.row_shas[block * ROW_SHA_BYTES : (block + 1) * ROW_SHA_BYTES].hex()


def signed(data: bytes) -> list[int]:
    return array("b", data).tolist()


def fine_query(query: Sequence[float]) -> list[int]:
    """The query as integers, its largest component at +-32767 (as `readers.hnsw.UsearchFile.search` holds
    it)."""
    return integer_query(query, QUERY_RESOLUTION)[0]


QUERY_PLANES = 6  # bits of the query held against the 1-bit codes


def code_scorer(fine: Sequence[int]) -> Callable[[int], int]:
    """The query's product with a code's row of +-1 (bit i set: +1), in the query's units: the query in
    QUERY_PLANES bit planes, so a code costs a few popcounts.

    With q_i ~ step * (offset + level_i) and level_i = sum_b 2^b * plane_b(i), the sum over the set bits
    is offset * popcount(code) + sum_b 2^b * popcount(plane_b & code); the +-1 product is twice that less
    the sum over every bit. Asymmetric (the query keeps its magnitudes) it ranks far better than the
    Hamming distance of signs.
    """
    low, high = min(fine), max(fine)
    step = max(1, -(-(high - low) // ((1 << QUERY_PLANES) - 1)))
    levels = [(value - low) // step for value in fine]
    planes = []
    for bit in range(QUERY_PLANES):
        plane = 0
        for i, level in enumerate(levels):
            if level >> bit & 1:
                plane |= 1 << i
        planes.append(plane)
    offset = low // step
    every_bit = sum(levels) + offset * len(fine)
    p0, p1, p2, p3, p4, p5 = planes  # QUERY_PLANES of them

    def product(code: int) -> int:  # unrolled: a generator over the planes took half as long again
        set_bits = (
            offset * code.bit_count()
            + (p0 & code).bit_count()
            + 2 * (p1 & code).bit_count()
            + 4 * (p2 & code).bit_count()
            + 8 * (p3 & code).bit_count()
            + 16 * (p4 & code).bit_count()
            + 32 * (p5 & code).bit_count()
        )
        return step * (2 * set_bits - every_bit)

    return product


class DenseLists:
    """Coarse lists, codes and rescoring over the ranged files; lists and row blocks read once each."""

    def __init__(self, directory: DenseDirectory, blocks: BlockReader) -> None:
        self.directory = directory
        self.size = sum(entry.count for entry in directory.lists)
        self._reader = blocks
        self._centroids = PackedRows(directory.centroids, directory.dims)
        self._centroid_norms = [
            1 / math.sqrt(square) if square else 0.0 for square in self._centroids.squares
        ]
        self._lists: Recent[int, ListData] = Recent(KEPT_LISTS)  # decoded, those of recent queries
        self._last_search: LastResult[tuple[Any, ...], list[tuple[int, float]]] = LastResult()
        self._last_products: LastResult[tuple[int, ...], Sequence[int]] = LastResult()
        self._last_scan: LastResult[tuple[Any, ...], list[tuple[float, int, int, int]]] = LastResult()

    def nearest_lists(self, products: Sequence[int], scan: int) -> list[int]:
        """The lists whose centroids are closest in cosine (from the query's `products` with them), nearest
        first (ties: the lower number), until they hold `scan` rows (0: every list). Only the best few are
        ordered, about twice as many as hold `scan` rows on average: at 10,000 papers ordering all 6,579
        took several times as long (commit a9f17ef)."""
        count = len(self._centroid_norms)
        if scan <= 0 or scan >= self.size:
            return list(range(count))
        scores = [product * norm for product, norm in zip(products, self._centroid_norms, strict=True)]
        wanted = 2 * -(-scan * count // self.size) + 8
        while True:
            best = heapq.nlargest(min(wanted, count), range(count), key=scores.__getitem__)  # stable
            chosen, rows = [], 0
            for number in best:
                chosen.append(number)
                rows += self.directory.lists[number].count
                if rows >= scan:
                    return chosen
            if wanted >= count:
                return chosen
            wanted *= 4

    def every_row(self) -> list[list[int]]:
        """Every passage's int8 row, by doc id (each list and row block read once): for a benchmark that
        needs the stored rows themselves."""
        numbers = list(range(len(self.directory.lists)))
        slots = [
            (n, p)
            for n, data in zip(numbers, self._read_lists(numbers), strict=True)
            for p in range(len(data.doc_ids))
        ]
        by_doc = {
            self._lists[n].doc_ids[p]: row for (n, p), row in zip(slots, self._rows(slots), strict=True)
        }
        return [by_doc[doc_id] for doc_id in range(len(by_doc))]

    def _read_lists(self, numbers: Sequence[int]) -> list[ListData]:
        wanted = [n for n in numbers if n not in self._lists]
        entries = [self.directory.lists[n] for n in wanted]
        blocks = [Block(self.directory.lists_file, e.start, e.end, e.sha256) for e in entries]
        code_bytes = self.directory.dims // 8
        for number, entry, data in zip(
            wanted, entries, self._reader.read(blocks, gap=LIST_GAP_BYTES, keep=False), strict=True
        ):
            m = entry.count
            doc_ids = array("I")
            doc_ids.frombytes(data[: 4 * m])
            if sys.byteorder != "little":
                doc_ids.byteswap()
            codes_at = 4 * m
            codes = [
                int.from_bytes(data[codes_at + i * code_bytes : codes_at + (i + 1) * code_bytes], "little")
                for i in range(m)
            ]
            weights_at = codes_at + m * code_bytes
            shas_at = weights_at + m
            self._lists[number] = ListData(doc_ids, codes, data[weights_at:shas_at], data[shas_at:])
        return [self._lists[n] for n in numbers]

    def search(
        self,
        query: Sequence[float],
        limit: int,
        scan: int = DEFAULT_SCAN,
        rescore: int = DEFAULT_RESCORE,
        allowed: Callable[[int], bool] | None = None,
        widen: bool = True,
        allowed_docs: Sequence[int] | None = None,
    ) -> list[tuple[int, float]]:
        """Nearest `limit` (doc id, cosine) among the allowed; with `widen`, more rows are scanned while too
        few are allowed (up to every list: the whole lists file), or, where the allowed chunks are listed
        (`allowed_docs`) and few, the lists that hold them are read instead (`reads_holders`)."""
        if len(query) != self.directory.dims:
            raise ValueError(f"query has {len(query)} dimensions, the index has {self.directory.dims}")
        key = (tuple(query), limit, scan, rescore, allowed, widen, allowed_docs)
        found = self._last_search.get(
            key, lambda: self._widening(query, limit, scan, rescore, allowed, widen, allowed_docs)
        )
        # past lists go once the search is done, never between the runs of its step: the block cache does
        # not hold the lists (`_read_lists`), so a list forgotten there would be fetched again
        self._lists.trim()
        return found

    def _widening(
        self,
        query: Sequence[float],
        limit: int,
        scan: int,
        rescore: int,
        allowed: Callable[[int], bool] | None,
        widen: bool,
        allowed_docs: Sequence[int] | None,
    ) -> list[tuple[int, float]]:
        """The search `search` keeps for the runs of its step after the first (`lru.LastResult`)."""
        fine = fine_query(query)
        products = self._last_products.get(tuple(fine), lambda: self._centroids.products(fine))
        while True:
            numbers = self.nearest_lists(products, scan)
            found = self._search(fine, products, limit, numbers, rescore, allowed)
            if len(found) >= limit or not widen or scan <= 0 or scan >= self.size:
                return found
            if allowed_docs is not None and self.reads_holders(len(allowed_docs), limit):
                return self._search(fine, products, limit, self.lists_holding(allowed_docs), rescore, allowed)
            scan *= 2

    def reads_holders(self, allowed: int, limit: int) -> bool:
        """Whether reading the lists that hold `allowed` chunks costs less than widening the scan: those
        are about `allowed` lists (when fewer than the lists), while widening reads about lists * limit /
        allowed of them before `limit` are found (all of them when fewer are allowed)."""
        lists = len(self.directory.lists)
        return bool(self.directory.list_of_file) and allowed * min(allowed, lists) <= lists * limit

    def lists_holding(self, doc_ids: Sequence[int]) -> list[int]:
        """The numbers of the lists that hold these chunks, from the list-of file's blocks (read by range)."""
        d = self.directory
        wanted = sorted({doc_id // LIST_OF_BLOCK_DOCS for doc_id in doc_ids})
        blocks = []
        for number in wanted:
            start = 2 * number * LIST_OF_BLOCK_DOCS
            end = 2 * min((number + 1) * LIST_OF_BLOCK_DOCS, self.size)
            blocks.append(Block(d.list_of_file, start, end, d.list_of_blocks[number]))
        by_block = {}
        for number, data in zip(wanted, self._reader.read(blocks), strict=True):
            numbers = array("H")
            numbers.frombytes(data)
            if sys.byteorder != "little":
                numbers.byteswap()
            by_block[number] = numbers
        return sorted(
            {by_block[doc_id // LIST_OF_BLOCK_DOCS][doc_id % LIST_OF_BLOCK_DOCS] for doc_id in doc_ids}
        )

    def _search(
        self,
        fine: list[int],
        products: Sequence[int],
        limit: int,
        numbers: Sequence[int],
        rescore: int,
        allowed: Callable[[int], bool] | None,
    ) -> list[tuple[int, float]]:
        """The best `rescore` rows of these lists by their optimistic estimate of the product with the
        query (the list mean's, plus the residual's: its code's times its weight, plus OPTIMISM times
        the weight times the query's norm), rescored exactly."""
        lists = self._read_lists(numbers)
        # scored before the rows are read: the run after their fetch finds the scan done
        key = (tuple(fine), tuple(numbers), limit, rescore, allowed)
        ranked = self._last_scan.get(
            key, lambda: self._scan(fine, products, limit, numbers, lists, rescore, allowed)
        )
        wanted = self._with_rows_between(
            [(number, position) for _, _, number, position in ranked], set(numbers), allowed
        )
        rows = self._rows(wanted)
        inverse_query = 1 / math.sqrt(dot(fine, fine))
        scored = []
        for (number, position), row in zip(wanted, rows, strict=True):
            doc_id = self._lists[number].doc_ids[position]
            square = dot(row, row)
            inverse_row = 1 / math.sqrt(square) if square else 0.0
            scored.append((doc_id, 1.0 - (1.0 - dot(fine, row) * inverse_query * inverse_row)))
        scored.sort(key=lambda pair: (-pair[1], pair[0]))
        return scored[:limit]

    def _scan(
        self,
        fine: list[int],
        products: Sequence[int],
        limit: int,
        numbers: Sequence[int],
        lists: Sequence[ListData],
        rescore: int,
        allowed: Callable[[int], bool] | None,
    ) -> list[tuple[float, int, int, int]]:
        """The best `max(rescore, limit)` rows of these lists (all for `rescore` 0) by their estimate, as
        (minus the estimated product, doc id, list number, position in the list)."""
        product_of = code_scorer(fine)
        d = self.directory
        optimism = OPTIMISM * math.sqrt(dot(fine, fine))
        ranked = []
        for number, data in zip(numbers, lists, strict=True):
            mean = products[number] * d.centroid_scale
            for position, (doc_id, code, weight) in enumerate(
                zip(data.doc_ids, data.codes, data.weights, strict=True)
            ):
                if allowed is None or allowed(doc_id):
                    estimate = mean + weight * d.residual_scale * (product_of(code) + optimism)
                    ranked.append((-estimate, doc_id, number, position))
        keep = max(rescore, limit) if rescore > 0 else len(ranked)
        if keep < len(ranked):
            ranked = heapq.nsmallest(keep, ranked)
        return ranked

    def _with_rows_between(
        self, wanted: Sequence[tuple[int, int]], read: set[int], allowed: Callable[[int], bool] | None
    ) -> list[tuple[int, int]]:
        """`wanted` (list, position)s and the allowed rows of the `read` lists lying between two of them less than
        ROW_GAP_BYTES apart: one request reads them anyway, so they are rescored too rather than thrown
        away, which lets fewer rows be rescored for the same recall (commit b392f89)."""
        d = self.directory
        gap_rows = ROW_GAP_BYTES // d.dims
        ordered = sorted(set(wanted), key=lambda at: d.lists[at[0]].first_slot + at[1])
        found = list(ordered)
        for (number, position), (last, end) in pairwise(ordered):
            between = d.lists[last].first_slot + end - d.lists[number].first_slot - position - 1
            if not 0 < between <= gap_rows or any(n not in read for n in range(number, last + 1)):
                continue
            for _ in range(between):
                position += 1
                while position >= d.lists[number].count:
                    number, position = number + 1, 0
                if allowed is None or allowed(self._lists[number].doc_ids[position]):
                    found.append((number, position))
        return found

    def _rows(self, wanted: Sequence[tuple[int, int]]) -> list[list[int]]:
        """The int8 rows at these (list, position)s, read by range block by block and checked."""
        d = self.directory
        row_bytes, per_block = d.dims, d.block_rows
        blocks = {}
        for number, position in wanted:
            entry, block = d.lists[number], position // per_block
            if (number, block) not in blocks:
                first = entry.first_slot + block * per_block
                rows = min(per_block, entry.count - block * per_block)
                start = first * row_bytes
                sha = self._lists[number].row_sha(block)
                blocks[(number, block)] = Block(d.rows_file, start, start + rows * row_bytes, sha)
        data = dict(zip(blocks, self._reader.read(list(blocks.values()), gap=ROW_GAP_BYTES), strict=True))
        found = []
        for number, position in wanted:
            raw = data[(number, position // per_block)]
            at = (position % per_block) * row_bytes
            found.append(signed(raw[at : at + row_bytes]))
        return found
