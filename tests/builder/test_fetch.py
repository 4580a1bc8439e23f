"""The fetch stage against a loopback fake arXiv (tests/support/arxiv_server.py) and a mirror folder of generated papers."""

from __future__ import annotations

import hashlib
import json
import socket
from collections import deque
from dataclasses import asdict
from pathlib import Path

import pytest
from support import corpus
from support.arxiv_server import FakeArxiv

from builder.models import Failure, PaperRef
from builder.stages.fetch import FetchOptions, LockEntry, cache_paper_dir, fetch_papers

DELAY = 0.2  # seconds between requests; arXiv's real policy is 3 s
SLACK = 0.005  # clock granularity


@pytest.fixture
def server():
    with FakeArxiv() as fake:
        yield fake


def make_options(tmp_path: Path, server: FakeArxiv | None = None, **overrides) -> FetchOptions:
    settings = dict(
        cache_dir=tmp_path / "cache",
        api_url=server.api_url if server else "http://127.0.0.1:9/api/query?{}",
        delay_seconds=DELAY,
        max_retries=2,
        backoff_base=0.01,
        timeout=5.0,
    )
    settings.update(overrides)
    return FetchOptions(**settings)


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def gaps(records) -> list[float]:
    times = [r.t for r in records]
    return [round(b - a, 4) for a, b in zip(times, times[1:], strict=False)]


def assert_paced(records, delay: float = DELAY) -> None:
    assert all(gap >= delay - SLACK for gap in gaps(records)), gaps(records)


def by_id(failures: list[Failure]) -> dict[str, Failure]:
    return {f.arxiv_id: f for f in failures}


def assert_one_line(failures: list[Failure]) -> None:
    for failure in failures:
        assert failure.stage == "fetch"
        assert "\n" not in failure.line() and failure.reason and failure.hint


# ----------------------------------------------------------------------------------- online path


def test_online_fetch_batches_through_the_arxiv_client_and_paces_requests(tmp_path, server):
    server.add_paper("2005.11401", versions=2, doi="10.5555/rag", journal_ref="NeurIPS 2020")
    server.add_paper("hep-th/9901001", title="An Old-Style\n  Identifier")
    server.add_paper("2101.00190")
    refs = [PaperRef("hep-th/9901001"), PaperRef("2005.11401", tags=("rag",)), PaperRef("2101.00190")]

    result = fetch_papers(refs, make_options(tmp_path, server, batch_size=2), progress=False)

    assert result.failures == []
    assert [p.meta.arxiv_id for p in result.papers] == ["hep-th/9901001", "2005.11401", "2101.00190"]
    assert {p.source for p in result.papers} == {"arxiv"}
    assert result.papers[1].ref == refs[1]

    rag = result.papers[1].meta
    assert (rag.version, rag.published, rag.updated) == ("v2", "2020-05-22", "2021-02-01")
    assert rag.title == "A Study of Paper 2005.11401"
    assert rag.authors == ["Ada Lovelace", "Alan Turing"]
    assert rag.abstract == "We study 2005.11401. It is a fine paper about retrieval."
    assert (rag.categories, rag.primary_category) == (["cs.CL", "cs.IR"], "cs.CL")
    assert (rag.doi, rag.journal_ref, rag.comment, rag.withdrawn) == (
        "10.5555/rag",
        "NeurIPS 2020",
        "",
        False,
    )
    assert result.papers[0].meta.title == "An Old-Style Identifier"

    # Cache layout: <cache>/papers/<id with / → _>/<version>/{paper.pdf,meta.json}; no .part left.
    for paper in result.papers:
        folder = cache_paper_dir(tmp_path / "cache", paper.meta.arxiv_id, paper.meta.version)
        assert Path(paper.pdf_path) == (folder / "paper.pdf").absolute()
        assert paper.pdf_sha256 == sha(server.pdf_bytes(paper.meta.versioned_id))
        assert json.loads((folder / "meta.json").read_text()) == asdict(paper.meta)
    assert (tmp_path / "cache/papers/hep-th_9901001/v1/paper.pdf").is_file()
    assert not list((tmp_path / "cache").rglob("*.part"))

    # The real arxiv client asked (its URL shape), in id_list batches of batch_size.
    api = server.api_requests()
    assert [r.query["id_list"] for r in api] == ["hep-th/9901001,2005.11401", "2101.00190"]
    assert all({"start", "max_results", "sortBy", "search_query"} <= r.query.keys() for r in api)
    assert len(server.pdf_requests()) == 3
    assert all(
        r.headers["User-Agent"] == "readingroom/0.1.0 (+reading list builder)" for r in server.requests
    )
    assert_paced(server.requests)


