"""The USearch HNSW file (`<out>.usearch`, beside the site, for other tools: search reads the same int8 rows
from the dense lists, `formats.dense`), as usearch 2.26.6 saves an index of cosine over int8 rows.

Written by builder/writers/hnsw.py through usearch itself (which pins this version: its int8 cast rule
is not recorded in the file), read by `readers/hnsw.py` in pure Python:

- the vector block: little-endian uint32 rows and bytes per row, then the rows, int8, slot by slot;
- the index head (DENSE_HEAD, DENSE_HEAD_SIZE bytes): MAGIC, the version, the metric, scalar, key and
  slot kinds, the vectors present and removed, the dimensions, whether a key may hold several vectors;
- the graph head (GRAPH_HEAD): nodes, connectivity of the upper levels and of the base level, the top
  level and the entry slot; then each node's level (int16);
- per node: its key (uint64), its level (int16), and per level from the base up its neighbours'
  count (uint32) and slots (uint32, room for the level's connectivity).
"""

from __future__ import annotations

import struct

ROWS_AT = 8  # the vector block follows the (rows, bytes per row) header
MAGIC = b"usearch"
PINNED_VERSION = (2, 26, 6)
METRIC_COS = ord("c")
SCALAR_I8 = 23
SCALAR_NAMES = {1: "b1x8", 11: "f32", 12: "f16", 23: "i8"}  # usearch 2.10+ codes, for error messages
KEY_U64 = 14
SLOT_U32 = 15
DENSE_HEAD = struct.Struct("<7s3HBBBBQQQ?")
DENSE_HEAD_SIZE = 64
GRAPH_HEAD = struct.Struct("<QQQqQ")
