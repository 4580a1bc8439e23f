"""The query encoder's word-piece rows a query needs (`formats.wordpieces`), read by range: a query needs a
few dozen of the table's rows."""

from __future__ import annotations

from collections.abc import Sequence

from readingroom_core.formats.wordpieces import WordPieceDirectory
from readingroom_core.ranges import Block, BlockReader


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