def test_warm_cache_and_offline_runs_make_no_requests(tmp_path, server):
    server.add_paper("2005.11401", versions=2)
    server.add_paper("2101.00190")
    refs = [PaperRef("2005.11401"), PaperRef("2101.00190")]
    first = fetch_papers(refs, make_options(tmp_path, server), progress=False)
    assert first.failures == [] and len(server.requests) == 3
    server.clear()

    again = fetch_papers(refs, make_options(tmp_path, server), progress=False)
    offline = fetch_papers(refs, make_options(tmp_path, server, offline=True), progress=False)

    assert server.requests == []
    for result in (again, offline):
        assert result.failures == []
        assert [p.source for p in result.papers] == ["cache", "cache"]
        assert [p.pdf_sha256 for p in result.papers] == [p.pdf_sha256 for p in first.papers]
        assert [p.meta for p in result.papers] == [p.meta for p in first.papers]


def test_offline_with_a_cold_cache_fails_each_paper_without_requests(tmp_path, server):
    server.add_paper("2005.11401")
    refs = [PaperRef("2005.11401"), PaperRef("2101.00190", version="v2")]

    result = fetch_papers(refs, make_options(tmp_path, server, offline=True), progress=False)

    assert result.papers == [] and server.requests == []
    assert [f.arxiv_id for f in result.failures] == ["2005.11401", "2101.00190"]
    assert all("not in the cache and --offline was given" in f.reason for f in result.failures)
    assert all(f.hint == "run without --offline, or pass --mirror DIR" for f in result.failures)
    assert_one_line(result.failures)


@pytest.mark.parametrize(
    ("action", "status", "retry_after", "min_gap"),
    [(429, 429, "1", 1.0), (503, 503, None, DELAY), ("garbage", 200, None, DELAY)],
)
def test_api_rate_limit_outage_or_garbage_is_retried(tmp_path, server, action, status, retry_after, min_gap):
    server.add_paper("2005.11401")
    server.api_script.append(action)
    server.retry_after = retry_after

    result = fetch_papers([PaperRef("2005.11401")], make_options(tmp_path, server), progress=False)

    assert result.failures == [] and len(result.papers) == 1
    api = server.api_requests()
    assert [r.status for r in api] == [status, 200]
    assert gaps(api)[0] >= min_gap - SLACK  # Retry-After honoured
    assert_paced(server.requests)


def test_api_that_keeps_failing_gives_one_failure_per_paper(tmp_path, server):
    server.add_paper("2005.11401")
    server.add_paper("2101.00190")
    server.api_script.extend([503, 503, 503])

    result = fetch_papers(
        [PaperRef("2005.11401"), PaperRef("2101.00190")], make_options(tmp_path, server), progress=False
    )

    assert result.papers == []
    assert [r.status for r in server.api_requests()] == [503, 503, 503]  # 1 try + max_retries=2
    assert server.pdf_requests() == []
    assert [f.arxiv_id for f in result.failures] == ["2005.11401", "2101.00190"]
    assert all("HTTP 503" in f.reason and "gave up after 3 tries" in f.reason for f in result.failures)
    assert_one_line(result.failures)


def test_a_rejected_id_does_not_sink_its_batch(tmp_path, server):
    server.add_paper("2005.11401")
    server.reject_ids.add("9912.99999")

    result = fetch_papers(
        [PaperRef("2005.11401"), PaperRef("9912.99999")], make_options(tmp_path, server), progress=False
    )

    assert [p.meta.arxiv_id for p in result.papers] == ["2005.11401"]
    assert [f.arxiv_id for f in result.failures] == ["9912.99999"]
    assert "HTTP 400" in result.failures[0].reason
    assert result.failures[0].hint == "check the id in corpus/readingroom.toml"
    assert [r.query["id_list"] for r in server.api_requests()] == [
        "2005.11401,9912.99999",
        "2005.11401",
        "9912.99999",
    ]


