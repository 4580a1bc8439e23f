"""The int8 quantization and the usearch file builder/writers/hnsw.py writes."""

from __future__ import annotations

import numpy as np
import pytest
from usearch.index import Index

from builder.writers.hnsw import INT8_LIMIT, IndexParams, calibrate_scale, quantize, write_index

DIMS = 384


def sentence_like_unit_vectors(count: int, seed: int = 0) -> np.ndarray:
    """Sentence-embedding-like data: unit rows near a 32-d subspace, plus noise in every dimension."""
    rng = np.random.default_rng(seed)
    basis = np.random.default_rng(99).normal(size=(32, DIMS))
    rows = rng.normal(size=(count, 32)) @ basis + 0.5 * np.sqrt(32) * rng.normal(size=(count, DIMS))
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def test_scale_at_percentile_100_maps_the_largest_component_to_127():
    vectors = sentence_like_unit_vectors(200)
    scale = calibrate_scale(vectors, percentile=100)
    assert scale == pytest.approx(INT8_LIMIT / np.abs(vectors.astype(np.float64)).max(), rel=1e-6)
    rows = quantize(vectors, scale)
    assert rows.dtype == np.int8
    assert np.abs(rows).max() == INT8_LIMIT


def test_lower_percentile_gives_a_larger_scale_and_clips_outliers():
    vectors = sentence_like_unit_vectors(200)
    wide, tight = calibrate_scale(vectors, 100), calibrate_scale(vectors, 99)
    assert tight > wide
    rows = quantize(vectors, tight)
    clipped = np.abs(vectors * tight) > INT8_LIMIT
    assert 0.005 < clipped.mean() < 0.02
    assert (np.abs(rows[clipped]) == INT8_LIMIT).all()
    assert rows.min() >= -INT8_LIMIT  # -128 is never produced: the range stays symmetric


def test_quantize_rounds_half_to_even_on_the_unit_vector():
    vector = np.zeros((1, 4))
    vector[0, :2] = [3.0, 4.0]  # unit vector (0.6, 0.8)
    assert quantize(vector, 10.0).tolist() == [[6, 8, 0, 0]]
    assert quantize(vector * 7, 10.0).tolist() == [[6, 8, 0, 0]]  # length does not matter
    assert quantize(vector, 2.5).tolist() == [[2, 2, 0, 0]]  # 1.5 -> 2, 2.0 -> 2
    assert quantize(np.zeros((1, 4)), 10.0).tolist() == [[0, 0, 0, 0]]


def test_quantize_keeps_cosine_close_to_float():
    vectors = sentence_like_unit_vectors(300)
    rows = quantize(vectors, calibrate_scale(vectors)).astype(np.float64)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    assert np.abs((rows * vectors).sum(axis=1) - 1).max() < 2e-3


@pytest.mark.parametrize("bad", [0.0, -3.0, float("nan"), float("inf")])
def test_quantize_rejects_a_bad_scale(bad):
    with pytest.raises(ValueError, match="scale"):
        quantize(sentence_like_unit_vectors(3), bad)


def test_bad_vectors_are_named():
    with pytest.raises(ValueError, match="NaN"):
        calibrate_scale(np.array([[np.nan, 1.0]]))
    with pytest.raises(ValueError, match="2-d"):
        calibrate_scale(np.ones(5))
    with pytest.raises(ValueError, match="all vectors are zero"):
        calibrate_scale(np.zeros((3, 4)))


def test_written_file_restores_in_usearch_with_the_quantized_rows(tmp_path):
    vectors = sentence_like_unit_vectors(500)
    keys = np.arange(500, dtype=np.uint64) * 3 + 11
    params = write_index(tmp_path / "index.usearch", keys, vectors)
    assert params.scale == pytest.approx(calibrate_scale(vectors))
    index = Index.restore(str(tmp_path / "index.usearch"))
    assert (index.size, index.ndim, str(index.dtype), index.connectivity) == (500, DIMS, "ScalarKind.I8", 16)
    rows = quantize(vectors, params.scale)
    assert np.array_equal(index.get(keys), rows)
    found = index.search(rows[:50], 1)
    assert found.keys[:, 0].tolist() == keys[:50].tolist()


def test_two_writes_are_byte_identical(tmp_path):
    vectors = sentence_like_unit_vectors(1500)
    keys = np.arange(1500)
    params = IndexParams(scale=calibrate_scale(vectors))
    write_index(tmp_path / "a.usearch", keys, vectors, params)
    write_index(tmp_path / "b.usearch", keys, vectors, params)
    assert (tmp_path / "a.usearch").read_bytes() == (tmp_path / "b.usearch").read_bytes()


def test_write_index_rejects_bad_keys(tmp_path):
    vectors = sentence_like_unit_vectors(3)
    with pytest.raises(ValueError, match="unique"):
        write_index(tmp_path / "x.usearch", np.array([1, 1, 2]), vectors)
    with pytest.raises(ValueError, match="2 keys for 3 vectors"):
        write_index(tmp_path / "x.usearch", np.array([1, 2]), vectors)
    with pytest.raises(ValueError, match="2\\*\\*64 - 1"):
        write_index(tmp_path / "x.usearch", np.array([1, 2, 2**64 - 1], dtype=np.uint64), vectors)
    with pytest.raises(ValueError, match="metric"):
        write_index(tmp_path / "x.usearch", np.arange(3), vectors, IndexParams(scale=300.0, metric="ip"))
