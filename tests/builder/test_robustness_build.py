"""Builds that are interrupted or produce nothing: nothing lost, nothing half-written.

The build runs as a real subprocess (`python -m builder build`), is killed with SIGKILL at a chosen
point (a file appearing, its parse workers starting), and is then run again.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import numpy as np
import pytest
from support import corpus as generated
from support.builds import SMALL_PAPERS, run_build, write_corpus

from builder.paths import REPO_ROOT


def start_build(corpus: Path, out: Path, cache: Path, mirror: Path, log: Path, **popen) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(REPO_ROOT / "wasm")])}
    args = ["--corpus", corpus, "--out", out, "--cache", cache, "--mirror", mirror, "--offline"]
    with open(log, "wb") as handle:
        return subprocess.Popen(
            [sys.executable, "-m", "builder", "build", *map(str, args)],
            stdout=handle,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=REPO_ROOT,
            **popen,
        )


def wait_for(condition, process: subprocess.Popen, what: str, timeout: float = 300):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        assert process.poll() is None, f"the build ended (rc {process.returncode}) before {what}"
        time.sleep(0.02)
    process.kill()
    raise AssertionError(f"timed out waiting for {what}")


def kill_hard(process: subprocess.Popen) -> None:
    os.kill(process.pid, signal.SIGKILL)
    process.wait()


def manifest_files_present(site: Path) -> list[str]:
    """The files the site's manifest names that are missing (empty when the site is whole)."""
    manifest = json.loads((site / "manifest.json").read_text())
    listed = {a["path"] for a in manifest["artifacts"]} | {
        a["path"] for a in manifest["runtime"]["artifacts"]
    }
    stored = [path for path in listed if path + ".gz" not in listed]  # the rest is stored only as its .gz
    return [path for path in stored if not (site / path).is_file()]


def children_of(pid: int) -> set[int]:
    """Every live process below `pid` (read from /proc, as psutil would)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # ended while we looked
            continue
        if fields[0] != "Z":
            parents[int(stat.parent.name)] = int(fields[1])
    found, frontier = set(), {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def alive(pids: set[int]) -> set[int]:
    left = set()
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            left.add(pid)
    return left


# Generated long papers (46-50 pages, about 0.35 s of parsing each): killed after the first is parsed,
# the build is still parsing the others.
LONG_PAPERS = generated.LONG_PAPERS
EMBED_PAPER = LONG_PAPERS[0]  # 50 pages, a few embedding checkpoints of 64 passages


@pytest.fixture(scope="module")
def long_mirror(tmp_path_factory) -> Path:
    return generated.write_mirror(tmp_path_factory.mktemp("long-mirror"), LONG_PAPERS)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="counts processes through /proc")
@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one CPU: the build parses without worker processes")
def test_parse_workers_die_with_a_killed_build(tmp_path, long_mirror):
    root, cache = tmp_path, tmp_path / "cache"
    corpus = write_corpus(root / "readingroom.toml", LONG_PAPERS)
    build = start_build(corpus, root / "site", cache, long_mirror, root / "parse-kill.log")
    wait_for(lambda: len(children_of(build.pid)) >= 2, build, "parse workers")
    parsed = wait_for(lambda: list(cache.glob("parsed/*/*.json")), build, "a parsed paper")
    workers = children_of(build.pid)  # each paper has a process of its own: those at work now
    assert len(parsed) < len(LONG_PAPERS) and workers, "parsing ended before the kill"
    kill_hard(build)
    deadline = time.monotonic() + 10
    while alive(workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = alive(workers)
    for pid in left:  # do not leave them behind for the rest of the suite
        os.kill(pid, signal.SIGKILL)
    assert not left, f"{len(left)} parse worker(s) outlived the killed build"
    assert not (root / "site").exists()


def old_site(built_sites, tmp_path) -> Path:
    site = tmp_path / "site"
    shutil.copytree(built_sites.first, site)
    (site / "CNAME").write_text("reading.example.org\n")  # not made by the build: must survive it
    return site


def test_a_reading_list_without_papers_leaves_the_old_site(tmp_path, built_sites, generated_mirror, capsys):
    site = old_site(built_sites, tmp_path)
    before = {p.relative_to(site): p.read_bytes() for p in site.rglob("*") if p.is_file()}
    for ids, why in (([], "lists no papers"), (["2401.99999"], "every paper failed")):
        corpus = write_corpus(tmp_path / "readingroom.toml", ids)
        assert run_build(corpus, site, built_sites.cache, generated_mirror) == 1
        err = capsys.readouterr().err
        assert why in err and f"the site in {site}/ was left as it was" in err
        after = {p.relative_to(site): p.read_bytes() for p in site.rglob("*") if p.is_file()}
        assert after == before
    assert not list(tmp_path.glob(".site.*"))


def test_a_build_killed_while_writing_the_site_leaves_the_old_one(tmp_path, built_sites, generated_mirror):
    site = old_site(built_sites, tmp_path)
    old_manifest = (site / "manifest.json").read_bytes()
    corpus = write_corpus(tmp_path / "readingroom.toml", SMALL_PAPERS[:2], title="New title")
    build = start_build(corpus, site, built_sites.cache, generated_mirror, tmp_path / "build.log")
    staged_data = wait_for(
        lambda: [p for p in tmp_path.glob(".site.building-*/data/*") if p.is_file()], build, "site data"
    )
    kill_hard(build)
    assert staged_data and (site / "manifest.json").read_bytes() == old_manifest
    assert manifest_files_present(site) == []
    assert (site / "CNAME").exists()

    assert run_build(corpus, site, built_sites.cache, generated_mirror) == 0
    manifest = json.loads((site / "manifest.json").read_text())
    assert manifest["title"] == "New title" and manifest["counts"]["papers"] == 2
    assert manifest_files_present(site) == []
    assert (site / "CNAME").read_text() == "reading.example.org\n"
    assert not list(tmp_path.glob(".site.*")), "the killed build's staging folder was not cleaned up"


def test_a_build_killed_while_embedding_resumes_from_its_checkpoints(tmp_path, long_mirror):
    root, cache = tmp_path, tmp_path / "cache"
    corpus = write_corpus(root / "readingroom.toml", [EMBED_PAPER])
    build = start_build(corpus, root / "site", cache, long_mirror, root / "embed-kill.log")
    wait_for(lambda: list(cache.glob("embeddings/*/checkpoints/*.npz")), build, "an embedding checkpoint")
    kill_hard(build)
    saved = 0
    for path in cache.glob("embeddings/*/checkpoints/*.npz"):
        with np.load(path) as checkpoint:
            saved += len(checkpoint["keys"])
    assert saved > 0 and not (root / "site").exists()

    assert run_build(corpus, root / "site", cache, long_mirror) == 0
    report = json.loads((root / "site" / "build-report.json").read_text())
    assert report["papers"] == 1 and report["chunks"] > 64  # more than one checkpoint's worth
    assert report["embedded_chunks"] == report["chunks"] - saved  # nothing embedded twice
    assert not list(cache.glob("embeddings/*/checkpoints/*"))
    assert manifest_files_present(root / "site") == []


def test_ctrl_c_ends_a_build_with_one_line(tmp_path, long_mirror):
    cache = tmp_path / "cache"
    corpus = write_corpus(tmp_path / "readingroom.toml", LONG_PAPERS)
    log = tmp_path / "interrupted.log"
    # SIGINT as a terminal delivers it, even where this suite runs in the background (which ignores it)
    restore_ctrl_c = partial(signal.signal, signal.SIGINT, signal.SIG_DFL)
    build = start_build(
        corpus, tmp_path / "site", cache, long_mirror, log, start_new_session=True, preexec_fn=restore_ctrl_c
    )
    wait_for(lambda: list(cache.glob("parsed/*/*.json")), build, "a parsed paper")
    os.killpg(build.pid, signal.SIGINT)  # as a terminal's Ctrl-C does: the build and its parse processes
    assert build.wait(timeout=60) == 130
    output = log.read_text()
    assert "Traceback" not in output, output
    assert output.strip().splitlines()[-1] == "interrupted: build stopped; what it finished is kept"
    assert not children_of(build.pid) and not (tmp_path / "site").exists()


SWALLOWED_CTRL_C = """
import os, signal, sys, time
from builder import ctrl_c
ctrl_c.listen()
try:
    if sys.argv[1] == "ctrl-c":
        os.kill(os.getpid(), signal.SIGINT)
    time.sleep(2)
