"""Every int8 row's dot product with one integer query at once, exact, in pure Python.

Pyodide has no numpy, and one `sumprod` per row costs ~7.5 µs for 384 dimensions in CPython (more in
Pyodide): 75 ms a query for the papers' vectors of a 10,000-paper list. Here each dimension is one Python
integer, its column, holding every row's value + 128 in a field of 4 bytes (8 for rows of over 514
dimensions). A query then costs one integer-times-column product per dimension (C loops over the column),
summed: each field of the sum is that row's product, carried in no other field because it stays below
2**32 (2**64). The products are exact
integers, the same wherever they are computed, so a ranking made from them is too.
"""

from __future__ import annotations

import math
import sys
from array import array
from collections.abc import Sequence

from readingroom_core.readers.hnsw import dot

OFFSET = 128  # int8 values are packed as value + 128, never negative
# The largest query component, as the dense side's exact cosine holds a query (readers.hnsw.QUERY_RESOLUTION):
# a row's running product, below dims x 255 x MAX_QUERY, fits 4 bytes up to 514 dimensions (384 here).
# Columns of 4-byte fields are half as long as the 8-byte ones 30-bit queries would need, and a query
# costs about half as much (commit 4c7a3ac).
MAX_QUERY = (1 << 15) - 1
_TO_OFFSET_BINARY = bytes((i ^ 0x80) for i in range(256))  # two's-complement int8 -> value + 128


class PackedRows:
    """Int8 rows (row-major bytes) packed as one integer per dimension."""

    def __init__(self, data: bytes, dims: int) -> None:
        if dims <= 0 or len(data) % dims:
            raise ValueError(f"{len(data)} bytes do not hold rows of {dims} int8 values")
        self.dims = dims
        self.rows = len(data) // dims
        self._field_bytes = 4 if dims * 255 * MAX_QUERY < 1 << 32 else 8
        self._field_type = next(code for code in "ILQ" if array(code).itemsize == self._field_bytes)
        offset_binary = data.translate(_TO_OFFSET_BINARY)
        fields = bytearray(self._field_bytes * self.rows)
        self._columns = []
        for dim in range(dims):
            fields[:: self._field_bytes] = offset_binary[dim::dims]
            self._columns.append(int.from_bytes(fields, "little"))
        signed = memoryview(data).cast("b")
        self.squares = [dot(row, row) for row in (signed[at : at + dims] for at in range(0, len(data), dims))]

    def products(self, query: Sequence[int]) -> list[int]:
        """Each row's dot product with `query` (integers of magnitude <= MAX_QUERY)."""
        if len(query) != self.dims:
            raise ValueError(f"query has {len(query)} dimensions, the rows have {self.dims}")
        if max(map(abs, query), default=0) > MAX_QUERY:
            raise ValueError(f"query components must be at most {MAX_QUERY} in magnitude")
        positive = negative = 0
        for column, value in zip(self._columns, query, strict=True):
            if value > 0:
                positive += value * column
            elif value < 0:
                negative -= value * column
        offset = OFFSET * sum(query)
        return [p - n - offset for p, n in zip(self._fields(positive), self._fields(negative), strict=True)]

    def _fields(self, packed: int) -> array[int]:
        values = array(self._field_type)
        values.frombytes(packed.to_bytes(self._field_bytes * self.rows, "little"))
        if sys.byteorder != "little":
            values.byteswap()
        return values


def integer_query(query: Sequence[float], resolution: int = MAX_QUERY) -> tuple[list[int], float]:
    """The query as integers, its largest component at +-`resolution`, and the factor that undoes it."""
    peak = max(map(abs, query), default=0.0)
    if not math.isfinite(peak) or peak == 0:
        raise ValueError("query vector is zero or not finite; check the query encoder")
    return [round(x * resolution / peak) for x in query], peak / resolution
