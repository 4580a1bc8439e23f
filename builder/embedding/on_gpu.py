"""The GPU document engine: the model under torch in float16 on a CUDA device, texts batched by token
length.

torch, not onnxruntime's CUDA provider: a GPU machine's Python already has a CUDA torch (this project
pins the CPU wheel for machines without one), while onnxruntime-gpu is a second, CUDA-version-bound
package. Measured on an H200 over the mirror's 9,713 texts (scripts/bench_gpu.py, docs/measurements.md):
float16 embeds 9,475 chunks/s at a min cosine of 0.999998 to the CPU engine's vectors (the floor is
0.999); bfloat16 is as fast at 0.99986, float32 half as fast. The vectors still differ in their last
digits, so the engine (model.GPU_ENGINE) is part of the embedding cache's key: a GPU build never
reuses a CPU build's vectors, nor the reverse. Pooling and normalisation run in float32.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from builder.embedding.batches import length_batches, start_tokenizer
from builder.embedding.sanity import check_sanity
from builder.query_encoder.onnx_graph import mean_pooled_unit

if TYPE_CHECKING:
    from builder.embedding.model import ModelIdentity

GPU_BATCH = 256  # texts per model run: 64 gave 8,164 chunks/s, 256 9,475, 1024 10,090 (within 256's spread)
GPU_GROUP = 2048  # texts per checkpoint and per Ray call: the stage, checkpoints included, ran 9,124/s


class TorchDocumentEncoder:
    """The model on a torch device, started on the first `encode` (then checked on the relevant and
    irrelevant pairs, as the CPU engine is). Builds run it on "cuda" in float16; tests run it on "cpu"
    in float32, where it must give the CPU engine's vectors."""

    def __init__(
        self,
        model_dir: Path,
        identity: ModelIdentity,
        device: str = "cuda",
        dtype: str = "float16",
        batch: int = GPU_BATCH,
    ):
        self.model_dir = Path(model_dir)
        self.identity = identity
        self.device = device
        self.dtype = dtype
        self.batch = batch
        self._running: tuple[Any, Any] | None = None  # (tokenizer, torch module)

    def _start(self) -> tuple[Any, Any]:
        import torch
        from transformers import AutoModel

        model = AutoModel.from_pretrained(
            str(self.model_dir),
            local_files_only=True,
            attn_implementation="sdpa",
            dtype=getattr(torch, self.dtype),
        )
        self._running = (
            start_tokenizer(self.model_dir, self.identity.max_tokens),
            model.to(self.device).eval(),
        )
        check_sanity(self, self.identity)
        return self._running

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        import torch

        tokenizer, model = self._running if self._running is not None else self._start()
        vectors = np.zeros((len(texts), self.identity.dims), dtype=np.float32)
        runs = []
        with torch.inference_mode():
            for rows, ids, mask in length_batches(tokenizer, texts, self.batch):
                input_ids = torch.from_numpy(ids).to(self.device)
                attention_mask = torch.from_numpy(mask).to(self.device)
                hidden = model(
                    input_ids=input_ids,
                    attention_mask=attention_mask,
                    token_type_ids=torch.zeros_like(input_ids),
                ).last_hidden_state
                runs.append((rows, mean_pooled_unit(hidden.float(), attention_mask)))
            for rows, unit in runs:  # read back once the device has them all queued
                vectors[rows] = unit.cpu().numpy()
        return vectors
