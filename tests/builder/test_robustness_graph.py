"""The HNSW graph is checked whole when semantic search loads, so damage fails at once, not per query."""

import struct

import numpy as np
import pytest

from builder.writers.hnsw import write_index
from readingroom_core.readers.hnsw import UsearchFile, UsearchFormatError


@pytest.fixture(scope="module")
def index_bytes(tmp_path_factory) -> bytes:
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((400, 32)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    path = tmp_path_factory.mktemp("graph") / "vectors.usearch"
    write_index(path, np.arange(400, dtype=np.uint64), vectors)
    return path.read_bytes()


def test_a_sound_graph_passes(index_bytes):
    UsearchFile(index_bytes).check_graph()


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda block, at: struct.pack_into("<I", block, at + 10, 0xFFFF), "more than"),
        (lambda block, at: struct.pack_into("<I", block, at + 14, 0xFFFFFF), "past the end"),
        (lambda block, at: struct.pack_into("<h", block, at + 8, 3000), "claims level"),
    ],
)
def test_a_damaged_node_deep_in_the_graph_fails_the_check(index_bytes, damage, message):
    index = UsearchFile(index_bytes)
    block = bytearray(index_bytes)
    slot = index.size - 1  # a node a query may never walk into
    count = struct.unpack_from("<I", block, index._node_offsets[slot] + 10)[0]
    assert count > 0
    damage(block, index._node_offsets[slot])
    damaged = UsearchFile(bytes(block))  # the header and lengths still add up: it loads
    with pytest.raises(UsearchFormatError, match=message):
        damaged.check_graph()
