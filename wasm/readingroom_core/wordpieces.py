"""The query encoder's word-piece table, read by range: a query needs a few dozen of its rows.

The table is most of the encoder's bytes (all-MiniLM-L6-v2: 30,522 rows of 384 int8 codes, 6.35 of the
14.33 MB the visitor downloaded), yet a query reads a row per word piece it holds. So the export keeps
it out of the ONNX graph, which takes the gathered rows as inputs (`word_piece_codes`, int8, and
`word_piece_scales`, float32) and multiplies them as it multiplied the table before: the same vectors.
The CLI (`builder/query_encoder.py`) and the browser's worker read the rows through this module.

- the rows file (ranged, never gzipped): row i is its `width` int8 codes, then its scale as a
  little-endian float32;
- the directory (`files.word_pieces`, checked by the manifest, read when semantic search starts):
      {"v": FORMAT_VERSION, "rows_file": path, "rows": n, "width": w, "block_rows": R,
       "blocks": [the first SHA_DIGITS hex digits of the sha256 of rows [k R, (k + 1) R), ...]}
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from readingroom_core.formats.versioned import FORMAT_VERSION, load_versioned
from readingroom_core.ranges import Block, BlockReader

SCALE_BYTES = 4  # a row's float32 scale, after its codes
# Rows per checked block (6.2 KB at width 384). The 50 tuning questions hold a median of 25 distinct
# word pieces in 21.5 blocks: 130 KB of rows a first query, and a directory of 35 KB gzipped; 8-row
# blocks halve the rows for twice the directory, 32-row ones the reverse.
BLOCK_ROWS = 16
SHA_DIGITS = 32  # 128 bits a block, as the dense lists' row blocks: the full digest took 67 KB gzipped


@dataclass(frozen=True)
class WordPieceDirectory:
    rows_file: str
    rows: int
    width: int
    block_rows: int
    blocks: tuple[str, ...]

    @property
    def row_bytes(self) -> int:
        return self.width + SCALE_BYTES

    def to_json(self) -> dict[str, Any]:
        return {
            "v": FORMAT_VERSION,
            "rows_file": self.rows_file,
            "rows": self.rows,
            "width": self.width,
            "block_rows": self.block_rows,
            "blocks": list(self.blocks),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> WordPieceDirectory:
        directory = cls(
            str(data["rows_file"]),
            int(data["rows"]),
            int(data["width"]),
            int(data["block_rows"]),
            tuple(str(sha) for sha in data["blocks"]),
        )
        if len(directory.blocks) != -(-directory.rows // directory.block_rows):
            raise ValueError(
                f"word-piece directory: {len(directory.blocks)} block checksums for {directory.rows} rows "
                f"in blocks of {directory.block_rows}; rebuild the site"
            )
        return directory


def read_word_piece_directory(data: bytes | str, what: str = "word-piece directory") -> WordPieceDirectory:
    return WordPieceDirectory.from_json(load_versioned(data, what))


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


class WordPieceRows:
    """The rows of a query's word pieces, each block checked, through the reader's cache."""

    def __init__(self, directory: WordPieceDirectory, blocks: BlockReader) -> None:
        self.directory = directory
        self._blocks = blocks

    def read(self, ids: Sequence[int]) -> tuple[bytes, bytes]:
        """The codes (len(ids) x width int8) and scales (len(ids) little-endian float32) of `ids`, in order."""
        d = self.directory
        for token in ids:
            if not 0 <= token < d.rows:
                raise ValueError(f"word piece {token} is outside the table's {d.rows} rows")
        wanted = sorted({token // d.block_rows for token in ids})
        row_bytes = d.row_bytes
        blocks = [
            Block(
                d.rows_file,
                number * d.block_rows * row_bytes,
                min((number + 1) * d.block_rows, d.rows) * row_bytes,
                d.blocks[number],
            )
            for number in wanted
        ]
        by_block = dict(zip(wanted, self._blocks.read(blocks), strict=True))
        codes, scales = bytearray(), bytearray()
        for token in ids:
            at = token % d.block_rows * row_bytes
            row = by_block[token // d.block_rows][at : at + row_bytes]
            codes += row[: d.width]
            scales += row[d.width :]
        return bytes(codes), bytes(scales)
