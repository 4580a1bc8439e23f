"""Every row's product with a query at once (`PackedRows`): exact, whatever the values, and the same as one
product per row."""

import random

import pytest

from readingroom_core.packedrows import MAX_QUERY, PackedRows, integer_query


def int8_bytes(rows: list[list[int]]) -> bytes:
    return bytes(value & 0xFF for row in rows for value in row)


@pytest.mark.parametrize("dims", [384, 514, 515, 768])  # 4-byte fields up to 514 dimensions, 8 beyond
def test_the_products_are_each_rows_exact_product_with_the_query(dims):
    rng = random.Random(3)
    rows = [[rng.randint(-128, 127) for _ in range(dims)] for _ in range(50)]
    rows += [[-128] * dims, [127] * dims, [0] * dims]  # the extremes a field must hold without a carry
    packed = PackedRows(int8_bytes(rows), dims)
    assert packed.rows == len(rows)
    assert packed.squares == [sum(v * v for v in row) for row in rows]
    for query in (
        [rng.randint(-MAX_QUERY, MAX_QUERY) for _ in range(dims)],
        [MAX_QUERY] * dims,
        [-MAX_QUERY] * dims,
        [0] * dims,
    ):
        assert packed.products(query) == [sum(q * v for q, v in zip(query, row, strict=True)) for row in rows]


def test_a_float_query_is_held_to_within_its_resolution():
    query, scale = integer_query([0.5, -0.25, 0.125])
    assert query == [MAX_QUERY, round(-MAX_QUERY / 2), round(MAX_QUERY / 4)]
    assert [value * scale for value in query] == pytest.approx([0.5, -0.25, 0.125], abs=scale / 2)
    assert integer_query([1.0, -3.0], 3) == ([1, -3], 1.0)
    for bad in ([0.0, 0.0], [float("nan"), 1.0], []):
        with pytest.raises(ValueError, match="zero or not finite"):
            integer_query(bad)


def test_bad_rows_and_queries_are_refused():
    with pytest.raises(ValueError, match="do not hold rows of 3"):
        PackedRows(b"\x01\x02\x03\x04", 3)
    packed = PackedRows(b"\x01\x02\x03\x04", 2)
    with pytest.raises(ValueError, match="3 dimensions, the rows have 2"):
        packed.products([1, 2, 3])
    with pytest.raises(ValueError, match="at most"):
        packed.products([MAX_QUERY + 1, 0])
    assert PackedRows(b"", 4).products([1, 2, 3, 4]) == []
