"""Read a usearch 2.26.6 HNSW file (cosine, int8: `formats.hnsw`) and search it the way usearch does, in pure
Python.

The site's search does not read this file (it needs the whole of it: 3.6 MB gzipped at 112 papers); it
reads the same int8 rows by range through `readers.dense`, whose rescoring computes this module's cosine.
The file is written (builder/writers/hnsw.py) for other tools, and this reader measures it
(scripts/bench_build.py). It runs in CPython and Pyodide alike; Pyodide has no numpy, so every
distance is one `math.sumprod` (3.12+) or `sum(map(mul, ...))` over a 384-byte row. Rows are kept as
offset-binary `bytes` (value + 128): iterating bytes yields cached small ints, which is the fastest
row type measured, and the offset is undone with precomputed per-row sums.

`search` keeps the float query's precision (as 15-bit integers, see there) and scores it against the
int8 rows (asymmetric). It walks the graph exactly like usearch, with better distances. On MiniLM
passages it finds the top 10 against exact float32 as well as rescoring thousands of int8-query
candidates, so no separate rescoring step is needed (scripts/quantization_study.py, removed in cf98ed9,
last version at 9701116).

Distances are asked for in batches (the unvisited neighbours of one node), and the integer dot products
behind them may come from outside Python (`use_row_products`): the browser's worker computes them with
typed arrays, about ten times faster a row than `sumprod` in Pyodide (commits 173101d and da3c8ee).
They are exact integers, so the distances, and with them the walk and the ranking, are the same bit for
bit; only the arithmetic moved.
"""

from __future__ import annotations

import math
import struct
import sys
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Sequence
from heapq import heappop, heappush
from operator import mul

from readingroom_core.formats.hnsw import (
    DENSE_HEAD,
    DENSE_HEAD_SIZE,
    GRAPH_HEAD,
    KEY_U64,
    MAGIC,
    METRIC_COS,
    PINNED_VERSION,
    ROWS_AT,
    SCALAR_I8,
    SCALAR_NAMES,
    SLOT_U32,
)

if sys.version_info >= (3, 12):
    dot = math.sumprod
else:

    def dot(a: Iterable[float], b: Iterable[float]) -> float:
        """The dot product where `math.sumprod` is missing (CPython 3.11)."""
        products: Iterator[float] = map(mul, a, b)
        return sum(products)


OFFSET = 128
QUERY_RESOLUTION = 32767  # largest query component in `search`, as an integer
_TO_OFFSET_BINARY = bytes((i ^ 0x80) for i in range(256))  # two's-complement int8 -> value + 128
_PRODUCTS_CHECK_ROWS = 64  # rows `use_row_products` compares with Python's own products

Distances = Callable[[Sequence[int]], list[float]]  # cosine distances of the query to these row slots
# Given the query as integers, a function from row slots to each row's exact dot product with it, the
# rows taken as signed int8 (`int8_rows`). Every product is an integer of magnitude < 2**31
# (384 * 32767 * 128), so a float64 or int32 implementation is exact.
RowProducts = Callable[[list[int]], Callable[[Sequence[int]], Sequence[int | float]]]


class UsearchFormatError(ValueError):
    """The bytes are not an index this reader can search; the message says what to rebuild."""


