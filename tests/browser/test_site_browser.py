"""The built site in Debian chromium: search in the browser, from the site's own origin, under a sub-path.

One site (the four generated test papers, base_url "/sub/path/") is built and served on 127.0.0.1. Every page a
test opens is watched: a request to any other host, a console error or an uncaught exception fails it.
"""

import gzip
import json
import os
from urllib.parse import urlsplit

import pytest
from support import corpus
from support.builds import ADDED_PAPER, SMALL_PAPERS
from support.chromium import SEARCH_WORKER, TOP_CHUNK_IDS, WorkerHeaps, wait_for
from support.served import build_from_cache, corpus_text, require_browser, serving
from support.site_page import BASE, DOC2QUERY, KEYWORD_QUESTION

from builder.evaluation.evaluate import top_chunk_ids
from builder.paths import REPO_ROOT
from readingroom_core.options import SearchOptions

pytestmark = pytest.mark.browser

RG_PAPER = ADDED_PAPER  # 1410.3831, the renormalization-group paper
# Shares no indexed term with the four papers (checked below in bm25 mode); only meaning links it to RG.
PARAPHRASE = corpus.PARAPHRASE
# The pages the generated questions about doc2query name as gold.
DOC2QUERY_PAGES = {
    page
    for row in corpus.questions()
    for gold in row["relevant"]
    if gold["arxiv_id"] == DOC2QUERY
    for page in gold["pages"]
}


def test_keyword_query_finds_paper_and_page(site_url, watched):
    watched.open(site_url)
    watched.search(KEYWORD_QUESTION)
    arxiv_id, page = watched.hits()[0]
    assert arxiv_id == DOC2QUERY and page in DOC2QUERY_PAGES
    first = watched.page.query_selector("#results .hit")
    assert first.query_selector("mark") is not None  # highlighted query terms
    assert (
        first.query_selector(".pdf-link").get_attribute("href")
        == f"https://arxiv.org/pdf/{DOC2QUERY}v{corpus.DOC2QUERY.versions}#page={page}"  # the version indexed
    )
    group_title = watched.page.query_selector("#results .paper-group h2 a")
    assert group_title.get_attribute("href") == f"{BASE}papers/{DOC2QUERY}/"


def test_paraphrase_is_found_by_the_semantic_side(site_url, watched):
    watched.open(site_url)
    page = watched.page
    assert page.evaluate("q => readingRoom.search(q, {mode: 'bm25'})", PARAPHRASE) == []
    page.evaluate("window.readingRoom.semanticReady")
    status = page.evaluate("readingRoom.status()")
    assert status["keyword"] and status["semantic"] and status["bytes"] > 10_000_000
    watched.search(PARAPHRASE)
    assert watched.hits()[0][0] == RG_PAPER
    assert "semantic" in page.inner_text("#results .message")


SEARCH_AGAIN = """async ([query, k]) => {
  const hits = await readingRoom.search(query, {k});
  return {chunks: hits.map((hit) => hit.chunk_id), cached: readingRoom.status().last_search.vector_cached};
}"""


def test_a_query_searched_again_reuses_its_vector(site_url, watched):
    """More results, a filter or the same words again: the worker's encoder runs once per text."""
    watched.open(site_url)
    page = watched.page
    page.evaluate("window.readingRoom.semanticReady")
    first = page.evaluate(SEARCH_AGAIN, [KEYWORD_QUESTION, 5])
    assert first["cached"] is False and len(first["chunks"]) == 5
    more = page.evaluate(SEARCH_AGAIN, [KEYWORD_QUESTION, 10])
    assert more["cached"] is True and more["chunks"][:5] == first["chunks"]
    # A field filter is not part of what the encoder reads (readingroom_core.engine.embedding_text).
    assert page.evaluate(SEARCH_AGAIN, [f"{KEYWORD_QUESTION} year:2000..2030", 5])["cached"] is True
    assert page.evaluate(SEARCH_AGAIN, [PARAPHRASE, 5])["cached"] is False