except KeyboardInterrupt:
    pass  # as a multiprocessing finalizer swallows it (the parse pool shutting down)
try:
    ctrl_c.stop_if_heard()  # what the pipeline asks between stages
except KeyboardInterrupt:
    sys.exit(130)
"""


@pytest.mark.parametrize(("pressed", "code"), [("ctrl-c", 130), ("nothing", 0)])
def test_a_ctrl_c_that_something_swallowed_still_stops_the_build_at_its_next_stage(pressed, code):
    done = subprocess.run(
        [sys.executable, "-c", SWALLOWED_CTRL_C, pressed],
        cwd=REPO_ROOT,
        preexec_fn=partial(signal.signal, signal.SIGINT, signal.SIG_DFL),  # as a terminal leaves it
        timeout=60,
    )
    assert done.returncode == code


HELD_BACK_CTRL_C = """
import os, signal, sys
from builder import ctrl_c
ctrl_c.listen()
steps = []
try:
    with ctrl_c.held_back():
        os.kill(os.getpid(), signal.SIGINT)
        steps.append("the step went on to its end")
except KeyboardInterrupt:
    print(*steps, "and then the build stopped")
"""


def test_a_ctrl_c_during_a_step_held_back_stops_the_build_when_the_step_ends():
    done = subprocess.run(
        [sys.executable, "-c", HELD_BACK_CTRL_C],
        cwd=REPO_ROOT,
        preexec_fn=partial(signal.signal, signal.SIGINT, signal.SIG_DFL),  # as a terminal leaves it
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout == "the step went on to its end and then the build stopped\n", done.stderr


def test_two_builds_started_together_on_an_empty_cache_both_succeed_alike(tmp_path, generated_mirror):
    corpus = write_corpus(tmp_path / "readingroom.toml", SMALL_PAPERS)
    sites, logs = (
        [tmp_path / "site-1", tmp_path / "site-2"],
        [tmp_path / "build-1.log", tmp_path / "build-2.log"],
    )
    builds = [
        start_build(corpus, site, tmp_path / "cache", generated_mirror, log)
        for site, log in zip(sites, logs, strict=True)
    ]
    codes = [build.wait(timeout=900) for build in builds]
    assert codes == [0, 0], "\n".join(log.read_text()[-3000:] for log in logs)

    def data_files(site: Path) -> dict[str, bytes]:
        files = [
            path for folder in ("data", "model") for path in (site / folder).rglob("*") if path.is_file()
        ]
        return {path.relative_to(site).as_posix(): path.read_bytes() for path in files}

    first, second = (data_files(site) for site in sites)
    assert first and first == second
    assert not list((tmp_path / "cache").rglob("*.partial")), "a scratch file was left behind"
