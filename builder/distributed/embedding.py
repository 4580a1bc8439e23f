"""Embedding on a Ray cluster: the texts new to the cache go to a pool of actors, each of which loads
the model once; the vectors come back to the build, which keeps each group as a checkpoint in the
embedding cache (builder/embedding/cache.py) as soon as it arrives.

The local embed stage then runs as always and finds every vector in the cache, so the site is built
by the same code from the same bits: the groups sent to the actors are `model_batches`, the very
groups a local build feeds the model, and a vector does not depend on the thread count. A killed build
keeps every group that came back; an actor that dies is restarted by Ray and its group retried (Ray
Data's defaults for actor pools: max_restarts=-1, max_task_retries=-1).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from builder.distributed.cluster import ClusterError, Plan
from builder.embedding import (
    GPU_ENGINE,
    EmbeddingCache,
    EmbeddingSanityError,
    ModelIdentity,
    document_encoder,
    encode,
    group_size,
    model_batches,
    text_key,
)
from builder.models import IngestedPaper
from builder.stages.embed import ABOUT_ID, embedding_jobs

# Model groups per actor call: a call costs little beside a group (docs/measurements/ray.json), and a
# retry redoes one.
GROUPS_PER_CALL = 1


@dataclass(frozen=True)
class Pending:
    """One model group of texts new to the cache, with where each vector belongs."""

    arxiv_ids: list[str]
    keys: list[str]
    texts: list[str]


def pending_groups(
    jobs: list[tuple[str, list[str], list[str]]], cache: EmbeddingCache, group: int
) -> list[Pending]:
    """The texts no earlier build embedded (a killed build's checkpoints count), in the local build's
    model groups."""
    todo: list[tuple[str, str, str]] = []
    for arxiv_id, ids, texts in jobs:
        cached = cache.load(arxiv_id)
        for text_id, text in zip(ids, texts, strict=True):
            key = text_key(text_id, text)
            if key not in cached:
                todo.append((arxiv_id, key, text))
    groups = model_batches([text for _, _, text in todo], group)
    return [
        Pending([todo[i][0] for i in group], [todo[i][1] for i in group], [todo[i][2] for i in group])
        for group in groups
    ]


class GroupEncoder:
    """A Ray Data actor: the model, started once, embeds one group of texts per row."""

    def __init__(self, model_dir: str, identity: ModelIdentity, cache_dir: str, threads: int):
        self.model = document_encoder(Path(model_dir), identity, Path(cache_dir), threads)

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        vectors = [encode(self.model, json.loads(str(texts))).tobytes() for texts in batch["texts"]]
        return {"group": batch["group"], "vectors": np.array(vectors, dtype=object)}


def bound_encoder(model_dir: str, identity: ModelIdentity, cache_dir: str, threads: int) -> type:
    """GroupEncoder with its arguments inside the class (shipped with it), not in Ray's object store,
    where a restarted actor could find them gone (ray-project/ray#53727)."""

    class BoundEncoder(GroupEncoder):
        def __init__(self) -> None:
            super().__init__(model_dir, identity, cache_dir, threads)

    return BoundEncoder


def embed_on_cluster(
    papers: list[IngestedPaper],
    identity: ModelIdentity,
    model_dir: Path,
    cache_dir: Path,
    plan: Plan,
    progress: bool,
) -> int:
    """Put the vectors of every text new to the cache into the cache; the number of chunks (not
    titles and abstracts) embedded. The actors ask for a GPU only when the engine runs on one."""
    cache = EmbeddingCache(cache_dir, identity)
    groups = pending_groups(embedding_jobs(papers, identity), cache, group_size(identity))
    if not groups:
        return 0
    import ray.data
    from ray.data import ActorPoolStrategy

    rows = [{"group": n, "texts": json.dumps(group.texts)} for n, group in enumerate(groups)]
    encoder = bound_encoder(str(model_dir), identity, str(cache_dir), plan.threads)
    gpus = plan.gpus_per_actor if identity.engine == GPU_ENGINE else 0.0
    vectors = ray.data.from_items(rows).map_batches(
        encoder,
        batch_size=GROUPS_PER_CALL,
        batch_format="numpy",
        compute=ActorPoolStrategy(size=plan.actors),
        num_cpus=plan.cpus_per_actor,
        num_gpus=gpus or None,
    )
    total = sum(len(group.texts) for group in groups)
    with tqdm(total=total, desc="embed (ray)", unit="chunk", disable=not progress) as bar:
        try:
            for batch in vectors.iter_batches(batch_size=None, batch_format="numpy"):
                for number, blob in zip(batch["group"], batch["vectors"], strict=True):
                    group = groups[int(number)]
                    rows_back = np.frombuffer(blob, dtype=np.float32).reshape(len(group.texts), identity.dims)
                    cache.checkpoint(group.arxiv_ids, group.keys, rows_back)
                    bar.update(len(group.texts))
        except Exception as error:  # Ray wraps what failed in an actor; the build reports one line
            if isinstance(error, EmbeddingSanityError):
                raise
            raise ClusterError(f"embedding on the Ray cluster failed: {_first_line(error)}") from error
    return sum(1 for group in groups for key in group.keys if not key.startswith(f"{ABOUT_ID}:"))


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[-1] if text else type(error).__name__
