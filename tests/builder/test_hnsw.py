"""The stdlib reader of usearch files: parity with usearch, float-query recall, and clear refusals."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest
from usearch.index import Index

from builder.writers.hnsw import IndexParams, calibrate_scale, quantize, write_index
from readingroom_core.readers.hnsw import UsearchFile, UsearchFormatError

DIMS = 384
ROWS = 2000
QUERIES = 200


def sentence_like_unit_vectors(count: int, seed: int) -> np.ndarray:
    """Sentence-embedding-like data: unit rows near a 32-d subspace, plus noise in every dimension."""
    rng = np.random.default_rng(seed)
    basis = np.random.default_rng(99).normal(size=(32, DIMS))
    rows = rng.normal(size=(count, 32)) @ basis + 0.5 * np.sqrt(32) * rng.normal(size=(count, DIMS))
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, np.ndarray, np.ndarray, IndexParams]:
    vectors = sentence_like_unit_vectors(ROWS, seed=1)
    keys = np.arange(ROWS, dtype=np.uint64) * 5 + 1000
    path = tmp_path_factory.mktemp("hnsw") / "index.usearch"
    params = write_index(path, keys, vectors, IndexParams(scale=calibrate_scale(vectors)))
    return path, keys, vectors, params


@pytest.fixture(scope="module")
def reader(built) -> UsearchFile:
    return UsearchFile.from_bytes(built[0].read_bytes())


@pytest.fixture(scope="module")
def queries() -> np.ndarray:
    return sentence_like_unit_vectors(QUERIES, seed=2)


def test_header_fields(reader, built):
    _, keys, vectors, _ = built
    assert (reader.size, reader.dimensions, reader.connectivity) == (ROWS, DIMS, 16)
    assert sorted(reader.keys) == keys.tolist()


def test_vector_returns_the_stored_int8_row(reader, built):
    _, keys, vectors, params = built
    rows = quantize(vectors, params.scale)
    for position in (0, 17, ROWS - 1):
        assert reader.vector(int(keys[position])) == rows[position].tolist()
    with pytest.raises(KeyError, match="not in the index"):
        reader.vector(3)


def test_float_query_search_finds_the_exact_neighbours_of_the_int8_rows(reader, built, queries):
    _, keys, vectors, params = built
    rows = quantize(vectors, params.scale).astype(np.float64)
    scores = queries.astype(np.float64) @ rows.T / np.linalg.norm(rows, axis=1)
    exact = keys[np.argsort(-scores, axis=1)[:, :10]]
    recall = 0
    for query, expected in zip(queries[:100], exact, strict=False):
        found = reader.search(query.tolist(), 10, ef=64)
        assert [d for _, d in found] == sorted(d for _, d in found)
        recall += len({key for key, _ in found} & set(expected.tolist()))
    assert recall / 1000 >= 0.98


def test_float_distance_is_cosine_against_the_int8_row(reader, built, queries):
    _, keys, _, _ = built
    key, distance = reader.search(queries[0].tolist(), 1)[0]
    row = np.array(reader.vector(key), dtype=np.float64)
    expected = 1 - queries[0].astype(np.float64) @ row / np.linalg.norm(row)
    assert distance == pytest.approx(expected, abs=2e-5)  # the query is held as 15-bit integers


def numpy_row_products(reader: UsearchFile, batches: list[int], error: int = 0):
    """Row products as the worker's typed arrays compute them, from the signed rows (`error` added)."""
    rows = np.frombuffer(reader.int8_rows(), dtype=np.int8).reshape(reader.size, DIMS).astype(np.int64)

    def bind(fine: list[int]):
        query = np.array(fine, dtype=np.int64)

        def products(slots):
            batches.append(len(slots))
            return (rows[list(slots)] @ query + error).astype(np.float64).tolist()

        return products

    return bind


def test_row_products_computed_elsewhere_give_the_same_walk_and_distances(reader, built, queries):
    other = UsearchFile.from_bytes(built[0].read_bytes())
    batches: list[int] = []
    other.use_row_products(numpy_row_products(other, batches))
    batches.clear()
    for query in queries[:50]:
        for k, ef in ((10, 64), (60, 64), (100, 200)):
            assert other.search(query.tolist(), k, ef=ef) == reader.search(query.tolist(), k, ef=ef)
    assert max(batches) > 1  # asked a node's unvisited neighbours at once, not row by row


