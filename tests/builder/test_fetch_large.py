"""Large reading lists against the loopback arXiv: a 1,000-id list fetched politely, and a build killed
in the middle of fetching that resumes without fetching again what it had finished."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import deque
from pathlib import Path

from support.arxiv_server import FakeArxiv

from builder.models import PaperRef
from builder.paths import REPO_ROOT
from builder.stages.fetch import FetchOptions, cache_paper_dir, fetch_papers

SLACK = 0.005  # clock granularity


def ids(count: int) -> list[str]:
    return [f"2101.{n:05d}" for n in range(1, count + 1)]


def gaps(records) -> list[float]:
    return [b.t - a.t for a, b in zip(records, records[1:], strict=False)]


def test_a_thousand_ids_are_fetched_in_batches_at_arxivs_pace(tmp_path):
    wanted = ids(1000)
    delay = 0.01  # arXiv's is 3 s; the order of requests and the waits are what is checked
    with FakeArxiv() as server:
        for arxiv_id in wanted:
            server.add_paper(arxiv_id)
        server.retry_after = "1"
        server.api_script.extend([429, 503])  # the first query: rate-limited, then an outage
        server.pdf_script["2101.00007v1"] = deque([429])
        server.pdf_script["2101.00500v1"] = deque([503, 503])
        server.pdf_script["2101.00999v1"] = deque(["truncate"])
        options = FetchOptions(
            cache_dir=tmp_path / "cache",
            api_url=server.api_url,
            delay_seconds=delay,
            max_retries=3,
            backoff_base=0.01,
            timeout=10.0,
        )

        result = fetch_papers([PaperRef(i) for i in wanted], options, progress=False)

        assert result.failures == []
        assert [p.meta.arxiv_id for p in result.papers] == wanted
        api = server.api_requests()
        assert [r.status for r in api[:3]] == [429, 503, 200]
        assert gaps(api[:3])[0] >= 1.0 - SLACK and gaps(api[:3])[1] >= 1.0 - SLACK  # Retry-After: 1
        answered = [r for r in api if r.status == 200]
        batches = [r.query["id_list"].split(",") for r in answered]
        assert len(batches) == 20 and all(len(batch) == 50 for batch in batches)  # 50 ids a query
        assert sorted(i for batch in batches for i in batch) == wanted  # each id asked once
        pdfs = server.pdf_requests()
        assert len([r for r in pdfs if r.status in (200, 206)]) == 1001  # one resumed after truncation
        assert [r.status for r in server.pdf_requests("2101.00007v1")] == [429, 200]
        assert [r.status for r in server.pdf_requests("2101.00500v1")] == [503, 503, 200]
        assert [r.status for r in server.pdf_requests("2101.00999v1")] == [200, 206]
        assert all(gap >= delay - SLACK for gap in gaps(server.requests))  # one request at a time, paced
        after_429 = server.requests.index(server.pdf_requests("2101.00007v1")[0])
        assert server.requests[after_429 + 1].t - server.requests[after_429].t >= 1.0 - SLACK


def build_command(corpus: Path, cache: Path, out: Path, api_url: str, delay: float) -> list[str]:
    return [
        sys.executable,
        "-m",
        "builder",
        "build",
        "--corpus",
        str(corpus),
        "--cache",
        str(cache),
        "--out",
        str(out),
        "--no-progress",
        "--arxiv-api",
        api_url,
        "--arxiv-delay",
        str(delay),
    ]


def completed(cache: Path, arxiv_ids: list[str]) -> tuple[set[str], set[str]]:
    """(ids whose PDF is in the cache, ids whose PDF and metadata are)."""
    with_pdf = {i for i in arxiv_ids if (cache_paper_dir(cache, i, "v1") / "paper.pdf").is_file()}
    whole = {i for i in with_pdf if (cache_paper_dir(cache, i, "v1") / "meta.json").is_file()}
    return with_pdf, whole


def test_a_build_killed_while_fetching_resumes_without_fetching_again(tmp_path):
    wanted = ids(24)
    corpus = tmp_path / "readingroom.toml"
    corpus.write_text(
        '[site]\ntitle = "Killed"\n\n' + "".join(f'[[paper]]\nid = "{i}"\n\n' for i in wanted),
        encoding="utf-8",
    )
    cache, out = tmp_path / "cache", tmp_path / "site"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(REPO_ROOT / "wasm")])}
    with FakeArxiv() as server:
        for arxiv_id in wanted:
            server.add_paper(arxiv_id)
        command = build_command(corpus, cache, out, server.api_url, delay=0.25)
        first = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 120
        while len([r for r in server.pdf_requests() if r.status == 200]) < 8:
            assert first.poll() is None, first.stdout.read().decode()
            assert time.monotonic() < deadline, "the build never got to its eighth PDF"
            time.sleep(0.02)
        first.send_signal(signal.SIGKILL)
        first.wait()
        with_pdf, whole = completed(cache, wanted)
        assert 6 <= len(with_pdf) < len(wanted)  # killed in the middle of fetching
        server.clear()

        second = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)

        assert second.returncode == 0, second.stdout + second.stderr
        report = json.loads((out / "build-report.json").read_text())
        assert report["papers"] == len(wanted) and report["failures"] == []
        fetched_again = {r.path.removeprefix("/pdf/").removesuffix("v1") for r in server.pdf_requests()}
        assert fetched_again.isdisjoint(with_pdf)  # no finished PDF is downloaded again
        assert fetched_again == set(wanted) - with_pdf
        asked = {i for r in server.api_requests() for i in r.query["id_list"].split(",")}
        assert asked.isdisjoint(whole)  # nor is arXiv asked about a finished paper
        assert asked == set(wanted) - whole
