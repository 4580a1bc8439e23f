"""The ranged site in Debian chromium, served by `builder serve` (206 for a Range) and by hosts that
misbehave as real ones do: one that ignores Range (200, the whole file), one that gzips whatever asks for
gzip (GitHub Pages' habit), one that gzips every reply. Each must give the CLI's top 10.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from support.builds import SMALL_PAPERS
from support.chromium import TOP_CHUNK_IDS, wait_for
from support.quirky_host import QuirkyHost
from support.served import build_from_cache, corpus_text, require_browser, serving

from builder.evaluation.evaluate import top_chunk_ids
from readingroom_core.browser import open_folder
from readingroom_core.options import SearchOptions
from readingroom_core.ranges import folder_reader

pytestmark = pytest.mark.browser

LOAD_TIMEOUT_MS = 90_000
QUERIES = ["predicted queries appended to documents", "dense passage retrieval", "renormalization group"]


@pytest.fixture(scope="module")
def ranged_site(built_sites, tmp_path_factory, generated_mirror) -> Path:
    require_browser()
    corpus = corpus_text(SMALL_PAPERS, "Ranged test", whole_index_mb=0)  # read by range, however small
    return build_from_cache(tmp_path_factory.mktemp("ranged"), corpus, built_sites.cache, generated_mirror)


def postings_directory(site: Path) -> dict:
    manifest = json.loads((site / "manifest.json").read_text())
    return json.loads(folder_reader(site)(manifest["files"]["postings"]).decode("utf-8"))


def ranged_files(site: Path) -> set[str]:
    """The files read by range: listed in the manifest, named by the directories, never gzipped."""
    manifest = json.loads((site / "manifest.json").read_text())
    postings = postings_directory(site)
    dense = json.loads(folder_reader(site)(manifest["files"]["dense"]).decode("utf-8"))
    return {postings["terms"], postings["pages"], dense["lists_file"], dense["rows_file"]}


class Visit:
    """A page on `url`, its ranged-file responses and its console errors recorded."""

    def __init__(self, browser, url: str, ranged: set[str]):
        self.context = browser.new_context()
        self.page = self.context.new_page()
        self.page.set_default_timeout(LOAD_TIMEOUT_MS)
        self.ranged_responses: list[tuple[str, str | None, int]] = []  # method, Range, status
        self.responses: list[tuple[str, str | None, int]] = []  # every one: path, Range, status
        self.errors: list[str] = []
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))

        def seen(response) -> None:
            request = response.request
            path = urlsplit(response.url).path
            self.responses.append((path, request.headers.get("range"), response.status))
            if any(path.endswith(ranged_path) for ranged_path in ranged):
                self.ranged_responses.append((request.method, request.headers.get("range"), response.status))

        self.page.on("response", seen)
        self.page.goto(url)
        self.page.evaluate("window.readingRoom.semanticReady")

    def top_ten(self) -> list[list[str]]:
        return self.page.evaluate(TOP_CHUNK_IDS, [QUERIES, 10])


def test_serve_answers_the_ranged_reads_and_the_browser_ranks_as_the_cli(browser, ranged_site):
    expected = top_chunk_ids(ranged_site, QUERIES, SearchOptions(k=10))
    with serving(ranged_site) as url:
        visit = Visit(browser, url, ranged_files(ranged_site))
        try:
            assert visit.top_ten() == expected
            status = visit.page.evaluate("readingRoom.status()")
        finally:
            visit.context.close()
    assert visit.errors == []
    assert visit.ranged_responses and all(
        method == "GET" and range_ and range_.startswith("bytes=") and code == 206
        for method, range_, code in visit.ranged_responses
    )
    # start-up reads the directories, and the forward index whole (counted as data): nothing by range
    assert "index" not in status["kinds"]
    forward_index = postings_directory(ranged_site)["forward_index"][0]
    fetched = [(range_, code) for path, range_, code in visit.responses if path.endswith(forward_index)]
    assert fetched == [(None, 200)]  # once, whole, while Python boots: the queries slice it
    assert "index_read_whole" not in status["timeline"]  # whole_index_mb = 0: the index stays ranged


def index_files(site: Path) -> list[str]:
    """Site.ranged_files once semantic search is up, in its order."""
    opened = open_folder(site)
    opened.load_semantic()
    return json.loads(opened.ranged_files())


def files_to_read_whole(site: Path) -> list[str]:
    """The index files, less the forward index that start-up fetches whole."""
    return [path for path in index_files(site) if path != postings_directory(site)["forward_index"][0]]


@pytest.fixture(scope="module")
def partial_site(built_sites, tmp_path_factory, generated_mirror, ranged_site) -> Path:
    """The ranged site's papers with room for its first two files to read whole and half the third: the
    same papers build the same index files, so their sizes are known before the build."""
    sizes = [(ranged_site / path).stat().st_size for path in files_to_read_whole(ranged_site)]
    budget_mb = (sum(sizes[:2]) + sizes[2] / 2) / (1 << 20)
    corpus = corpus_text(SMALL_PAPERS, "Partly whole", whole_index_mb=budget_mb)
    return build_from_cache(tmp_path_factory.mktemp("partial"), corpus, built_sites.cache, generated_mirror)


def test_a_larger_list_reads_whole_the_files_that_fit_in_their_order(browser, partial_site):
    files = files_to_read_whole(partial_site)
    with serving(partial_site) as url:
        visit = Visit(browser, url, set(files))
        try:
            wait_for(visit.page, "readingRoom.status().timeline.index_read_whole !== undefined")
            read_whole = len(visit.responses)
            assert visit.top_ten() == top_chunk_ids(partial_site, QUERIES, SearchOptions(k=10))
        finally:
            visit.context.close()
    assert visit.errors == []
    whole = [path.lstrip("/") for path, range_, _ in visit.responses[:read_whole] if range_ is None]
    assert [path for path in whole if path in files] == files[:2]
    ranged_later = {path.lstrip("/") for path, range_, _ in visit.responses[read_whole:] if range_}
    assert ranged_later & set(files[2:]) and not ranged_later & set(files[:2])


def test_a_small_list_reads_its_index_whole_once_searches_pause(browser, built_sites):
    """Whole files come once, unranged and checked, after start-up and after the searches asked then; a
    question first seen after them reads no index range (only the encoder's word pieces) and ranks as
    the CLI does."""
    site = built_sites.first
    files = index_files(site)
    questions = ["hybrid retrieval with sparse and dense signals", "calibration of language model confidence"]
    with serving(site) as url:
        visit = Visit(browser, url, set(files))
        try:
            assert visit.top_ten() == top_chunk_ids(site, QUERIES, SearchOptions(k=10))  # while they come
            wait_for(visit.page, "readingRoom.status().timeline.index_read_whole !== undefined")
            read_whole = len(visit.responses)
            tops = visit.page.evaluate(TOP_CHUNK_IDS, [questions, 10])
        finally:
            visit.context.close()
    assert visit.errors == []
    assert tops == top_chunk_ids(site, questions, SearchOptions(k=10))
    unranged = [path for path, range_, _ in visit.responses[:read_whole] if range_ is None]
    assert sorted(path for path in unranged if path.lstrip("/") in files) == sorted("/" + p for p in files)
    later = [(path, range_) for path, range_, _ in visit.responses[read_whole:]]
    assert all(path.startswith("/model/word-pieces.") for path, _ in later), later


@pytest.mark.parametrize(
    ("ignore_range", "gzip"),
    [(True, "never"), (False, "accepted"), (False, "always")],
    ids=["ignores-range", "gzips-what-accepts-gzip", "gzips-everything"],
)
def test_a_host_that_ignores_range_or_gzips_still_gives_the_cli_top_ten(
    browser, ranged_site, ignore_range, gzip
):
    expected = top_chunk_ids(ranged_site, QUERIES, SearchOptions(k=10))
    ranged = ranged_files(ranged_site)
    with QuirkyHost(ranged_site, ignore_range=ignore_range, gzip=gzip) as host:
        visit = Visit(browser, host.url, ranged)
        try:
            assert visit.top_ten() == expected
        finally:
            visit.context.close()
        seen = [request for request in host.requests if any(request.path.endswith(path) for path in ranged)]
    assert visit.errors == []
    assert seen and all(request.method == "GET" for request in seen)  # never a HEAD
    if gzip == "accepted":  # a ranged fetch asks for identity, so Pages' gzip never meets it
        assert all(r.range and r.accept_encoding == "identity" and r.status == 206 for r in seen)
    elif ignore_range:  # whole files: each read once, then sliced
        assert all(request.range and request.status == 200 for request in seen)
        assert len(seen) == len({request.path for request in seen})
    else:  # the browser refuses gzip it did not ask for: each file is then read whole, once, unranged
        unranged = [request for request in seen if not request.range]
        assert len(unranged) == len({r.path for r in unranged}) == len({r.path for r in seen})


def test_ranges_of_one_file_travel_in_parallel(browser, ranged_site):
    """Chromium's HTTP cache lets one request at a time work on a URL's entry: ranges of one file asked
    for under the file's own URL came one after another, a round trip each, however many were in flight."""
    ranged = ranged_files(ranged_site)
    with QuirkyHost(ranged_site, round_trip_s=0.25) as host:
        visit = Visit(browser, host.url, ranged)
        try:
            assert visit.top_ten() == top_chunk_ids(ranged_site, QUERIES, SearchOptions(k=10))
        finally:
            visit.context.close()
        seen = [request for request in host.requests if request.status == 206]
    together = [
        (first, second)
        for first in seen
        for second in seen
        if first is not second
        and first.path == second.path
        and first.received < second.received < first.answered
    ]
    assert together, "no two ranges of one file were ever in flight at once"


def test_the_dense_side_reads_while_the_keyword_side_still_reads(browser, ranged_site):
    """Once the query's vector is in, its coarse lists are asked for while the keyword side's postings are
    still on their way (worker.js: Site.dense_ahead), not a round trip after the last of them: on a
    distant host the dense side's rounds overlap the keyword side's."""
    manifest = json.loads((ranged_site / "manifest.json").read_text())
    dense = json.loads(folder_reader(ranged_site)(manifest["files"]["dense"]).decode("utf-8"))
    pages = postings_directory(ranged_site)["pages"]
    with QuirkyHost(ranged_site, round_trip_s=0.5) as host:
        visit = Visit(browser, host.url, ranged_files(ranged_site))
        try:
            started = len(host.requests)
            hits = visit.page.evaluate(
                "q => window.readingRoom.search(q, {k: 10, mode: 'hybrid'})", QUERIES[0]
            )
        finally:
            visit.context.close()
        asked = [request for request in host.requests[started:] if request.status == 206]
    assert [hit["chunk_id"] for hit in hits] == top_chunk_ids(ranged_site, QUERIES[:1], SearchOptions(k=10))[
        0
    ]
    lists = [request for request in asked if request.path.endswith(dense["lists_file"])]
    postings = [request for request in asked if request.path.endswith(pages)]
    assert lists and postings
    assert min(r.received for r in lists) < max(r.answered for r in postings)
    assert len({(r.path, r.range) for r in asked}) == len(asked)  # and nothing is read twice
