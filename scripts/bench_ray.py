"""Ray's overhead on one machine: the same cold-embed build, local and `--ray` with 1 and 2 embedding
actors (a local Ray instance), each a fresh `python -m builder build` process.

Every run starts from a copy of one cache that holds the list's parsed papers, chunks and the model's
ONNX export but no vectors (parse warm, embed cold: embedding is what the actors do), so a run's wall
time is Ray's start-up and scheduling plus the same embedding. The modes are interleaved round by
round (the machine may be shared): compare the ratios. Reports, per mode, the median wall seconds,
chunks per second of the embed stage and of the whole build, and the wall time over the local build's.
Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from measurements import add_record_option, begin

from builder import config
from builder.paths import REPO_ROOT

MODES = {
    "local": [],
    "ray_1_worker": ["--ray", "--ray-workers", "1"],
    "ray_2_workers": ["--ray", "--ray-workers", "2"],
}


def subset_corpus(corpus: Path, papers: int, target: Path) -> Path:
    """The corpus file with its first `papers` papers (all when 0)."""
    listed = config.load_corpus(corpus).papers
    chosen = listed[:papers] if papers else listed
    target.write_text(
        '[site]\ntitle = "bench"\n\n' + "\n".join(f'[[paper]]\nid = "{p.arxiv_id}"\n' for p in chosen)
    )
    return target


def warm_parse_cache(corpus: Path, mirror: Path, work: Path, source: Path | None) -> Path:
    """A cache with the list's parse, chunks and ONNX export, without its vectors: copied from `source`
    where given (its other entries are harmless), else made by one local build."""
    cache = work / "base-cache"
    if source is not None:
        for part in ("parsed", "chunks", "encoder"):
            shutil.copytree(source / part, cache / part)
        return cache
    run(corpus, work / "warmup-site", cache, mirror, [])
    shutil.rmtree(cache / "embeddings")
    return cache


def run(corpus: Path, out: Path, cache: Path, mirror: Path, extra: list[str]) -> tuple[float, dict]:
    command = [sys.executable, "-m", "builder", "build", "--corpus", str(corpus), "--out", str(out)]
    command += ["--cache", str(cache), "--mirror", str(mirror), "--offline", "--no-progress", *extra]
    started = time.perf_counter()
    done = subprocess.run(
        command, capture_output=True, text=True, check=False, env={**os.environ, "RAY_ADDRESS": ""}
    )
    seconds = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr[-4000:]}")
    return seconds, json.loads((out / "build-report.json").read_text())


class NoOp:
    """An actor that does nothing: what remains of a call is Ray Data's own cost."""

    def __call__(self, batch: dict) -> dict:
        return batch


def call_overhead(calls: int = 200) -> float:
    """Seconds per actor-pool call of one row (the embed stage's GROUPS_PER_CALL is one model group
    per call: this against a group's seconds says what a larger batch could save)."""
    import ray
    import ray.data
    from ray.data import ActorPoolStrategy

    ray.init(include_dashboard=False, log_to_driver=False)
    try:
        ray.data.DataContext.get_current().enable_progress_bars = False
        rows = [{"group": n, "texts": "[]"} for n in range(calls)]
        warm = ray.data.from_items(rows[:4]).map_batches(
            NoOp, batch_size=1, compute=ActorPoolStrategy(size=1)
        )
        warm.materialize()
        started = time.perf_counter()
        timed = ray.data.from_items(rows).map_batches(NoOp, batch_size=1, compute=ActorPoolStrategy(size=1))
        timed.materialize()
        return (time.perf_counter() - started) / calls
    finally:
        ray.shutdown()


def summary(runs: list[tuple[float, dict]], local_wall: float | None) -> dict:
    walls = [seconds for seconds, _ in runs]
    embeds = [report["seconds"]["embed"] for _, report in runs]
    chunks = runs[0][1]["embedded_chunks"]
    wall = statistics.median(walls)
    row = {
        "wall_seconds": round(wall, 1),
        "wall_seconds_runs": [round(w, 1) for w in walls],
        "embed_stage_seconds": round(statistics.median(embeds), 1),
        "embedded_chunks": chunks,
        "chunks_per_second_embed_stage": round(chunks / statistics.median(embeds), 1),
        "chunks_per_second_whole_build": round(chunks / wall, 1),
    }
    if local_wall is not None:
        row["wall_over_local"] = round(wall / local_wall, 3)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mirror", type=Path, required=True)
    parser.add_argument("--corpus", type=Path, default=REPO_ROOT / "corpus" / "readingroom.toml")
    parser.add_argument("--papers", type=int, default=0, help="the list's first N papers (0: all)")
    parser.add_argument("--rounds", type=int, default=2, help="interleaved rounds of every mode")
    parser.add_argument("--warm-cache", type=Path, help="copy parse, chunks and export from this cache")
    parser.add_argument("--work", type=Path, default=Path("/tmp/readingroom-bench-ray"))
    add_record_option(parser)
    args = parser.parse_args(argv)
    bench_run = begin("ray", argv)
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    corpus = subset_corpus(args.corpus, args.papers, args.work / "readingroom.toml")
    base = warm_parse_cache(corpus, args.mirror, args.work, args.warm_cache)
    runs: dict[str, list[tuple[float, dict]]] = {mode: [] for mode in MODES}
    for number in range(args.rounds):
        for mode, extra in MODES.items():
            cache = args.work / f"cache-{mode}-{number}"
            shutil.copytree(base, cache)
            runs[mode].append(run(corpus, args.work / f"site-{mode}-{number}", cache, args.mirror, extra))
            shutil.rmtree(cache)
            print(f"round {number + 1} {mode}: {runs[mode][-1][0]:.1f} s", file=sys.stderr, flush=True)
    local = summary(runs["local"], None)
    result = {
        "papers": runs["local"][0][1]["papers"],
        "chunks": runs["local"][0][1]["chunks"],
        "rounds": args.rounds,
        "gpu": "none on this machine",
        "modes": {"local": local}
        | {mode: summary(runs[mode], local["wall_seconds"]) for mode in MODES if mode != "local"},
    }
    groups = -(-runs["local"][0][1]["embedded_chunks"] // 64)  # embed.model_batches' groups, about
    result["actor_call_overhead_seconds"] = round(call_overhead(), 4)
    result["model_group_seconds_local"] = round(local["embed_stage_seconds"] / groups, 2)
    print(json.dumps(result, indent=1))
    if args.record:
        bench_run.save(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
