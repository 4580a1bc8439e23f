"""Embed chunks, reusing every vector a previous build already computed.

Chunks go through the model's ONNX export under onnxruntime with fused BERT kernels (DocumentEncoder),
not sentence-transformers' torch: the same vectors (min cosine 0.99999 to sentence-transformers' on the
mirror) at a fraction of the time on two cores (`nox -s bench` measures both). Where torch sees a CUDA
GPU, the GPU engine (encoder/on_gpu.py) runs instead (`build --embed-device`). The model is started
only when some chunk is not cached, so a rebuild where nothing changed never loads it.

Faster settings that were measured and not taken (scripts/bench_embed.py, docs/measurements.md):
onnxruntime's dynamic int8 of this graph needs about half the CPU time per chunk but moves vectors to a
min cosine of 0.986 (the floor is 0.999; each large group of matrices alone already breaks it), and
torch in bfloat16 holds the floor but costs more CPU than this graph. Batch sizes 1-16 and one thread
are within about 1.2x of these settings; one thread gives bitwise the same vectors as two.

Vectors are cached per paper under the model's identity (name + weights checksum + prefix), keyed by
chunk id and a hash of the exact text embedded, so adding one paper embeds only that paper's chunks
and a changed model or prefix never reuses stale vectors. Before anything is indexed, a handful of
built-in relevant/irrelevant pairs must rank correctly: a misconfigured model would otherwise
silently ruin every search.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from tqdm import tqdm

from builder.models import IngestedPaper, file_stem
from builder.scratch import write_atomically, write_text_atomically
from builder.stages.encoder import document_encoder_path

if TYPE_CHECKING:
    import onnxruntime
    from tokenizers import Tokenizer

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")

# (query, relevant passage, irrelevant passage): any working English sentence embedder ranks these.
SANITY_PAIRS = (
    (
        "How does self-attention work in transformers?",
        "The Transformer computes each token's representation as a weighted sum over all other tokens, "
        "with weights given by scaled dot-product attention between queries and keys.",
        "Preheat the oven, then knead the dough for ten minutes until it is smooth and elastic.",
    ),
    (
        "retrieval augmented generation with a dense passage index",
        "We combine a pre-trained sequence-to-sequence generator with a dense vector index of Wikipedia "
        "passages retrieved by a neural retriever.",
        "The football match ended in a draw after the goalkeeper saved a penalty in extra time.",
    ),
    (
        "low-rank adaptation for fine-tuning large language models",
        "LoRA freezes the pretrained weights and injects trainable rank decomposition matrices into each "
        "layer, greatly reducing the number of trainable parameters.",
        "The museum's new exhibition features impressionist paintings from private collections.",
    ),
    (
        "What causes hallucinations in language model outputs?",
        "Large language models often generate fluent but factually incorrect statements that are not "
        "supported by their sources, a failure mode known as hallucination.",
        "Sea turtles migrate thousands of kilometres to lay their eggs on the beaches where they hatched.",
    ),
    (
        "optimizer with adaptive moment estimates",
        "Adam computes individual adaptive learning rates for different parameters from estimates of the "
        "first and second moments of the gradients.",
        "The city council approved a new budget for road maintenance and public parks.",
    ),
)


# What computes the chunk vectors; part of the cache key, since another engine's vectors differ in
# their last digits. The GPU engine (builder/stages/encoder/on_gpu.py) has its own name there.
DOCUMENT_ENGINE = "onnxruntime-fp32/1"
DOCUMENT_BATCH = 4  # texts per run, sorted by length so padding stays small; best of 1, 4 and 16 on a quiet machine (nox -s bench)
GROUP = 64  # texts per checkpoint, and the unit of work a Ray actor gets (builder/distributed/)
DEVICES = ("auto", "cpu", "cuda")  # `build --embed-device`
Job = tuple[str, list[str], list[str]]  # one paper's work: (arxiv_id, text ids, texts to embed)


class EmbeddingSanityError(RuntimeError):
    """The model does not rank obviously relevant text above obviously irrelevant text."""


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
    from builder.stages.encoder.on_gpu import GPU_ENGINE

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
    from builder.stages.encoder.on_gpu import GPU_ENGINE, GPU_GROUP

    return GPU_GROUP if identity.engine == GPU_ENGINE else GROUP


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


def load_model(model_dir: Path):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)


def identify(
    name: str, model_dir: Path, query_prefix: str, document_prefix: str, engine: str = DOCUMENT_ENGINE
) -> ModelIdentity:
    """From the model folder's files: a rebuild with nothing to embed never loads the model."""
    from builder.stages.encoder.onnx_graph import model_shape

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


