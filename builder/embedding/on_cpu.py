"""The CPU document engine: the model's fp32 ONNX export under onnxruntime with fused BERT kernels, not
sentence-transformers' torch: the same vectors (min cosine 0.99999 to sentence-transformers' on the
mirror) at a fraction of the time on two cores (`nox -s bench` measures both).

Faster settings that were measured and not taken (scripts/bench_embed.py, docs/measurements.md):
onnxruntime's dynamic int8 of this graph needs about half the CPU time per chunk but moves vectors to a
min cosine of 0.986 (the floor is 0.999; each large group of matrices alone already breaks it), and
torch in bfloat16 holds the floor but costs more CPU than this graph. Batch sizes 1-16 and one thread
are within about 1.2x of these settings; one thread gives bitwise the same vectors as two.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from builder.embedding.batches import length_batches, start_tokenizer
from builder.embedding.model import ModelIdentity, model_shape
from builder.embedding.sanity import check_sanity, sanity_texts
from builder.query_encoder.onnx_graph import OUTPUT_NAME, export_fp32
from builder.scratch import copy_made, record_made, write_atomically

if TYPE_CHECKING:
    import onnxruntime
    from tokenizers import Tokenizer

DOCUMENT_BATCH = 4  # texts per run, sorted by length so padding stays small; best of 1, 4 and 16 on a quiet machine (nox -s bench)


def document_encoder_path(cache_dir: Path, identity: ModelIdentity) -> Path:
    """The fp32 export depends only on the model and the engine: one per model identity."""
    engine = identity.engine.replace("/", "-")
    return cache_dir / "encoder" / f"{identity.weights_sha256[:20]}-documents-{engine}" / "model.onnx"


def export_document_encoder(model_dir: Path, onnx_path: Path, check_texts: Sequence[str]) -> str:
    """The model in fp32 for embedding chunks: traced with plain (eager) attention so onnxruntime's BERT
    optimizer can fuse attention, skip-layer-norm and GELU into single kernels; returns "fused".

    The fused graph must give the traced model's vectors for `check_texts` (min cosine 0.99999, as a
    padded batch); a model whose graph the optimizer does not know, or gets wrong, is kept unfused
    ("plain"): slower, never different.
    """
    import onnxruntime
    import torch
    from onnxruntime.transformers.optimizer import optimize_model
    from tokenizers import Tokenizer

    config = json.loads((model_dir / "config.json").read_text())
    onnx_path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="readingroom-onnx-") as scratch:
        plain = Path(scratch) / "plain.onnx"
        _, traced = export_fp32(model_dir, plain, attention="eager")
        tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        tokenizer.enable_truncation(model_shape(model_dir)[1])
        tokenizer.enable_padding()
        encodings = tokenizer.encode_batch([text.strip() for text in check_texts])
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        with torch.no_grad():
            expected = traced(torch.from_numpy(ids), torch.from_numpy(mask)).numpy()
        try:
            fused = Path(scratch) / "fused.onnx"
            optimize_model(
                str(plain),
                model_type="bert",
                num_heads=int(config.get("num_attention_heads", 0)),
                hidden_size=int(config.get("hidden_size", 0)),
                opt_level=1,
                use_gpu=False,
            ).save_model_to_file(str(fused))
            session = onnxruntime.InferenceSession(str(fused), providers=["CPUExecutionProvider"])
            got = session.run([OUTPUT_NAME], {"input_ids": ids, "attention_mask": mask})[0]
            agrees = float(np.min(np.sum(got * expected, axis=1))) >= 0.99999
        except Exception:  # an architecture the optimizer does not handle: keep the plain graph
            agrees = False
        shutil.copyfile(fused if agrees else plain, onnx_path)
    return "fused" if agrees else "plain"


@dataclass(frozen=True)
class _Running:
    """What a `DocumentEncoder` starts on its first `encode`."""

    tokenizer: Tokenizer
    session: onnxruntime.InferenceSession
    output: str  # the graph output holding the unit vectors


class DocumentEncoder:
    """The model as builds run it: its fp32 ONNX export under onnxruntime, texts batched by token length.

    Started on the first `encode`: the export (kept at `onnx_path`, once per model), the session, and the
    sanity check of relevant/irrelevant pairs. Texts are stripped and cut to the model's length as
    sentence-transformers does.
    """

    def __init__(
        self,
        model_dir: Path,
        identity: ModelIdentity,
        onnx_path: Path,
        threads: int | None = None,
        batch: int = DOCUMENT_BATCH,
    ):
        self.model_dir = Path(model_dir)
        self.identity = identity
        self.onnx_path = Path(onnx_path)
        self.threads = threads or os.cpu_count() or 1
        self.batch = batch  # padding changes a vector's last digits: builds keep DOCUMENT_BATCH
        self._running: _Running | None = None

    def _start(self) -> _Running:
        import onnxruntime

        if not self.onnx_path.exists():
            made = ("document encoder", str(self.model_dir.resolve()), self.onnx_path.parent.name)
            if not copy_made(made, [self.onnx_path]):
                texts = sanity_texts()
                write_atomically(
                    self.onnx_path, lambda scratch: export_document_encoder(self.model_dir, scratch, texts)
                )
                record_made(made, [self.onnx_path])
        tokenizer = start_tokenizer(self.model_dir, self.identity.max_tokens)
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        # Threads that wait instead of spinning: on a shared machine spinning steals the other core.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        session = onnxruntime.InferenceSession(
            str(self.onnx_path), options, providers=["CPUExecutionProvider"]
        )
        self._running = _Running(tokenizer, session, OUTPUT_NAME)
        check_sanity(self, self.identity)  # encodes through the session just started
        return self._running

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        running = self._running if self._running is not None else self._start()
        vectors = np.zeros((len(texts), self.identity.dims), dtype=np.float32)
        for rows, ids, mask in length_batches(running.tokenizer, texts, self.batch):
            inputs = {"input_ids": ids, "attention_mask": mask}
            vectors[rows] = running.session.run([running.output], inputs)[0]
        return vectors
