"""The directory of the query encoder's word-piece rows file (`readingroom_core.formats.wordpieces`): the
checksum of each block of rows, for the build and for an export folder's reader (builder/query_encoder/at_query_time.py)."""

from __future__ import annotations

import hashlib

from readingroom_core.formats.wordpieces import SCALE_BYTES, SHA_DIGITS, WordPieceDirectory

# Rows per checked block (6.2 KB at width 384). A query's few dozen word pieces lie in nearly as many
# blocks, so halving the block about halves the rows a first query reads and doubles the directory read
# before it; this size weighs the two (commit 4a608f8).
BLOCK_ROWS = 16


def word_piece_directory(
    rows_file: str, table: bytes, width: int, block_rows: int = BLOCK_ROWS
) -> WordPieceDirectory:
    """The directory of a rows file whose bytes are `table` (the build, and an export folder's reader)."""
    row_bytes = width + SCALE_BYTES
    if len(table) % row_bytes:
        raise ValueError(f"{rows_file}: {len(table)} bytes is not a whole number of {row_bytes}-byte rows")
    block_bytes = block_rows * row_bytes
    blocks = tuple(
        hashlib.sha256(table[at : at + block_bytes]).hexdigest()[:SHA_DIGITS]
        for at in range(0, len(table), block_bytes)
    )
    return WordPieceDirectory(rows_file, len(table) // row_bytes, width, block_rows, blocks)
