"""`build --ray`: a real Ray cluster (a head and two worker nodes, started here and stopped after)
builds the generated list into the very bytes of a local build, a worker killed mid-embed costs a
retry, an unreachable address is one line, and a build without --ray never imports Ray."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import corpus
from support.builds import SMALL_PAPERS, write_corpus

from builder import embedding as embed
from builder.distributed import Cluster
from builder.distributed.cluster import Plan, plan_actors
from builder.embedding import GPU_ENGINE
from builder.pipeline import BuildOptions, gpu_to_embed_on

needs_ray = pytest.mark.skipif(
    importlib.util.find_spec("ray") is None,
    reason="the ray extra is not installed (pip install .[ray]; nox -s tests installs it)",
)
PAPERS = (*SMALL_PAPERS, corpus.PAPERS[3])
BUILD_SECONDS = 300  # a hang (actors starving the steps that feed them) fails here instead of never ending
# Run in a child process: its modules are the build's alone, and it prints which of them are Ray's.
LOCAL_BUILD = """
import json, sys
from builder.cli import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "ray_modules": sorted(m for m in sys.modules if m.split(".")[0] == "ray")}))
"""


def build_args(corpus_file: Path, out: Path, cache: Path, mirror: Path) -> list[str]:
    return ["build", "--corpus", str(corpus_file), "--out", str(out), "--cache", str(cache)] + [
        "--mirror",
        str(mirror),
        "--offline",
        "--no-progress",
    ]


def build_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "builder", *args]


def site_files(site: Path) -> dict[str, bytes]:
    """Every file of the site but the build report, which records wall times."""
    return {
        p.relative_to(site).as_posix(): p.read_bytes()
        for p in sorted(site.rglob("*"))
        if p.is_file() and p.name != "build-report.json"
    }


@pytest.fixture(scope="module")
def environment() -> dict[str, str]:
    """A fixed build time (SOURCE_DATE_EPOCH), so two builds' pages can be compared byte for byte."""
    return {**os.environ, "SOURCE_DATE_EPOCH": "1767225600"}


@pytest.fixture(scope="module")
def local_build(tmp_path_factory, generated_mirror, environment):
    """The reference: the list built locally, in a process that reports the Ray modules it imported."""
    root = tmp_path_factory.mktemp("local-build")
    listed = write_corpus(root / "readingroom.toml", PAPERS)
    args = build_args(listed, root / "site", root / "cache", generated_mirror)
    done = subprocess.run(
        [sys.executable, "-c", LOCAL_BUILD, *args],
        capture_output=True,
        text=True,
        env=environment,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return root, json.loads(done.stdout.strip().splitlines()[-1])


def test_a_build_without_ray_imports_nothing_of_ray(local_build):
    _, outcome = local_build
    assert outcome == {"code": 0, "ray_modules": []}


@pytest.fixture(scope="module")
def cluster():
    """A head that runs no work and two worker nodes of one CPU each: the two CPUs of a small machine,
    spread over nodes as on a real cluster."""
    if importlib.util.find_spec("ray") is None:
        pytest.skip("the ray extra is not installed (pip install .[ray]; nox -s tests installs it)")
    from ray.cluster_utils import Cluster

    nodes = Cluster(initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False})
    for _ in range(2):
        nodes.add_node(num_cpus=1)
    nodes.wait_for_nodes()
    try:
        yield nodes.address
    finally:
        nodes.shutdown()


def ray_cache(root: Path, local_root: Path) -> Path:
    """A cold cache holding only the model's ONNX export, which is not what these tests are about."""
    cache = root / "cache"
    shutil.copytree(local_root / "cache" / "encoder", cache / "encoder")
    return cache