def test_pdf_429_and_503_are_retried_with_pacing(tmp_path, server):
    server.add_paper("2005.11401")
    server.add_paper("2101.00190")
    server.pdf_script["2005.11401v1"] = deque([429])
    server.pdf_script["2101.00190v1"] = deque([503, 503])

    result = fetch_papers(
        [PaperRef("2005.11401"), PaperRef("2101.00190")], make_options(tmp_path, server), progress=False
    )

    assert result.failures == [] and len(result.papers) == 2
    assert [r.status for r in server.pdf_requests("2005.11401v1")] == [429, 200]
    assert [r.status for r in server.pdf_requests("2101.00190v1")] == [503, 503, 200]
    assert_paced(server.requests)


def test_pdf_that_is_gone_fails_without_retries(tmp_path, server):
    server.add_paper("2005.11401")
    server.add_paper("2101.00190")
    server.pdf_script["2005.11401v1"] = deque([404])

    result = fetch_papers(
        [PaperRef("2005.11401"), PaperRef("2101.00190")], make_options(tmp_path, server), progress=False
    )

    assert [p.meta.arxiv_id for p in result.papers] == ["2101.00190"]
    [failure] = result.failures
    assert failure.arxiv_id == "2005.11401" and "HTTP 404" in failure.reason
    assert len(server.pdf_requests("2005.11401v1")) == 1
    assert_one_line(result.failures)


def test_missing_and_withdrawn_papers_fail_while_others_succeed(tmp_path, server):
    server.add_paper("2005.11401")
    server.add_paper("2101.00190", versions=2, comment="This paper has been WITHDRAWN by the authors")
    refs = [
        PaperRef("2005.11401"),
        PaperRef("2402.99999"),
        PaperRef("2101.00190"),
        PaperRef("2402.88888", "v3"),
    ]

    result = fetch_papers(refs, make_options(tmp_path, server), progress=False)

    assert [p.meta.arxiv_id for p in result.papers] == ["2005.11401"]
    failures = by_id(result.failures)
    assert list(failures) == ["2402.99999", "2101.00190", "2402.88888"]
    assert failures["2402.99999"].reason == "2402.99999 not found on arXiv"
    assert failures["2402.99999"].hint == "check the id in corpus/readingroom.toml"
    assert failures["2402.88888"].reason == "2402.88888v3 not found on arXiv"
    assert "withdrawn" in failures["2101.00190"].reason and "2101.00190v2" in failures["2101.00190"].reason
    assert server.pdf_requests("2101.00190v2") == []
    assert_one_line(result.failures)
    # One batch for all four: the missing ids ride along with the found ones.
    assert len(server.api_requests()) == 1


def test_truncated_downloads_resume_or_fail(tmp_path, server):
    server.add_paper("2005.11401")  # cut off once: the retry resumes with Range
    server.add_paper("2101.00190")  # cut off every time: a Failure after the retries
    server.add_paper("2203.02155")  # a consistent but short body (no %%EOF) once: downloaded again
    server.pdf_script["2005.11401v1"] = deque(["truncate"])
    server.always_truncate.add("2101.00190v1")
    server.pdf_script["2203.02155v1"] = deque(["short"])
    refs = [PaperRef("2005.11401"), PaperRef("2101.00190"), PaperRef("2203.02155")]

    result = fetch_papers(refs, make_options(tmp_path, server), progress=False)

    assert [p.meta.arxiv_id for p in result.papers] == ["2005.11401", "2203.02155"]
    for paper in result.papers:
        assert paper.pdf_sha256 == sha(server.pdf_bytes(paper.meta.versioned_id))
    resumed = server.pdf_requests("2005.11401v1")
    assert [r.status for r in resumed] == [200, 206]
    size = len(server.pdf_bytes("2005.11401v1"))
    assert resumed[1].headers["Range"] == f"bytes={size // 2}-"
    assert [r.headers.get("Range") for r in server.pdf_requests("2203.02155v1")] == [None, None]

    [failure] = result.failures
    assert failure.arxiv_id == "2101.00190" and "incomplete" in failure.reason
    assert "gave up after 3 tries" in failure.reason
    assert len(server.pdf_requests("2101.00190v1")) == 3
    folder = cache_paper_dir(tmp_path / "cache", "2101.00190", "v1")
    assert not (folder / "paper.pdf").exists()
    partial = (folder / "paper.pdf.part").read_bytes()  # kept for the next run to resume
    assert partial and server.pdf_bytes("2101.00190v1").startswith(partial)
    assert_paced(server.requests)