def test_a_first_sight_search_reads_texts_while_its_query_is_embedded(site_url, watched):
    """The texts of the best keyword matches are read while the encoder's worker embeds the query
    (worker.js readAhead), each range of the texts file once."""
    page = watched.page
    texts: list[str] = []
    page.on("request", lambda request: "/data/texts." in request.url and texts.append(request.url))
    watched.open(site_url)
    page.evaluate("window.readingRoom.semanticReady")
    hits = page.evaluate("q => readingRoom.search(q, {k: 10})", KEYWORD_QUESTION)
    timings = page.evaluate("readingRoom.status().last_search")
    assert hits[0]["arxiv_id"] == DOC2QUERY and timings["vector_cached"] is False
    assert timings["texts_ahead"] >= 1 and timings["ahead_ms"] > 0
    assert len(texts) == len(set(texts)) >= len({hit["arxiv_id"] for hit in hits})


def test_a_search_reports_the_size_of_pythons_memory(site_url, watched):
    """V8's heap figures leave out WebAssembly memory, where the core keeps its caches: the worker says
    how large Python's is with each search (the scale bench adds it to the search worker's heap)."""
    page = watched.page
    watched.open(site_url)
    page.evaluate("q => readingRoom.search(q, {k: 5, mode: 'bm25'})", KEYWORD_QUESTION)
    memory = page.evaluate("readingRoom.status().last_search.python_memory_bytes")
    assert 16 << 20 <= memory < 2 << 30 and memory % 65536 == 0  # whole WebAssembly pages


def test_filters_restrict_results(site_url, watched):
    watched.open(site_url)
    watched.search("model training data")
    assert len({arxiv_id for arxiv_id, _ in watched.hits()}) == 4
    watched.page.select_option("#tag", "t1")  # papers 2 and 4 of the list
    watched.page.wait_for_url("**tag=t1**")
    wait_for(watched.page, "document.querySelector('#results').getAttribute('aria-busy') === 'false'")
    tagged = {arxiv_id for arxiv_id, _ in watched.hits()}
    assert tagged and tagged <= {SMALL_PAPERS[1], ADDED_PAPER}
    watched.page.select_option("#tag", "")
    watched.page.select_option("#year-min", "2023")
    watched.page.wait_for_url("**year_min=2023**")
    wait_for(watched.page, "document.querySelector('#results').getAttribute('aria-busy') === 'false'")
    recent = {arxiv_id for arxiv_id, _ in watched.hits()}
    assert recent and recent <= {SMALL_PAPERS[1], SMALL_PAPERS[2]}  # 2412.x and 2305.x


def test_query_round_trips_through_the_url_and_history(site_url, watched):
    watched.open(site_url + "?mode=bm25")  # keyword mode: the same results whether or not semantic loaded
    watched.search("doc2query")
    first = watched.hits()
    assert "q=doc2query" in watched.page.url and "mode=bm25" in watched.page.url and first
    watched.page.reload()
    watched.page.wait_for_selector("#results .hit")
    assert watched.page.input_value("#q") == "doc2query"
    assert watched.page.input_value("#mode") == "bm25"
    assert watched.hits() == first
    watched.search("grouped query attention")
    assert watched.hits() != first
    watched.page.go_back()
    watched.page.wait_for_url("**q=doc2query&mode=bm25")
    wait_for(watched.page, "document.querySelector('#q').value === 'doc2query'")
    wait_for(watched.page, "document.querySelector('#results').getAttribute('aria-busy') === 'false'")
    assert watched.hits() == first


