"""`build --ray [ADDRESS]`: the parse and embed stages run as Ray Data stages on a Ray cluster (a local
instance without an address), everything else as in a local build.

Parsing is a Ray task per paper (`parsing`); embedding is a pool of actors that each load the model
once, on a GPU where the cluster has them (`embedding`); `cluster` joins or starts Ray and lays out the
pool. Both stages write the local build's caches, so the pipeline then runs its own stages over a
warm cache: the site is byte-identical to a local build's, and a Ray build and a local build can
follow each other. Nothing here imports Ray until a build asks for it: `ray` is an optional extra.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from builder.distributed.cluster import ClusterError, Plan, connected, current_plan, resolve_address
from builder.embedding import ModelIdentity
from builder.models import Failure, FetchedPaper, IngestedPaper, ParsedPaper, ParseLimits

__all__ = ["Cluster", "ClusterError", "ray_cluster"]


@dataclass(frozen=True)
class Cluster:
    """The build's stages that run on Ray while `ray_cluster` holds it."""

    plan: Plan
    progress: bool

    def parse(
        self, papers: list[FetchedPaper], cache_dir: Path, limits: ParseLimits
    ) -> list[ParsedPaper | Failure]:
        from builder.distributed.parsing import parse_on_cluster

        return parse_on_cluster(papers, cache_dir, limits, self.progress)

    def embed(
        self, papers: list[IngestedPaper], identity: ModelIdentity, model_dir: Path, cache_dir: Path
    ) -> int:
        """The vectors of texts new to the cache, put there; the number of chunks embedded."""
        from builder.distributed.embedding import embed_on_cluster

        return embed_on_cluster(papers, identity, model_dir, cache_dir, self.plan, self.progress)


@contextmanager
def ray_cluster(address: str, workers: int | None, progress: bool) -> Iterator[Cluster]:
    """Ray joined at `address` ("" means RAY_ADDRESS, else a local instance) for the block."""
    if workers is not None and workers < 1:
        raise ClusterError(f"--ray-workers must be at least 1, not {workers}")
    with connected(resolve_address(address), progress):
        yield Cluster(current_plan(workers), progress)
