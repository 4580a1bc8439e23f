"""The query encoder's export: the quantised ONNX file the browser runs, its word-piece table's rows,
the vocabulary and the char-class table the stdlib tokenizer needs, and config.json naming them.

Mean pooling and L2 normalisation are inside the graph, so the browser feeds `input_ids`,
`attention_mask` and the query's word-piece rows (read by range: readingroom_core.readers.wordpieces) and reads
unit vectors from `sentence_embedding`; config.json says so.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

from builder.query_encoder.char_classes import build_char_classes
from builder.query_encoder.onnx_graph import INPUT_NAMES, OUTPUT_NAME, export_fp32, read_pooling
from builder.query_encoder.quantize import INT8_QUANTIZATION, QUANTIZATION, WORD_PIECE_INPUTS, quantize_file

CONFIG_FORMAT = "readingroom-query-encoder/2"  # 2: the word-piece table outside the graph


@dataclass(frozen=True)
class EncoderFiles:
    onnx: Path
    word_pieces: Path
    vocab: Path
    char_classes: Path
    config: Path

    @classmethod
    def in_folder(cls, folder: Path) -> EncoderFiles:
        """The export's files under the names config.json gives them."""
        return cls(
            onnx=folder / "query_encoder.onnx",
            word_pieces=folder / "word_pieces.bin",
            vocab=folder / "vocab.txt",
            char_classes=folder / "char_classes.json",
            config=folder / "config.json",
        )

    def all(self) -> tuple[Path, ...]:
        return (self.onnx, self.word_pieces, self.vocab, self.char_classes, self.config)


def export_query_encoder(model_dir: Path, out_dir: Path, coarse_steps: bool = True) -> EncoderFiles:
    """Write the quantised encoder, its word-piece rows, vocab, char classes and config.json into `out_dir`.

    Deterministic: exporting the same model twice gives byte-identical files. `coarse_steps=False` gives
    int8 with absmax steps everywhere, the baseline scripts/bench_encoder.py compares against.
    """
    model_dir, out_dir = Path(model_dir), Path(out_dir)
    pooling = read_pooling(model_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    files = EncoderFiles.in_folder(out_dir)
    with tempfile.TemporaryDirectory(prefix="readingroom-onnx-") as scratch:
        fp32 = Path(scratch) / "fp32.onnx"
        dims, _ = export_fp32(model_dir, fp32)
        word_pieces = quantize_file(fp32, files.onnx, coarse_steps)
    files.word_pieces.write_bytes(word_pieces.rows_bytes())
    files.vocab.write_bytes((model_dir / "vocab.txt").read_bytes())
    _write_json(files.char_classes, build_char_classes(model_dir / "tokenizer.json"))
    _write_json(
        files.config,
        {
            "format": CONFIG_FORMAT,
            "onnx": files.onnx.name,
            "word_pieces": files.word_pieces.name,
            "vocab": files.vocab.name,
            "char_classes": files.char_classes.name,
            "inputs": [*INPUT_NAMES, *WORD_PIECE_INPUTS],
            "input_type": "input_ids, attention_mask: int64 [batch, sequence]; word_piece_codes: int8 "
            "[batch, sequence, dims], each token's row of the word-piece file; word_piece_scales: float32 "
            "[batch, sequence], its scale; token_type_ids are zeros inside the graph",
            "output": OUTPUT_NAME,
            "dims": dims,
            "max_length": pooling["max_length"],
            "pooling": "mean over attention_mask, inside the graph",
            "normalize": "L2, inside the graph: the output rows are unit vectors",
            "quantization": QUANTIZATION if coarse_steps else INT8_QUANTIZATION,
        },
    )
    return files


def _write_json(path: Path, data: dict) -> None:
    path.write_text(
        json.dumps(data, ensure_ascii=False, separators=(",", ":"), sort_keys=True) + "\n", encoding="utf-8"
    )
