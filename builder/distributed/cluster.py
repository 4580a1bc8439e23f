"""Where a Ray build runs, and how much of it each step may take.

`--ray` alone starts a Ray instance on this machine (or joins `RAY_ADDRESS`); `--ray ADDRESS` joins a
running cluster. Ray itself retries an unreachable address for minutes with a page of warnings, so the
address is tried first with a plain TCP connection and a cluster that cannot be reached is one line.

Resources are set so that a small machine never deadlocks: each embedding actor asks for a share of
the CPUs that leaves room for the steps that feed it (two 1-CPU actors on two CPUs starved them and a
job hung), and asks for a GPU only where the cluster has one.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

ADDRESS_ENV = "RAY_ADDRESS"
CONNECT_SECONDS = 5.0


class ClusterError(RuntimeError):
    """The Ray cluster cannot be used; the message is the one line the build prints."""


def resolve_address(given: str) -> str | None:
    """The address `--ray` means: the one given, else RAY_ADDRESS, else None (a local instance)."""
    address = given.strip() or os.environ.get(ADDRESS_ENV, "").strip()
    return address or None


def host_and_port(address: str) -> tuple[str, int] | None:
    """The GCS (or Ray Client) endpoint in `host:port` or `ray://host:port`; None for `auto`/`local`,
    which Ray resolves from this machine's running instance."""
    if address in ("auto", "local"):
        return None
    bare = address.removeprefix("ray://")
    host, _, port = bare.rpartition(":")
    if not host or not port.isdigit():
        raise ClusterError(
            f"Ray address {address!r} is not host:port (e.g. 10.0.0.5:6379 or ray://10.0.0.5:10001)"
        )
    return host.strip("[]"), int(port)


def check_reachable(address: str, seconds: float = CONNECT_SECONDS) -> None:
    endpoint = host_and_port(address)
    if endpoint is None:
        return
    try:
        with socket.create_connection(endpoint, timeout=seconds):
            pass
    except OSError as error:
        raise ClusterError(
            f"Ray cluster at {address} cannot be reached ({error.strerror or error}); start it with "
            "`ray start --head`, or build without --ray"
        ) from error


@contextmanager
def connected(address: str | None, progress: bool) -> Iterator[None]:
    """Ray started (or joined) for the block, and shut down (or left) after it."""
    try:
        import ray
    except ImportError as error:
        raise ClusterError("--ray needs Ray: pip install .[ray] (the `ray` extra of this project)") from error
    if address is not None:
        check_reachable(address)

    logging.getLogger("ray").setLevel(logging.WARNING)
    try:
        ray.init(
            address=address,
            include_dashboard=False,
            log_to_driver=False,
            logging_level=logging.WARNING,
            configure_logging=True,
        )
    except (ConnectionError, RuntimeError) as error:
        where = address or "this machine"
        raise ClusterError(f"Ray could not start or join a cluster at {where}: {error}") from error
    try:
        from ray.data import DataContext

        context = DataContext.get_current()
        context.enable_progress_bars = progress
        context.print_on_execution_start = False
        logging.getLogger("ray.data").setLevel(logging.WARNING)
        yield
    finally:
        ray.shutdown()


@dataclass(frozen=True)
class Plan:
    """How the embedding actor pool is laid out on the cluster."""

    actors: int
    cpus_per_actor: float  # what Ray reserves; below the threads it runs when the machine is small
    gpus_per_actor: float
    threads: int  # the encoder's intra-op threads in each actor


def plan_actors(resources: dict[str, Any], nodes: int, workers: int | None) -> Plan:
    """One actor per GPU where there are GPUs, otherwise one single-threaded actor per CPU, unless
    `workers` says. Without GPUs, single-threaded actors build faster than one actor with a thread per
    core (docs/measurements/ray.json, commit dae3dc8): presumably the threads of one model wait on each
    other whenever Ray's own processes take a core, where separate actors go on alone. Actors together
    reserve at most all CPUs but a share as large as one actor's, so the steps that feed them always
    find a CPU."""
    cpus = float(resources.get("CPU", 1.0))
    gpus = float(resources.get("GPU", 0.0))
    actors = workers or (int(gpus) if gpus >= 1 else max(1, int(cpus)))
    per_node = max(1.0, cpus / max(1, nodes))
    threads = max(1, int(per_node // max(1, -(-actors // max(1, nodes)))))
    # On a GPU an actor's CPU work is tokenizing and feeding: one CPU is its share.
    reserve = min(1.0 if gpus >= 1 else float(threads), cpus / (actors + 1))
    return Plan(actors, round(reserve, 3), min(1.0, gpus / actors) if gpus >= 1 else 0.0, threads)


def current_plan(workers: int | None) -> Plan:
    import ray

    alive = [node for node in ray.nodes() if node.get("Alive")]
    return plan_actors(ray.cluster_resources(), len(alive), workers)
