"""The query encoder's word-piece table, read by range: a query needs a few dozen of its rows.

The table is nearly half of the encoder's bytes (all-MiniLM-L6-v2: 30,522 rows of 384 int8 codes,
6.35 MB), yet a query reads a row per word piece it holds (commit 4a608f8). So the export keeps it out of
the ONNX graph, which takes the gathered rows as inputs (`word_piece_codes`, int8, and
`word_piece_scales`, float32) and multiplies them as a graph holding the table would: the same vectors.
builder/writers/wordpieces.py writes the directory (builder/query_encoder/quantize.py the rows); the CLI
(`builder/query_encoder/at_query_time.py`) and the browser's worker read the rows through `readers/wordpieces.py`.

- the rows file (ranged, never gzipped): row i is its `width` int8 codes, then its scale as a
  little-endian float32;
- the directory (`files.word_pieces`, checked by the manifest, read when semantic search starts):
      {"v": FORMAT_VERSION, "rows_file": path, "rows": n, "width": w, "block_rows": R,
       "blocks": [the first SHA_DIGITS hex digits of the sha256 of rows [k R, (k + 1) R), ...]}
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from readingroom_core.formats.versioned import FORMAT_VERSION, load_versioned

SCALE_BYTES = 4  # a row's float32 scale, after its codes
SHA_DIGITS = 32  # 128 bits a block: the full digest would double the directory read before a first query


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