@needs_ray
def test_a_ray_cluster_builds_the_local_sites_bytes_on_two_cpus_and_a_local_build_follows(
    tmp_path, cluster, local_build, generated_mirror, environment
):
    local_root, _ = local_build
    listed = write_corpus(tmp_path / "readingroom.toml", PAPERS)
    args = build_args(listed, tmp_path / "site", ray_cache(tmp_path, local_root), generated_mirror)
    done = subprocess.run(
        build_command(*args, "--ray", cluster, "--ray-workers", "2"),
        capture_output=True,
        text=True,
        env=environment,
        timeout=BUILD_SECONDS,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert site_files(tmp_path / "site") == site_files(local_root / "site")
    report = json.loads((tmp_path / "site" / "build-report.json").read_text())
    assert report["embedded_chunks"] == report["chunks"] > 0  # every chunk went through the cluster
    assert list((tmp_path / "cache" / "parsed").rglob("*.json"))  # parsed there, into this cache
    # A local build follows on the same cache: nothing left to parse or embed, the same site.
    again = subprocess.run(
        build_command(*build_args(listed, tmp_path / "again", tmp_path / "cache", generated_mirror)),
        capture_output=True,
        text=True,
        env=environment,
        timeout=BUILD_SECONDS,
    )
    assert again.returncode == 0, again.stderr[-3000:]
    assert json.loads((tmp_path / "again" / "build-report.json").read_text())["embedded_chunks"] == 0
    assert site_files(tmp_path / "again") == site_files(local_root / "site")


def busy_encoder() -> int | None:
    """The pid of an embedding actor while it embeds (Ray names its process after the running call)."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            title = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if title.startswith("ray::MapWorker(MapBatches(BoundEncoder))") and ".submit" in title:
            return int(proc.name)
    return None


@needs_ray
def test_a_worker_killed_while_embedding_costs_a_retry_not_the_build(
    tmp_path, cluster, local_build, generated_mirror, environment
):
    local_root, _ = local_build
    listed = write_corpus(tmp_path / "readingroom.toml", PAPERS)
    args = build_args(listed, tmp_path / "site", ray_cache(tmp_path, local_root), generated_mirror)
    build = subprocess.Popen(
        build_command(*args, "--ray", cluster, "--ray-workers", "2"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=environment,
    )
    killed = None
    deadline = time.monotonic() + BUILD_SECONDS
    while killed is None and build.poll() is None and time.monotonic() < deadline:
        killed = busy_encoder()
        time.sleep(0.05)
    assert killed is not None, "no embedding actor was seen at work"
    os.kill(killed, signal.SIGKILL)
    _, stderr = build.communicate(timeout=BUILD_SECONDS)
    assert build.returncode == 0, stderr[-3000:]
    assert site_files(tmp_path / "site") == site_files(local_root / "site")


@needs_ray
def test_an_unreachable_cluster_is_one_line(tmp_path, generated_mirror):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{probe.getsockname()[1]}"
    listed = write_corpus(tmp_path / "readingroom.toml", PAPERS)
    args = build_args(listed, tmp_path / "site", tmp_path / "cache", generated_mirror)
    started = time.monotonic()
    done = subprocess.run(build_command(*args, "--ray", address), capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and time.monotonic() - started < 60
    assert done.stderr.strip().splitlines() == [
        f"error: Ray cluster at {address} cannot be reached (Connection refused); start it with "
        "`ray start --head`, or build without --ray"
    ]
    assert not (tmp_path / "site").exists()


@pytest.mark.parametrize(
    ("resources", "nodes", "workers", "expected"),
    [
        ({"CPU": 2.0}, 1, 2, Plan(2, 0.667, 0.0, 1)),  # the hang: two actors on two CPUs
        ({"CPU": 2.0}, 1, None, Plan(2, 0.667, 0.0, 1)),  # without GPUs: one 1-thread actor a CPU
        ({"CPU": 2.0}, 1, 1, Plan(1, 1.0, 0.0, 2)),
        ({"CPU": 8.0}, 2, None, Plan(8, 0.889, 0.0, 1)),  # two nodes of four CPUs
        ({"CPU": 16.0, "GPU": 1.0}, 1, None, Plan(1, 1.0, 1.0, 16)),  # the GPU machine
        ({"CPU": 64.0, "GPU": 4.0}, 2, None, Plan(4, 1.0, 1.0, 16)),  # two nodes of two GPUs
    ],
)
def test_the_actor_pool_leaves_room_for_the_steps_that_feed_it(resources, nodes, workers, expected):
    plan = plan_actors(resources, nodes, workers)
    assert plan == expected
    assert plan.actors * plan.cpus_per_actor < resources["CPU"]


@pytest.mark.parametrize(
    ("plan", "device", "engine"),
    [
        (Plan(1, 1.0, 1.0, 16), "auto", GPU_ENGINE),  # the cluster's GPU, whatever the driver has
        (Plan(1, 1.0, 0.0, 2), "auto", embed.DOCUMENT_ENGINE),
        (Plan(1, 1.0, 1.0, 16), "cpu", embed.DOCUMENT_ENGINE),
    ],
)
def test_a_cluster_embeds_on_gpus_where_its_workers_have_them(plan, device, engine, tmp_path):
    options = BuildOptions(tmp_path / "list.toml", tmp_path / "site", tmp_path / "cache", embed_device=device)
    cluster = Cluster(plan, progress=False)
    assert embed.choose_engine(device, gpu_to_embed_on(options, cluster)) == engine