def test_keyboard_moves_through_results(site_url, watched):
    watched.open(site_url)
    page = watched.page
    page.click(".site-footer")  # focus away from the search box
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "q"
    page.keyboard.type("doc2query")
    page.keyboard.press("Enter")
    page.wait_for_selector("#results .hit")
    hits = watched.hits()
    active = "[document.activeElement.dataset.arxivId, Number(document.activeElement.dataset.page)]"
    page.keyboard.press("ArrowDown")
    assert tuple(page.evaluate(active)) == hits[0]
    page.keyboard.press("ArrowDown")
    assert tuple(page.evaluate(active)) == hits[1]
    page.keyboard.press("ArrowUp")
    assert tuple(page.evaluate(active)) == hits[0]
    # Enter follows the hit's PDF link; catch the click so the test never leaves the machine.
    page.evaluate(
        """document.addEventListener('click', (event) => {
             event.preventDefault(); window.openedLink = event.target.href; }, {capture: true})"""
    )
    page.keyboard.press("Enter")
    version = {topic.arxiv_id: f"v{topic.versions}" for topic in corpus.TOPICS}[hits[0][0]]
    assert (
        page.evaluate("window.openedLink") == f"https://arxiv.org/pdf/{hits[0][0]}{version}#page={hits[0][1]}"
    )


def test_browser_top_ten_equals_the_cli_for_many_questions(served_site, watched):
    """Same core, same ONNX encoder: `python -m builder query` and the browser rank the same chunks."""
    site_dir, url = served_site
    questions = corpus.queries()
    cli = top_chunk_ids(site_dir, questions, SearchOptions(k=10))
    watched.open(url)
    watched.page.evaluate("window.readingRoom.semanticReady")
    assert watched.page.evaluate(TOP_CHUNK_IDS, [questions, 10]) == cli
    # Every query finds something; the diversity caps (one result per page) and field filters can leave
    # fewer than 10 on four five-page papers, but most lists are full.
    assert all(cli) and sum(len(top) == 10 for top in cli) >= 0.75 * len(cli)


def test_a_first_visit_restores_python_from_the_built_snapshot(site_url, watched):
    """The build's Node-made snapshot restores in chromium: no Python boot even on a first visit."""
    page = watched.page
    watched.open(site_url)
    status = page.evaluate("readingRoom.status()")
    assert status["python_start"] == "snapshot"
    assert "python_started" in status["timeline"]
    watched.search(KEYWORD_QUESTION)
    assert watched.hits()[0][0] == DOC2QUERY
    page.evaluate("window.readingRoom.semanticReady")
    watched.search(PARAPHRASE)
    assert watched.hits()[0][0] == RG_PAPER


def test_the_search_worker_lets_go_of_the_snapshot_it_restored(served_site, watched):
    """Pyodide keeps the options it starts with for the whole visit: the unpacked snapshot, copied into
    Python's memory at the restore, must not stay in the search worker's heap with them (it was 31 MB,
    a third of that heap after start-up on a 1,000-paper list)."""
    site_dir, url = served_site
    (packed,) = (site_dir / "runtime").glob("python-snapshot.*.bin.gz")
    unpacked = len(gzip.decompress(packed.read_bytes()))
    heaps = WorkerHeaps(watched.context, watched.page)  # attached before the workers start
    watched.open(url)
    assert watched.page.evaluate("readingRoom.status().python_start") == "snapshot"
    buffers = heaps.measure(watched.page)[SEARCH_WORKER]["array_buffers"]
    assert buffers < unpacked / 2, f"{buffers:,} bytes of ArrayBuffers, the snapshot unpacked is {unpacked:,}"


MY_LIST = "/my-list/"
SCREENSHOT = REPO_ROOT / "docs" / "screenshot.png"
SCREENSHOT_SIZE = {"width": 1100, "height": 760}


@pytest.fixture(scope="module")
def my_list_url(built_sites, tmp_path_factory, generated_corpus):
    """The four papers built with `--base-url /my-list/` over a corpus file that says "/" (as the
    publishing workflow builds a project site), served as Pages would."""
    require_browser()
    root = tmp_path_factory.mktemp("my-list")
    corpus = corpus_text((*SMALL_PAPERS, ADDED_PAPER), "My list")
    site = build_from_cache(root, corpus, built_sites.cache, generated_corpus, "--base-url", MY_LIST)
    assert json.loads((site / "manifest.json").read_text())["base_url"] == MY_LIST
    with serving(site) as url:
        yield url


