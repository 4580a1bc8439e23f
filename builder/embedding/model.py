"""The model's identity: which model (its name and folder), its shape, the prefixes its texts get, and
what computes its vectors, read from the model folder's files without loading the model.

The embedding cache keys on `ModelIdentity.cache_key`, so a changed model, document prefix, length or
engine never reuses another's vectors.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from builder.query_encoder.onnx_graph import read_pooling

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")

# What computes the chunk vectors; part of the cache key, since another engine's vectors differ in
# their last digits: the fp32 ONNX graph on the CPU (on_cpu.py), torch in float16 on a GPU (on_gpu.py).
DOCUMENT_ENGINE = "onnxruntime-fp32/1"
GPU_ENGINE = "torch-cuda-float16/1"


@dataclass(frozen=True)
class ModelIdentity:
    name: str
    path: str
    weights_sha256: str
    dims: int
    max_tokens: int
    query_prefix: str = ""
    document_prefix: str = ""
    engine: str = DOCUMENT_ENGINE

    @property
    def cache_key(self) -> str:
        material = f"{self.weights_sha256}\0{self.document_prefix}\0{self.max_tokens}\0{self.engine}"
        return hashlib.sha256(material.encode()).hexdigest()[:20]


def weights_sha256(model_dir: Path) -> str:
    for name in WEIGHT_FILES:
        path = model_dir / name
        if path.exists():
            digest = hashlib.sha256()
            with path.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
            return digest.hexdigest()
    raise FileNotFoundError(
        f"{model_dir} holds none of {WEIGHT_FILES}: not a sentence-transformers model folder"
    )


def model_shape(model_dir: Path) -> tuple[int, int]:
    """(embedding width, most tokens per text) from the model folder's files, without loading it."""
    max_length = read_pooling(model_dir)["max_length"]
    modules = json.loads((model_dir / "modules.json").read_text())
    pooling_dir = next(module["path"] for module in modules if module["type"].endswith(".Pooling"))
    pooling = json.loads((model_dir / pooling_dir / "config.json").read_text())
    return int(pooling["word_embedding_dimension"]), max_length


def identify(
    name: str, model_dir: Path, query_prefix: str, document_prefix: str, engine: str = DOCUMENT_ENGINE
) -> ModelIdentity:
    """From the model folder's files: a rebuild with nothing to embed never loads the model."""
    dims, max_tokens = model_shape(model_dir)
    return ModelIdentity(
        name=name,
        path=str(model_dir),
        weights_sha256=weights_sha256(model_dir),
        dims=dims,
        max_tokens=max_tokens,
        query_prefix=query_prefix,
        document_prefix=document_prefix,
        engine=engine,
    )