def test_row_products_that_disagree_with_pythons_are_refused(reader, built, queries):
    other = UsearchFile.from_bytes(built[0].read_bytes())
    batches: list[int] = []
    with pytest.raises(ValueError, match="disagree with Python's"):
        other.use_row_products(numpy_row_products(other, batches, error=1))
    batches.clear()
    assert other.search(queries[0].tolist(), 10) == reader.search(queries[0].tolist(), 10)
    assert batches == []  # the refused products are never used


def test_bad_queries_are_refused(reader):
    with pytest.raises(ValueError, match="3 dimensions, the index has 384"):
        reader.search([0.1, 0.2, 0.3], 5)
    with pytest.raises(ValueError, match="zero"):
        reader.search([0.0] * DIMS, 5)
    with pytest.raises(ValueError, match="k and ef must be positive"):
        reader.search([0.1] * DIMS, 0)


def test_empty_index_returns_nothing(tmp_path):
    Index(ndim=DIMS, metric="cos", dtype="i8").save(str(tmp_path / "empty.usearch"))
    reader = UsearchFile.from_bytes((tmp_path / "empty.usearch").read_bytes())
    assert reader.size == 0
    assert reader.search([0.1] * DIMS, 10) == []


def header_offset(data: bytes) -> int:
    rows, row_bytes = struct.unpack_from("<II", data, 0)
    return 8 + rows * row_bytes


def test_wrong_magic_is_refused(built):
    data = bytearray(built[0].read_bytes())
    data[header_offset(data)] = ord("X")
    with pytest.raises(UsearchFormatError, match="magic"):
        UsearchFile.from_bytes(bytes(data))


def test_other_versions_are_refused(built):
    data = bytearray(built[0].read_bytes())
    struct.pack_into("<3H", data, header_offset(data) + 7, 2, 13, 0)
    with pytest.raises(UsearchFormatError, match=r"usearch 2\.13\.0, but this reader is pinned to 2\.26\.6"):
        UsearchFile.from_bytes(bytes(data))
    struct.pack_into("<3H", data, header_offset(data) + 7, 3, 0, 0)
    with pytest.raises(UsearchFormatError, match="major version 3"):
        UsearchFile.from_bytes(bytes(data))


def test_float32_file_is_refused(tmp_path, built):
    vectors = built[2][:50]
    index = Index(ndim=DIMS, metric="cos", dtype="f32")
    index.add(np.arange(50), vectors)
    index.save(str(tmp_path / "f32.usearch"))
    with pytest.raises(UsearchFormatError, match="stores f32 vectors, expected i8"):
        UsearchFile.from_bytes((tmp_path / "f32.usearch").read_bytes())


def test_other_metric_is_refused(tmp_path):
    index = Index(ndim=8, metric="l2sq", dtype="i8")
    index.add(np.arange(3), np.eye(8, dtype=np.int8)[:3] * 50)
    index.save(str(tmp_path / "l2.usearch"))
    with pytest.raises(UsearchFormatError, match="metric is 'e', expected 'c'"):
        UsearchFile.from_bytes((tmp_path / "l2.usearch").read_bytes())


def test_removed_entries_are_refused(tmp_path):
    index = Index(ndim=8, metric="cos", dtype="i8")
    index.add(np.arange(3), np.eye(8, dtype=np.int8)[:3] * 50)
    index.remove(1)
    index.save(str(tmp_path / "removed.usearch"))
    with pytest.raises(UsearchFormatError, match="removed entries"):
        UsearchFile.from_bytes((tmp_path / "removed.usearch").read_bytes())


def test_truncated_file_is_refused(built):
    data = built[0].read_bytes()
    with pytest.raises(UsearchFormatError, match="corrupted"):
        UsearchFile.from_bytes(data[:-100])
    with pytest.raises(UsearchFormatError, match="level table"):
        UsearchFile.from_bytes(data[: header_offset(data) + 64 + 40 + 100])
    with pytest.raises(UsearchFormatError, match="too short"):
        UsearchFile.from_bytes(data[:5])