class UsearchFile:
    """One HNSW index held in memory: rows, per-row norms, and the graph read lazily from the bytes."""

    def __init__(self, data: bytes) -> None:
        self._data = data = bytes(data)
        self._parse_header(data)
        self._rows = self.int8_rows().translate(_TO_OFFSET_BINARY)
        self._inverse_norms = self._row_norms()
        self._slot_of_key = {key: slot for slot, key in enumerate(self.keys)}
        self._key_norms: dict[int, float] = {}  # of the signed rows, as `exact_search` meets them
        self._row_products: RowProducts = self._python_row_products
        if len(self._slot_of_key) != self.size:
            raise UsearchFormatError(
                "index holds duplicate keys (a multi-key index); rebuild with unique keys"
            )

    @classmethod
    def from_bytes(cls, data: bytes) -> UsearchFile:
        return cls(data)

    def _parse_header(self, data: bytes) -> None:
        if len(data) < 8:
            raise UsearchFormatError(f"file is {len(data)} bytes, too short for a usearch index")
        rows, row_bytes = struct.unpack_from("<II", data, 0)
        head = ROWS_AT + rows * row_bytes
        if data[head : head + 7] != MAGIC:
            raise UsearchFormatError(
                "no 'usearch' magic after the vector block: not a usearch 2.x index saved with 32-bit "
                "dimensions (or the file is truncated/corrupted); rebuild it with builder/writers/hnsw.py"
            )
        if len(data) < head + DENSE_HEAD_SIZE + GRAPH_HEAD.size:
            raise UsearchFormatError("file ends inside the index header; it is truncated, rebuild it")
        (_, major, minor, patch, metric, scalar, key_kind, slot_kind, present, deleted, dims, multi) = (
            DENSE_HEAD.unpack_from(data, head)
        )
        version = (major, minor, patch)
        if major != PINNED_VERSION[0]:
            raise UsearchFormatError(f"usearch file format major version {major} is not supported (need 2)")
        if version != PINNED_VERSION:
            raise UsearchFormatError(
                f"index written by usearch {'.'.join(map(str, version))}, but this reader is pinned to "
                f"{'.'.join(map(str, PINNED_VERSION))} (its int8 cast rule is not recorded in the file); "
                f"rebuild with usearch=={'.'.join(map(str, PINNED_VERSION))}"
            )
        if metric != METRIC_COS:
            raise UsearchFormatError(f"index metric is {chr(metric)!r}, expected 'c' (cosine)")
        if scalar != SCALAR_I8:
            kind = SCALAR_NAMES.get(scalar, f"code {scalar}")
            raise UsearchFormatError(f"index stores {kind} vectors, expected i8; rebuild with dtype='i8'")
        if (key_kind, slot_kind) != (KEY_U64, SLOT_U32):
            raise UsearchFormatError(
                f"unsupported key/slot types (codes {key_kind}/{slot_kind}); need u64/u32"
            )
        if deleted or multi:
            raise UsearchFormatError(
                "index has removed entries or multiple vectors per key; rebuild it clean"
            )
        if dims != row_bytes or present != rows:
            raise UsearchFormatError(
                f"header says {present} vectors of {dims} dimensions but the vector block holds "
                f"{rows} rows of {row_bytes} bytes; the file is corrupted"
            )
        self.size = rows
        self.dimensions = dims
        self._parse_graph(data, head + DENSE_HEAD_SIZE)

    def _parse_graph(self, data: bytes, graph: int) -> None:
        """The graph's header and level table, and where each node's record starts."""
        rows = self.size
        size, connectivity, connectivity_base, max_level, entry = GRAPH_HEAD.unpack_from(data, graph)
        if size != rows:
            raise UsearchFormatError(f"graph holds {size} nodes but {rows} vectors; the file is corrupted")
        self.connectivity = connectivity
        self.connectivity_base = connectivity_base
        self._max_level: int = max_level
        self._entry_slot: int = entry
        self._base_block = 4 + 4 * connectivity_base
        self._upper_block = 4 + 4 * connectivity
        levels_at = graph + GRAPH_HEAD.size
        if len(data) < levels_at + 2 * rows:
            raise UsearchFormatError("file ends inside the graph's level table; it is truncated, rebuild it")
        levels = struct.unpack_from(f"<{rows}h", data, levels_at)
        offset = levels_at + 2 * rows
        offsets = []
        for level in levels:
            offsets.append(offset)
            offset += 10 + self._base_block + level * self._upper_block
        if offset != len(data):
            raise UsearchFormatError(
                f"node records end at byte {offset} but the file has {len(data)} bytes; it is corrupted"
            )
        if rows and not (0 <= entry < rows and 0 <= max_level == max(levels)):
            raise UsearchFormatError("graph entry point or top level is out of range; the file is corrupted")
        self._node_offsets = offsets
        self._levels = levels
        self.keys = tuple(struct.unpack_from("<Q", data, at)[0] for at in offsets)

    def _row_norms(self) -> list[float]:
        """1/norm of every row, once at load: most of a distance's cost otherwise."""
        dims, rows = self.dimensions, self._rows
        inverse_norms = []
        for start in range(0, self.size * dims, dims):
            row = rows[start : start + dims]
            square = dot(row, row) - 2 * OFFSET * sum(row) + OFFSET * OFFSET * dims  # undo the +128
            inverse_norms.append(1 / math.sqrt(square) if square else 0.0)
        return inverse_norms

    def int8_rows(self) -> bytes:
        """The stored rows, slot by slot (`keys[slot]` is each row's key), as signed int8 bytes."""
        return self._data[ROWS_AT : ROWS_AT + self.size * self.dimensions]

    def vector(self, key: int) -> list[int]:
        """The stored int8 row of `key`."""
        slot = self._slot_of_key.get(key)
        if slot is None:
            raise KeyError(f"key {key} is not in the index")
        start = ROWS_AT + slot * self.dimensions
        return memoryview(self._data)[start : start + self.dimensions].cast("b").tolist()

    def _neighbors(self, slot: int, level: int) -> tuple[int, ...]:
        at = self._node_offsets[slot] + 10
        capacity = self.connectivity_base
        if level:
            at += self._base_block + (level - 1) * self._upper_block
            capacity = self.connectivity
        (count,) = struct.unpack_from("<I", self._data, at)
        if count > capacity:
            raise UsearchFormatError(f"node {slot} lists {count} neighbours, more than {capacity}; corrupted")
        neighbors = struct.unpack_from(f"<{count}I", self._data, at + 4)
        if count and max(neighbors) >= self.size:
            raise UsearchFormatError(f"node {slot} links to a slot past the end; the file is corrupted")
        return neighbors

    def check_graph(self) -> None:
        """Every node's neighbour lists, on every level it has, within their capacity and the index."""
        for slot, at in enumerate(self._node_offsets):
            (level,) = struct.unpack_from("<h", self._data, at + 8)
            if level != self._levels[slot] or not 0 <= level <= self._max_level:
                raise UsearchFormatError(f"node {slot} claims level {level}; the file is corrupted")
            for each in range(level + 1):
                self._neighbors(slot, each)

    def _check_query(self, query: Sequence[float]) -> None:
        if len(query) != self.dimensions:
            raise ValueError(f"query has {len(query)} dimensions, the index has {self.dimensions}")

    def use_row_products(self, row_products: RowProducts) -> None:
        """Compute the search's dot products with `row_products` (see RowProducts) from now on.

        It is checked first against Python's own products, for a query with components at both
        extremes, on rows spread over the index: a wrong one is refused, never used.
        """
        if not self.size:
            return
        fine = [QUERY_RESOLUTION if i % 3 else -QUERY_RESOLUTION + i for i in range(self.dimensions)]
        spread = range(_PRODUCTS_CHECK_ROWS)
        slots = sorted({step * (self.size - 1) // (_PRODUCTS_CHECK_ROWS - 1) for step in spread})
        expected = list(self._python_row_products(fine)(slots))
        if list(row_products(fine)(slots)) != expected:
            raise ValueError("the row products given disagree with Python's; they are not used")
        self._row_products = row_products

    def _python_row_products(self, fine: list[int]) -> Callable[[Sequence[int]], list[float]]:
        """Products with the offset-binary rows, the offset taken off with one precomputed sum."""
        offset_term = OFFSET * sum(fine)
        rows, dims = self._rows, self.dimensions

        def products(slots: Sequence[int]) -> list[float]:
            return [dot(fine, rows[slot * dims : slot * dims + dims]) - offset_term for slot in slots]

        return products

    def search(self, query: Sequence[float], k: int, ef: int = 64) -> list[tuple[int, float]]:
        """Nearest `k` keys to a float query, scored against the int8 rows: (key, cosine distance).

        The query is held as integers with its largest component at +-32767 (error ~1e-5 in cosine,
        far below the rows' int8 step): Pyodide's `math.sumprod` is ~2.4x faster on int x int than on
        float x int, and CPython is no slower; and integer products are exact wherever computed.
        """
        self._check_query(query)
        peak = max(map(abs, query))
        if not math.isfinite(peak) or peak == 0:
            raise ValueError("query vector is zero or not finite; check the query encoder")
        fine = [round(x * QUERY_RESOLUTION / peak) for x in query]
        inverse_query_norm = 1 / math.sqrt(dot(fine, fine))
        products = self._row_products(fine)
        inverse_norms = self._inverse_norms

        def distances(slots: Sequence[int]) -> list[float]:
            return [
                1.0 - product * inverse_query_norm * inverse_norms[slot]
                for slot, product in zip(slots, products(slots), strict=True)
            ]

        return self._search(distances, k, ef)

    def exact_search(
        self, query: Sequence[float], keys: Iterable[int], limit: int
    ) -> list[tuple[int, float]]:
        """Cosine similarity of the float query to each listed key's row, top `limit`, ties by key: the
        exact answer, for a filter that leaves few keys. A row's norm is kept once computed (a third of
        the work per key)."""
        self._check_query(query)
        norm = math.sqrt(dot(query, query))
        if not math.isfinite(norm) or norm == 0:
            raise ValueError("query vector is zero or not finite; check the query encoder")
        unit = [x / norm for x in query]
        scored = []
        for key in keys:
            row = self.vector(key)
            row_norm = self._key_norms.get(key)
            if row_norm is None:
                row_norm = self._key_norms[key] = math.sqrt(dot(row, row))
            scored.append((key, dot(unit, row) / row_norm if row_norm else 0.0))
        scored.sort(key=lambda item: (-item[1], item[0]))
        return scored[:limit]

    def _search(self, distances: Distances, k: int, ef: int) -> list[tuple[int, float]]:
        if k < 1 or ef < 1:
            raise ValueError(f"k and ef must be positive, got k={k}, ef={ef}")
        if not self.size:
            return []
        slot = self._greedy_descent(distances)
        found_distances, slots = self._search_base(distances, slot, max(ef, k))
        return [(self.keys[s], d) for d, s in zip(found_distances[:k], slots[:k], strict=False)]

    def _greedy_descent(self, distances: Distances) -> int:
        """Upper levels: move to any closer neighbour of the node the pass began at, until none is closer."""
        closest = self._entry_slot
        (closest_distance,) = distances((closest,))
        for level in range(self._max_level, 0, -1):
            changed = True
            while changed:
                changed = False
                neighbors = self._neighbors(closest, level)
                for candidate, candidate_distance in zip(neighbors, distances(neighbors), strict=True):
                    if candidate_distance < closest_distance:
                        closest, closest_distance, changed = candidate, candidate_distance, True
        return closest

    def _search_base(self, distances: Distances, start: int, limit: int) -> tuple[list[float], list[int]]:
        """Level-0 beam search: results kept sorted (new ties go first, as usearch's sorted buffer)."""
        (radius,) = distances((start,))
        candidates = [(radius, start)]
        visited = {start}
        top_distances, top_slots = [radius], [start]
        while candidates:
            candidate_distance, candidate = candidates[0]
            if candidate_distance > radius and len(top_distances) == limit:
                break
            heappop(candidates)
            fresh = []
            for successor in self._neighbors(candidate, 0):
                if successor not in visited:
                    visited.add(successor)
                    fresh.append(successor)
            if not fresh:
                continue
            for successor, successor_distance in zip(fresh, distances(fresh), strict=True):
                if len(top_distances) < limit or successor_distance < radius:
                    heappush(candidates, (successor_distance, successor))
                    position = bisect_left(top_distances, successor_distance)
                    top_distances.insert(position, successor_distance)
                    top_slots.insert(position, successor)
                    if len(top_distances) > limit:
                        top_distances.pop()
                        top_slots.pop()
                    radius = top_distances[-1]
        return top_distances, top_slots
