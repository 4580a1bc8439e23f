"""Embed stage: each paper's chunks and its title-and-abstract text become unit float32 vectors, and
each paper gets its paper view (`paper_vector`), reusing every vector a previous build computed.

The model, its engines and the vector cache are builder/embedding/'s; this stage decides what a paper's
texts are, runs the ones new to the cache through the engine one group at a time, keeping each group
as a checkpoint (a kill loses at most one group of work), and lays the vectors out in doc-id order.
The engine starts only when some text is not cached, so a rebuild where nothing changed never loads it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from builder.embedding import (
    GROUP,
    EmbeddingCache,
    ModelIdentity,
    document_encoder,
    encode,
    group_size,
    model_batches,
    text_key,
)
from builder.models import IngestedPaper

Job = tuple[str, list[str], list[str]]  # one paper's work: (arxiv_id, text ids, texts to embed)
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


@dataclass
class EmbedStats:
    embedded: int = 0  # chunks that went through the model in this build
    reused: int = 0  # chunks whose vectors came from the cache
    embedded_abouts: int = 0  # title-and-abstract texts (ABOUT_ID) embedded, not counted as chunks


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
