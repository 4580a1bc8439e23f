"""The vector cache: every vector a previous build computed, kept per paper under the model's identity
(`ModelIdentity.cache_key`: weights checksum, document prefix, length, engine) and keyed by chunk id
and a hash of the exact text embedded, so adding one paper embeds only that paper's texts and a changed
model or prefix never reuses stale vectors."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from builder.models import file_stem
from builder.scratch import write_atomically, write_text_atomically

if TYPE_CHECKING:
    from builder.embedding.model import ModelIdentity


def text_key(chunk_id: str, text: str) -> str:
    return f"{chunk_id}:{hashlib.sha256(text.encode()).hexdigest()[:12]}"


class EmbeddingCache:
    """Per-paper .npy + key list under <cache>/embeddings/<model key>/.

    A build writes a checkpoint of every batch it embeds (`checkpoints/*.npz`: paper ids, keys,
    vectors), because a whole reading list takes many minutes to embed and the per-paper files are only
    written at the end; a rerun after a kill finds those vectors through `load` and embeds only the rest.
    """

    def __init__(self, cache_dir: Path, identity: ModelIdentity):
        self.folder = cache_dir / "embeddings" / identity.cache_key
        self.checkpoints = self.folder / "checkpoints"
        self.dims = identity.dims
        self._resumed: dict[str, dict[str, np.ndarray]] | None = None

    def _paths(self, arxiv_id: str) -> tuple[Path, Path]:
        stem = file_stem(arxiv_id)
        return self.folder / f"{stem}.keys.json", self.folder / f"{stem}.npy"

    def load(self, arxiv_id: str) -> dict[str, np.ndarray]:
        vectors = self._load_paper(arxiv_id)
        resumed = self._checkpointed().get(arxiv_id)
        if resumed:  # kept in the paper's own file at once, so the checkpoints can go when this build ends
            vectors.update(resumed)
            self.store(arxiv_id, list(vectors), np.stack(list(vectors.values())))
        return vectors

    def _load_paper(self, arxiv_id: str) -> dict[str, np.ndarray]:
        keys_path, vectors_path = self._paths(arxiv_id)
        if not (keys_path.exists() and vectors_path.exists()):
            return {}
        keys = json.loads(keys_path.read_text())
        vectors = np.load(vectors_path)
        if vectors.shape != (len(keys), self.dims):
            return {}
        return dict(zip(keys, vectors, strict=True))

    def store(self, arxiv_id: str, keys: list[str], vectors: np.ndarray) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        keys_path, vectors_path = self._paths(arxiv_id)
        write_atomically(vectors_path, lambda scratch: save_npy(scratch, vectors.astype(np.float32)))
        write_text_atomically(keys_path, json.dumps(keys))

    def checkpoint(self, arxiv_ids: list[str], keys: list[str], vectors: np.ndarray) -> None:
        """Keep one batch of fresh vectors on disk at once (written whole or not at all)."""
        self.checkpoints.mkdir(parents=True, exist_ok=True)
        path = self.checkpoints / f"{time.time_ns()}-{os.getpid()}.npz"
        arrays = {"ids": np.array(arxiv_ids), "keys": np.array(keys), "vectors": vectors.astype(np.float32)}
        write_atomically(path, lambda scratch: _save_npz(scratch, arrays))

    def clear_checkpoints(self) -> None:
        shutil.rmtree(self.checkpoints, ignore_errors=True)
        self._resumed = None

    def _checkpointed(self) -> dict[str, dict[str, np.ndarray]]:
        if self._resumed is None:
            self._resumed = {}
            for path in sorted(self.checkpoints.glob("*.npz")):
                try:
                    with np.load(path, allow_pickle=False) as data:
                        ids, keys, vectors = data["ids"], data["keys"], data["vectors"]
                except (OSError, ValueError, KeyError, zipfile.BadZipFile):
                    continue  # a damaged checkpoint only means embedding those chunks again
                if vectors.shape != (len(keys), self.dims) or len(ids) != len(keys):
                    continue
                for arxiv_id, key, vector in zip(ids.tolist(), keys.tolist(), vectors, strict=True):
                    self._resumed.setdefault(arxiv_id, {})[key] = vector
        return self._resumed


def save_npy(path: Path, array: np.ndarray) -> None:
    with open(path, "wb") as handle:  # a handle: np.save would add ".npy" to a scratch name
        np.save(handle, array)


def _save_npz(path: Path, arrays: dict[str, np.ndarray]) -> None:
    with open(path, "wb") as handle:
        np.savez(handle, **arrays)  # type: ignore[arg-type]