def document_encoder(model_dir: Path, identity: ModelIdentity, cache_dir: Path, threads: int | None = None):
    """The encoder the identity's engine names (not started: that waits for a text to embed)."""
    from builder.stages.encoder.on_gpu import GPU_ENGINE, TorchDocumentEncoder

    if identity.engine == GPU_ENGINE:
        return TorchDocumentEncoder(model_dir, identity)
    return DocumentEncoder(model_dir, identity, document_encoder_path(cache_dir, identity), threads)


def start_tokenizer(model_dir: Path, max_tokens: int) -> Tokenizer:
    """The model's tokenizer, cutting texts to its length as sentence-transformers does."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.enable_truncation(max_tokens)
    tokenizer.no_padding()
    return tokenizer


def length_batches(
    tokenizer: Tokenizer, texts: Sequence[str], batch: int
) -> Iterator[tuple[list[int], np.ndarray, np.ndarray]]:
    """(positions in `texts`, input_ids, attention_mask) per model run: texts sorted longest first so
    each run pads little; the order is fixed by the texts, so are the vectors."""
    encodings = tokenizer.encode_batch([text.strip() for text in texts])
    order = sorted(range(len(texts)), key=lambda i: (-len(encodings[i].ids), i))
    for start in range(0, len(order), batch):
        rows = order[start : start + batch]
        ids = np.zeros((len(rows), len(encodings[rows[0]].ids)), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, i in enumerate(rows):
            ids[row, : len(encodings[i].ids)] = encodings[i].ids
            mask[row, : len(encodings[i].ids)] = 1
        yield rows, ids, mask


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

        from builder.stages.encoder.onnx_graph import OUTPUT_NAME, export_document_encoder

        if not self.onnx_path.exists():
            passages = [p for _, relevant, irrelevant in SANITY_PAIRS for p in (relevant, irrelevant)]
            texts = [q for q, _, _ in SANITY_PAIRS] + passages
            write_atomically(
                self.onnx_path, lambda scratch: export_document_encoder(self.model_dir, scratch, texts)
            )
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


def encode(model, texts: Sequence[str], batch_size: int = 64, progress: bool = False) -> np.ndarray:
    """Unit-length float32 vectors, one row per text (a document encoder, or a sentence-transformers
    model: tests and benchmarks compare the two)."""
    from builder.stages.encoder.on_gpu import TorchDocumentEncoder

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


def check_sanity(model, identity: ModelIdentity) -> None:
    queries = [identity.query_prefix + q for q, _, _ in SANITY_PAIRS]
    passages = [identity.document_prefix + p for _, rel, irr in SANITY_PAIRS for p in (rel, irr)]
    q = encode(model, queries)
    p = encode(model, passages)
    scores = q @ p.T
    wrong = []
    irrelevant_columns = list(range(1, len(passages), 2))
    for row, (query, _, _) in enumerate(SANITY_PAIRS):
        if scores[row, 2 * row] <= scores[row, irrelevant_columns].max():
            wrong.append(query)
    if wrong:
        raise EmbeddingSanityError(
            f"model {identity.name!r} ({identity.path}) ranks unrelated text above relevant text for "
            f"{len(wrong)} of {len(SANITY_PAIRS)} built-in checks (e.g. {wrong[0]!r}); check `model`, "
            "`query_prefix` and `document_prefix` in the corpus file"
        )


ABOUT_ID = "about"  # the cache's id for a paper's title-and-abstract text (no chunk id looks like it)


def about_text(title: str, abstract: str) -> str:
    """What a paper is about, for its paper view; "" when there is no abstract (the chunks then speak
    for the paper alone)."""
    abstract = " ".join(abstract.split())
    return f"{' '.join(title.split())}. {abstract}" if abstract else ""


def paper_vector(chunk_rows: np.ndarray, about: np.ndarray | None) -> np.ndarray:
    """The paper view: the direction of its chunks' mean plus its abstract's vector, each unit length
    first so neither dominates (chosen over either alone on the tuning questions)."""
    parts = [chunk_rows.mean(axis=0)] + ([about] if about is not None else [])
    total = sum(part / max(norm(part), 1e-12) for part in parts)
    return (total / max(norm(total), 1e-12)).astype(np.float32)


def norm(vector: np.ndarray) -> float:
    """The Euclidean norm by numpy's own sum, the same bits on every CPU: `np.linalg.norm` of one vector is
    BLAS's dot, whose kernels round differently (Haswell, Sandybridge and Prescott gave three sets of
    norms for the same 20,000 vectors), and a paper's int8 vector then differed from one machine to the
    next."""
    return float(np.sqrt(np.square(vector, dtype=np.float64).sum()))


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


@dataclass
class EmbedStats:
    embedded: int = 0  # chunks that went through the model in this build
    reused: int = 0  # chunks whose vectors came from the cache
    embedded_abouts: int = 0  # title-and-abstract texts (ABOUT_ID) embedded, not counted as chunks


def model_batches(texts: Sequence[str], batch_size: int = GROUP) -> list[list[int]]:
    """`texts`' positions in the model's groups: longest first, fixed by the texts (Ray: the same bits)."""
    order = sorted(range(len(texts)), key=lambda i: (-len(texts[i]), i))
    return [order[start : start + batch_size] for start in range(0, len(order), batch_size)]


def embed_papers(
    model,
    cache: EmbeddingCache,
    papers: Sequence[Job],
    batch_size: int = GROUP,
    progress: bool = True,
) -> tuple[list[np.ndarray], EmbedStats]:
    """Vectors for each paper's texts; `papers` holds (arxiv_id, chunk ids, texts to embed)."""
    stats = EmbedStats()
    cached = [cache.load(arxiv_id) for arxiv_id, _, _ in papers]
    keys = [[text_key(i, t) for i, t in zip(ids, texts, strict=True)] for _, ids, texts in papers]
    todo = [
        (p, row)
        for p, paper_keys in enumerate(keys)
        for row, key in enumerate(paper_keys)
        if key not in cached[p]
    ]
    todo_texts = [papers[p][2][row] for p, row in todo]
    fresh = np.zeros((len(todo_texts), cache.dims), dtype=np.float32)
    bar = tqdm(total=len(todo_texts), desc="embed", unit="chunk", disable=not progress or not todo_texts)
    # One model batch at a time, each kept as a checkpoint: a kill loses at most one batch of work.
    for batch in model_batches(todo_texts, batch_size):
        fresh[batch] = encode(model, [todo_texts[i] for i in batch], batch_size)
        cache.checkpoint(
            [papers[todo[i][0]][0] for i in batch],
            [keys[todo[i][0]][todo[i][1]] for i in batch],
            fresh[batch],
        )
        bar.update(len(batch))
    bar.close()
    computed: list[dict[str, np.ndarray]] = [{} for _ in papers]
    for (p, row), vector in zip(todo, fresh, strict=True):
        computed[p][keys[p][row]] = vector
    result = []
    for p, (arxiv_id, _, _) in enumerate(papers):
        vectors = (
            np.stack([computed[p][k] if k in computed[p] else cached[p][k] for k in keys[p]])
            if keys[p]
            else np.zeros((0, cache.dims), np.float32)
        )
        if computed[p]:
            cache.store(arxiv_id, keys[p], vectors)
        result.append(vectors)
    cache.clear_checkpoints()
    abouts = [sum(1 for i in ids if i == ABOUT_ID) for _, ids, _ in papers]
    stats.embedded_abouts = sum(1 for p, row in todo if papers[p][1][row] == ABOUT_ID)
    stats.embedded = len(todo) - stats.embedded_abouts
    stats.reused = sum(len(k) for k in keys) - sum(abouts) - stats.embedded
    return result, stats