@pytest.mark.parametrize("honour_range", [True, False])
def test_leftover_part_file_is_resumed(tmp_path, server, honour_range):
    server.add_paper("2005.11401")
    server.honour_range = honour_range
    data = server.pdf_bytes("2005.11401v1")
    folder = cache_paper_dir(tmp_path / "cache", "2005.11401", "v1")
    folder.mkdir(parents=True)
    (folder / "paper.pdf.part").write_bytes(data[:1000])  # what a killed run left

    result = fetch_papers([PaperRef("2005.11401")], make_options(tmp_path, server), progress=False)

    assert result.failures == []
    assert result.papers[0].pdf_sha256 == sha(data)
    assert (folder / "paper.pdf").read_bytes() == data and not (folder / "paper.pdf.part").exists()
    [request] = server.pdf_requests()
    assert request.headers["Range"] == "bytes=1000-"
    assert request.status == (206 if honour_range else 200)  # a server that ignores Range: full body


# ---------------------------------------------------------------------------------------- lock


def test_hints_name_the_corpus_and_lock_files_in_use(tmp_path, server):
    server.add_paper("2101.00190", versions=2)
    corpus = tmp_path / "lists" / "physics.toml"
    locked = {"2101.00190": LockEntry("v1", "0" * 64)}
    options = make_options(tmp_path, server, corpus_file=corpus)

    result = fetch_papers(
        [PaperRef("2101.00190"), PaperRef("not-an-id")], options, locked=locked, progress=False
    )

    hints = {f.arxiv_id: f.hint for f in result.failures}
    assert hints["not-an-id"] == f"check the id in {corpus}"
    lock = tmp_path / "lists" / "physics.lock"
    assert hints["2101.00190"] == f"delete its entry from {lock} to accept the new file"
    assert "corpus/readingroom" not in " ".join(hints.values())


def test_lock_file_pins_the_version_and_guards_the_checksum(tmp_path, server):
    server.add_paper("2005.11401", versions=3)
    server.add_paper("2101.00190", versions=2)
    server.add_paper("2203.02155", versions=2)
    locked = {
        "2005.11401": LockEntry("v2", sha(server.pdf_bytes("2005.11401v2"))),
        "2101.00190": LockEntry("v1", "0" * 64),  # the file arXiv serves no longer matches
        "2203.02155": LockEntry("v1", sha(server.pdf_bytes("2203.02155v1"))),
    }
    refs = [PaperRef("2005.11401"), PaperRef("2101.00190"), PaperRef("2203.02155", version="v2")]

    result = fetch_papers(refs, make_options(tmp_path, server), locked=locked, progress=False)

    assert [r.query["id_list"] for r in server.api_requests()] == ["2005.11401v2,2101.00190v1,2203.02155v2"]
    versions = {p.meta.arxiv_id: p.meta.version for p in result.papers}
    assert versions == {"2005.11401": "v2", "2203.02155": "v2"}  # the reading list's pin beats the lock
    [failure] = result.failures
    assert failure.arxiv_id == "2101.00190" and "sha256" in failure.reason
    assert failure.hint == "delete its entry from corpus/readingroom.lock to accept the new file"

    # The new file is cached: the lock still rejects it offline; without the entry it is accepted.
    server.clear()
    offline = make_options(tmp_path, server, offline=True)
    still = fetch_papers(refs, offline, locked=locked, progress=False)
    assert [f.arxiv_id for f in still.failures] == ["2101.00190"]
    del locked["2101.00190"]
    accepted = fetch_papers(refs, offline, locked=locked, progress=False)
    assert accepted.failures == [] and len(accepted.papers) == 3
    assert server.requests == []