def test_every_internal_link_of_a_sub_path_build_loads(my_list_url, watched):
    """Crawl every same-origin <a href> from the home page; every page, script, style, data file and
    runtime file it loads must come back 200 from under /my-list/ (Pages would 404 anything else)."""
    page = watched.page
    origin = my_list_url[: -len(MY_LIST)]
    statuses: dict[str, int] = {}
    # The context sees the Web Worker's requests too (Pyodide, ONNX Runtime, data files).
    watched.context.on("response", lambda response: statuses.setdefault(response.url, response.status))
    queue, visited = [my_list_url], set()
    while queue:
        url = queue.pop(0)
        if url in visited:
            continue
        visited.add(url)
        target = watched.context.request.get(url)  # a data file linked from a page is fetched, not shown
        statuses.setdefault(url, target.status)
        if not target.headers.get("content-type", "").startswith("text/html"):
            continue
        response = page.goto(url)
        assert response is not None and response.status == 200, url
        if page.evaluate("typeof window.readingRoom !== 'undefined'"):
            # The first page waits for the semantic side too: the vectors and the encoder then loaded.
            page.evaluate(
                "window.readingRoom.semanticReady" if len(visited) == 1 else "window.readingRoom.ready"
            )
        # new URL(…): an SVG link's `href` (the corpus map's points) is an object, not a string
        resolved = "links => links.map((a) => new URL(a.getAttribute('href'), document.baseURI).href)"
        for href in page.eval_on_selector_all("a[href]", resolved):
            parts = urlsplit(href)
            if f"{parts.scheme}://{parts.netloc}" != origin:
                continue
            assert parts.path.startswith(MY_LIST), f"{url} links outside the site: {href}"
            queue.append(f"{origin}{parts.path}")  # query and fragment name no other file
    failed = {url: status for url, status in statuses.items() if status >= 400}
    assert failed == {}
    # blob: URLs are in memory (the worker imports Pyodide's glue from one), not requests to the host
    paths = {urlsplit(url).path for url in statuses if not url.startswith("blob:")}
    assert all(path.startswith(MY_LIST) for path in paths), sorted(
        p for p in paths if not p.startswith(MY_LIST)
    )
    assert {f"{MY_LIST}papers/{arxiv_id}/" for arxiv_id in (*SMALL_PAPERS, ADDED_PAPER)} <= visited_paths(
        visited
    )
    assert {f"{MY_LIST}corpus/", f"{MY_LIST}about/"} <= visited_paths(visited)
    files = {path.removesuffix(".gz") for path in paths}  # the workers fetch the .gz of a file stored gzipped
    assert any("/data/dense." in path for path in files) and any(path.endswith(".onnx") for path in files)
    assert any(path.endswith(".wasm") for path in files) and any(path.endswith(".css") for path in paths)


def visited_paths(urls) -> set[str]:
    return {urlsplit(url).path for url in urls}


def test_screenshot_for_the_readme(site_url, watched, tmp_path):
    """The README's picture is this page; READINGROOM_UPDATE_SCREENSHOT=1 writes it to docs/."""
    page = watched.page
    page.set_viewport_size(SCREENSHOT_SIZE)
    watched.open(site_url)
    page.evaluate("window.readingRoom.semanticReady")
    watched.search(KEYWORD_QUESTION)
    assert len(watched.hits()) >= 3
    target = SCREENSHOT if os.environ.get("READINGROOM_UPDATE_SCREENSHOT") else tmp_path / "screenshot.png"
    page.screenshot(path=str(target))
    data = target.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert (int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")) == (1100, 760)
    assert 20_000 < len(data) < 400_000