@dataclass
class Embedded:
    """The build's vectors: one float32 unit row per chunk in doc-id order, and one per paper (its paper
    view: what the whole paper is about, from its abstract and its chunks)."""

    identity: ModelIdentity
    chunks: np.ndarray
    papers: np.ndarray


def embedding_jobs(papers: list[IngestedPaper], identity: ModelIdentity) -> list[Job]:
    """(arxiv_id, text ids, texts to embed) per paper: its chunks, then its title and abstract."""
    jobs = []
    for paper in papers:
        about = [text for text in [about_text(paper.meta.title, paper.meta.abstract)] if text]
        texts = [identity.document_prefix + t for t in [c.indexed_text for c in paper.chunks] + about]
        ids = [c.chunk_id for c in paper.chunks] + [ABOUT_ID] * len(about)
        jobs.append((paper.meta.arxiv_id, ids, texts))
    return jobs


def embed_ingested(
    papers: list[IngestedPaper], identity: ModelIdentity, model_dir: Path, cache_dir: Path, progress: bool
) -> tuple[Embedded, EmbedStats]:
    """Chunk and paper vectors; only texts new to the cache meet the model (which starts, and passes its
    sanity check, only then). A paper's title and abstract are embedded with its chunks."""
    model = document_encoder(model_dir, identity, cache_dir)
    jobs = embedding_jobs(papers, identity)
    cache = EmbeddingCache(cache_dir, identity)
    per_paper, stats = embed_papers(model, cache, jobs, group_size(identity), progress=progress)
    chunk_rows = [rows[: len(p.chunks)] for p, rows in zip(papers, per_paper, strict=True)]
    paper_rows = [  # a row past the paper's chunks is its title and abstract (embedding_jobs)
        paper_vector(rows, rows[len(p.chunks)] if len(rows) > len(p.chunks) else None)
        for p, rows in zip(papers, per_paper, strict=True)
    ]
    empty = np.zeros((0, identity.dims), np.float32)
    chunk_vectors = np.concatenate(chunk_rows) if chunk_rows else empty
    return Embedded(identity, chunk_vectors, np.stack(paper_rows) if paper_rows else empty), stats