# --------------------------------------------------------------------------------------- mirror


# Generated papers in a mirror folder laid out as ../shared/arxiv-mirror is: doc2query's copy is v2 (its
# record has a version date and no first-publication date), grouped-query attention's is v1.
DOC2QUERY, GQA = corpus.DOC2QUERY, corpus.GQA


@pytest.fixture
def small_mirror(tmp_path) -> Path:
    """Two generated papers in a mirror folder of this test's own (writable)."""
    return corpus.write_mirror(tmp_path / "mirror", [DOC2QUERY.arxiv_id, GQA.arxiv_id])


def test_mirror_papers_are_used_in_place_and_others_go_online(tmp_path, server, small_mirror):
    server.add_paper("2412.00001")
    refs = [PaperRef(DOC2QUERY.arxiv_id), PaperRef("2412.00001"), PaperRef(GQA.arxiv_id)]

    result = fetch_papers(refs, make_options(tmp_path, server, mirror=small_mirror), progress=False)

    assert result.failures == []
    assert [p.source for p in result.papers] == ["mirror", "arxiv", "mirror"]
    doc2query = result.papers[0]
    mirror_meta = json.loads((small_mirror / f"meta/{DOC2QUERY.arxiv_id}.json").read_text())
    assert (
        Path(doc2query.pdf_path) == (small_mirror / f"pdf/{DOC2QUERY.arxiv_id}.pdf").absolute()
    )  # not copied
    assert doc2query.pdf_sha256 == mirror_meta["pdf_sha256"]
    meta = doc2query.meta
    assert (meta.version, meta.title, meta.updated, meta.published) == (
        "v2",
        DOC2QUERY.title,
        "2020-01-15",
        "",
    )
    assert meta.authors == DOC2QUERY.authors and meta.primary_category == "cs.IR"
    assert (result.papers[2].meta.version, result.papers[2].meta.published) == ("v1", "2023-05-22")
    assert not (tmp_path / f"cache/papers/{DOC2QUERY.arxiv_id}").exists()
    assert [r.query["id_list"] for r in server.api_requests()] == ["2412.00001"]
    assert len(server.requests) == 2


