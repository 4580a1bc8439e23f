"""Which engine computes the document vectors, and starting it: the CPU engine (on_cpu.py) unless a
CUDA GPU is there for the GPU engine (on_gpu.py), as `build --embed-device` asks. An engine is only
constructed here; it starts the model on its first text, so a rebuild where nothing changed never
loads it. sentence-transformers' own model is the reference the engines are held to (tests,
benchmarks, BEIR's "model" query encoder), so `encode` takes it too.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from builder.embedding.batches import GROUP
from builder.embedding.model import DOCUMENT_ENGINE, GPU_ENGINE, ModelIdentity
from builder.embedding.on_cpu import DocumentEncoder, document_encoder_path
from builder.embedding.on_gpu import GPU_GROUP, TorchDocumentEncoder

DEVICES = ("auto", "cpu", "cuda")  # `build --embed-device`


class EmbedDeviceError(RuntimeError):
    """The device asked for cannot run the model; the message says what to do."""


def nvidia_gpu_here() -> bool:
    """Whether torch sees a CUDA GPU on this machine; torch is imported only where NVIDIA's driver is."""
    driver = ("/dev/nvidiactl", "/proc/driver/nvidia/version")
    if not any(Path(path).exists() for path in driver) and shutil.which("nvidia-smi") is None:
        return False
    import torch

    return bool(torch.cuda.is_available())


def choose_engine(device: str, gpu: bool) -> str:
    """The engine for `--embed-device`: "auto" takes the GPU engine where a GPU is there to run it."""
    if device not in DEVICES:
        raise EmbedDeviceError(f"--embed-device {device!r}: choose one of {', '.join(DEVICES)}")
    if device == "cpu" or (device == "auto" and not gpu):
        return DOCUMENT_ENGINE
    if not gpu:
        raise EmbedDeviceError(
            "--embed-device cuda: no CUDA GPU is visible to torch here (nor to the Ray cluster's "
            "workers); install a CUDA build of torch on a GPU machine, or use --embed-device cpu"
        )
    return GPU_ENGINE


def group_size(identity: ModelIdentity) -> int:
    """Texts per checkpoint (and per Ray call): a GPU embeds 64 texts in milliseconds, so its groups
    are larger and a checkpoint's write does not dominate."""
    return GPU_GROUP if identity.engine == GPU_ENGINE else GROUP


def document_encoder(
    model_dir: Path, identity: ModelIdentity, cache_dir: Path, threads: int | None = None
) -> DocumentEncoder | TorchDocumentEncoder:
    """The encoder the identity's engine names (not started: that waits for a text to embed)."""
    if identity.engine == GPU_ENGINE:
        return TorchDocumentEncoder(model_dir, identity)
    return DocumentEncoder(model_dir, identity, document_encoder_path(cache_dir, identity), threads)


def load_model(model_dir: Path):
    """sentence-transformers' model from its folder, on the CPU: the reference vectors."""
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)


def encode(model, texts: Sequence[str], batch_size: int = 64, progress: bool = False) -> np.ndarray:
    """Unit-length float32 vectors, one row per text (a document encoder, or a sentence-transformers
    model: tests and benchmarks compare the two)."""
    if isinstance(model, DocumentEncoder | TorchDocumentEncoder):
        return model.encode(texts)
    if not texts:
        return np.zeros((0, model.get_embedding_dimension()), dtype=np.float32)
    vectors = model.encode(
        list(texts),
        batch_size=batch_size,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=progress,
    )
    return np.asarray(vectors, dtype=np.float32)
