"""The query encoder's word-piece rows read by range (readingroom_core.readers.wordpieces): only the blocks
a query's word pieces lie in, each checked, in the order the ids come."""

from __future__ import annotations

import json
import random

import pytest

from builder.writers.wordpieces import word_piece_directory
from readingroom_core.formats.wordpieces import SCALE_BYTES, read_word_piece_directory
from readingroom_core.ranges import BlockReader, DamagedData, whole_file_ranges
from readingroom_core.readers.wordpieces import WordPieceRows

WIDTH = 8
ROWS = 100  # blocks of 16 rows: the last one holds 4


def table_bytes(rows: int = ROWS) -> bytes:
    """Row i: codes i, i+1, ... (mod 256) and a scale whose bytes say i."""
    rng = random.Random(0)
    return b"".join(
        bytes((i + j) % 256 for j in range(WIDTH)) + bytes([i % 256, rng.randrange(256), 0, 0])
        for i in range(rows)
    )


def row_of(table: bytes, token: int) -> tuple[bytes, bytes]:
    row = table[token * (WIDTH + SCALE_BYTES) : (token + 1) * (WIDTH + SCALE_BYTES)]
    return row[:WIDTH], row[WIDTH:]


def rows_reader(table: bytes, block_rows: int = 16) -> tuple[WordPieceRows, BlockReader]:
    directory = word_piece_directory("model/word-pieces.bin", table, WIDTH, block_rows)
    blocks = BlockReader(whole_file_ranges(lambda _path: table))
    return WordPieceRows(directory, blocks), blocks


def test_a_query_reads_the_blocks_of_its_word_pieces_only():
    table = table_bytes()
    rows, blocks = rows_reader(table)
    ids = [99, 3, 17, 3, 0]  # the last block (short), the first, the second: adjacent, one request
    codes, scales = rows.read(ids)
    assert codes == b"".join(row_of(table, token)[0] for token in ids)
    assert scales == b"".join(row_of(table, token)[1] for token in ids)
    block_bytes = 16 * (WIDTH + SCALE_BYTES)
    assert blocks.requests == 2 and blocks.bytes_read == 2 * block_bytes + 4 * (WIDTH + SCALE_BYTES)
    rows.read([5, 20])  # blocks already read come from memory
    assert blocks.requests == 2


def test_the_directory_round_trips_and_refuses_what_does_not_fit():
    table = table_bytes()
    directory = word_piece_directory("model/word-pieces.bin", table, WIDTH)
    assert directory.rows == ROWS and len(directory.blocks) == 7
    assert read_word_piece_directory(json.dumps(directory.to_json())) == directory
    short = {**directory.to_json(), "blocks": directory.to_json()["blocks"][:-1]}
    with pytest.raises(ValueError, match="6 block checksums for 100 rows"):
        read_word_piece_directory(json.dumps(short))
    with pytest.raises(ValueError, match="rebuild the site"):
        read_word_piece_directory(json.dumps({**directory.to_json(), "v": 1}))
    with pytest.raises(ValueError, match="not a whole number"):
        word_piece_directory("model/word-pieces.bin", table[:-1], WIDTH)


def test_a_damaged_block_is_refused_and_an_unknown_word_piece_named():
    table = bytearray(table_bytes())
    rows, _ = rows_reader(bytes(table))
    table[40 * (WIDTH + SCALE_BYTES)] ^= 1  # row 40: the third block
    damaged = WordPieceRows(rows.directory, BlockReader(whole_file_ranges(lambda _path: bytes(table))))
    assert damaged.read([1, 90])[0] == rows.read([1, 90])[0]  # the other blocks still read
    with pytest.raises(DamagedData, match="do not match their checksum"):
        damaged.read([1, 40])
    with pytest.raises(ValueError, match="word piece 100 is outside the table's 100 rows"):
        rows.read([100])