def test_mirror_checksum_mismatch_is_a_failure(tmp_path, server, small_mirror):
    pdf = small_mirror / "pdf" / f"{GQA.arxiv_id}.pdf"
    data = bytearray(pdf.read_bytes())
    data[len(data) // 2] ^= 0xFF
    pdf.write_bytes(bytes(data))

    result = fetch_papers(
        [PaperRef(DOC2QUERY.arxiv_id), PaperRef(GQA.arxiv_id)],
        make_options(tmp_path, server, mirror=small_mirror),
        progress=False,
    )

    assert [p.meta.arxiv_id for p in result.papers] == [DOC2QUERY.arxiv_id]
    [failure] = result.failures
    assert failure.arxiv_id == GQA.arxiv_id and "damaged" in failure.reason
    assert_one_line(result.failures)
    assert server.requests == []


def test_version_the_mirror_lacks_is_a_failure(tmp_path, server, small_mirror):
    refs = [PaperRef(DOC2QUERY.arxiv_id, version="v1"), PaperRef(GQA.arxiv_id)]
    locked = {GQA.arxiv_id: LockEntry("v2", "0" * 64)}

    result = fetch_papers(
        refs, make_options(tmp_path, server, mirror=small_mirror), locked=locked, progress=False
    )

    assert result.papers == [] and server.requests == []
    failures = by_id(result.failures)
    assert "the mirror holds v2, not v1" in failures[DOC2QUERY.arxiv_id].reason
    assert "pin the mirror's version v2" in failures[DOC2QUERY.arxiv_id].hint
    assert "the mirror holds v1, not v2" in failures[GQA.arxiv_id].reason
    assert "corpus/readingroom.lock" in failures[GQA.arxiv_id].hint
    assert_one_line(result.failures)

    # The mirror's own version with a matching lock entry is fine.
    pinned = json.loads((small_mirror / f"meta/{GQA.arxiv_id}.json").read_text())
    ok = fetch_papers(
        [PaperRef(DOC2QUERY.arxiv_id, version="v2"), PaperRef(GQA.arxiv_id)],
        make_options(tmp_path, server, mirror=small_mirror, offline=True),
        locked={GQA.arxiv_id: LockEntry("v1", pinned["pdf_sha256"])},
        progress=False,
    )
    assert ok.failures == [] and [p.source for p in ok.papers] == ["mirror", "mirror"]


# ------------------------------------------------------------------------------------- the rest


def test_bad_ids_and_versions_fail_before_any_request(tmp_path, server):
    refs = [PaperRef("not-an-id"), PaperRef("2005.11401", version="4"), PaperRef("2005.11401v4")]

    result = fetch_papers(refs, make_options(tmp_path, server), progress=False)

    assert result.papers == [] and server.requests == []
    assert len(result.failures) == 3
    assert_one_line(result.failures)


def test_unreachable_arxiv_fails_fast_after_the_first_batch(tmp_path):
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    options = make_options(tmp_path, api_url=f"http://127.0.0.1:{port}/api/query?{{}}", batch_size=1)
    refs = [PaperRef("2005.11401"), PaperRef("2101.00190"), PaperRef("2203.02155")]

    result = fetch_papers(refs, options, progress=False)

    assert result.papers == [] and len(result.failures) == 3
    assert "could not reach the arXiv API" in result.failures[0].reason
    assert all("unreachable earlier in this run" in f.reason for f in result.failures[1:])
    assert_one_line(result.failures)


def test_progress_bar_goes_to_stderr(tmp_path, capsys):
    fetch_papers([PaperRef("2005.11401")], make_options(tmp_path, offline=True), progress=True)
    captured = capsys.readouterr()
    assert "fetch" in captured.err and captured.out == ""


def test_refresh_asks_arxiv_for_new_versions_of_unpinned_papers_only(tmp_path, server):
    server.add_paper("2005.11401")
    server.add_paper("2101.00190", versions=2)
    refs = [PaperRef("2005.11401"), PaperRef("2101.00190", version="v1")]
    first = fetch_papers(refs, make_options(tmp_path, server), progress=False)
    locked = {p.meta.arxiv_id: LockEntry(p.meta.version, p.pdf_sha256) for p in first.papers}
    assert {i: e.version for i, e in locked.items()} == {"2005.11401": "v1", "2101.00190": "v1"}
    server.add_paper("2005.11401", versions=2)  # arXiv gets a v2
    server.clear()

    kept = fetch_papers(refs, make_options(tmp_path, server), locked=locked, progress=False)
    assert [p.meta.versioned_id for p in kept.papers] == ["2005.11401v1", "2101.00190v1"]
    assert server.requests == []  # the lock file pins v1: no question to arXiv

    options = make_options(tmp_path, server, refresh=True)
    refreshed = fetch_papers(refs, options, locked=locked, progress=False)
    assert refreshed.failures == []
    assert [p.meta.versioned_id for p in refreshed.papers] == ["2005.11401v2", "2101.00190v1"]
    assert [r.query["id_list"] for r in server.api_requests()] == ["2005.11401"]  # not the pinned one
    assert [r.path for r in server.pdf_requests()] == ["/pdf/2005.11401v2"]
    server.clear()

    again = fetch_papers(refs, make_options(tmp_path, server, refresh=True), locked=locked, progress=False)
    assert [p.meta.versioned_id for p in again.papers] == ["2005.11401v2", "2101.00190v1"]
    assert len(server.api_requests()) == 1 and server.pdf_requests() == []  # v2 is cached now

    offline = fetch_papers(
        refs, make_options(tmp_path, server, refresh=True, offline=True), locked=locked, progress=False
    )
    assert [p.meta.versioned_id for p in offline.papers] == ["2005.11401v1", "2101.00190v1"]
