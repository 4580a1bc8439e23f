"""The query encoder at query time (`query`, `eval`, `ask`, tests): the ONNX file a site ships, run by
onnxruntime with the stdlib tokenizer and the word-piece rows read by range through the core, so the CLI
embeds a query exactly as the browser does."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from builder.query_encoder.export import CONFIG_FORMAT
from builder.writers.wordpieces import word_piece_directory
from readingroom_core.formats.manifest import Manifest
from readingroom_core.formats.wordpieces import read_word_piece_directory
from readingroom_core.ranges import BlockReader, folder_range_reader, folder_reader, whole_file_ranges
from readingroom_core.readers.wordpieces import WordPieceRows
from readingroom_core.tokenizer import WordPieceTokenizer

# Fold each DequantizeLinear into a float weight once, at session start. Without this, native onnxruntime
# fuses DequantizeLinear + MatMul into int8 kernels that also quantise the activations (other vectors than
# the browser's), and ONNX Runtime Web dequantises every weight on every run (60 ms a query instead of 22).
# worker.js sets the same entry, so the CLI and the browser compute the same vectors.
DEQUANTIZE_AT_LOAD = ("session.disable_quant_qdq", "1")


def check_format(config: dict) -> dict:
    if config.get("format") != CONFIG_FORMAT:
        raise ValueError(
            f"query encoder config has format {config.get('format')!r}, expected {CONFIG_FORMAT!r}; "
            "rebuild the site (or re-export the query encoder)"
        )
    return config


class OnnxQueryEncoder:
    """The browser's model in Python: the shipped ONNX file and the stdlib tokenizer."""

    def __init__(
        self,
        onnx: bytes,
        word_pieces: WordPieceRows,
        vocab: str,
        char_classes: dict,
        config: dict,
        query_prefix: str = "",
    ):
        import onnxruntime

        check_format(config)
        self.config = config
        self.word_pieces = word_pieces
        self.query_prefix = query_prefix
        self.tokenizer = WordPieceTokenizer.from_data(vocab, char_classes, max_length=config["max_length"])
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        options.add_session_config_entry(*DEQUANTIZE_AT_LOAD)
        self.session = onnxruntime.InferenceSession(onnx, options, providers=["CPUExecutionProvider"])

    @classmethod
    def from_dir(cls, encoder_dir: Path) -> OnnxQueryEncoder:
        """An export folder as `export_query_encoder` writes it."""
        encoder_dir = Path(encoder_dir)
        config_path = encoder_dir / "config.json"
        if not config_path.exists():
            raise FileNotFoundError(f"{config_path} is missing; run export_query_encoder into {encoder_dir}")
        config = check_format(json.loads(config_path.read_text(encoding="utf-8")))
        table = (encoder_dir / config["word_pieces"]).read_bytes()
        directory = word_piece_directory(config["word_pieces"], table, config["dims"])
        return cls(
            (encoder_dir / config["onnx"]).read_bytes(),
            WordPieceRows(directory, BlockReader(whole_file_ranges(lambda _path: table))),
            (encoder_dir / config["vocab"]).read_text(encoding="utf-8"),
            json.loads((encoder_dir / config["char_classes"]).read_text(encoding="utf-8")),
            config,
        )

    @classmethod
    def from_site(cls, site_dir: Path, manifest: Manifest) -> OnnxQueryEncoder:
        """The encoder a built site ships, found through its manifest (file names are content-hashed)."""
        check_format(manifest.encoder)
        files, read = manifest.files, folder_reader(site_dir)
        directory = read_word_piece_directory(read(files.word_pieces), files.word_pieces)
        return cls(
            read(files.encoder),
            WordPieceRows(directory, BlockReader(folder_range_reader(site_dir))),
            read(files.vocab).decode("utf-8"),
            json.loads(read(files.char_classes)),
            manifest.encoder,
            manifest.model.query_prefix,
        )

    def encode(self, texts: Sequence[str]) -> list[list[float]]:
        """Unit vectors, one per text, as the browser computes them (one text per run, no padding)."""
        if isinstance(texts, str):
            raise TypeError("encode takes a sequence of texts; wrap a single query in a list")
        vectors = []
        for text in texts:
            ids = self.tokenizer.encode(self.query_prefix + text)
            codes, scales = self.word_pieces.read(ids)
            input_ids = np.array([ids], dtype=np.int64)
            feeds = {
                "input_ids": input_ids,
                "attention_mask": np.ones_like(input_ids),
                "word_piece_codes": np.frombuffer(codes, dtype=np.int8).reshape(1, len(ids), -1),
                "word_piece_scales": np.frombuffer(scales, dtype="<f4").reshape(1, len(ids)),
            }
            (embedding,) = self.session.run([self.config["output"]], feeds)
            vectors.append(embedding[0].astype(float).tolist())
        return vectors
