"""Issue 12 in Debian chromium: what a visitor meets in the first minutes (filters alone, Back, the corpus table).

Uses the four-paper site and the watched pages of the browser conftest (no foreign requests, no console errors):
the generated test papers of tests/support/corpus.py, whose titles, authors and years the assertions name.
"""

import pytest
from support import corpus
from support.builds import ADDED_PAPER, SMALL_PAPERS
from support.chromium import wait_for
from support.corpus import PARAPHRASE
from support.served import require_browser, serving

pytestmark = pytest.mark.browser

DOC2QUERY = SMALL_PAPERS[0]
GQA = SMALL_PAPERS[2]  # "Grouped-Query Attention: Sharing Key-Value Heads for Fast Decoding"
IDLE = "document.querySelector('#results').getAttribute('aria-busy') === 'false'"


def test_search_in_this_paper_lists_its_sections(site_url, watched):
    """The paper page's "Search in this paper" link sends `id:…` alone; it used to say "No passages match"."""
    page = watched.page
    page.goto(f"{site_url}papers/{DOC2QUERY}/")
    page.click("text=Search in this paper")
    page.wait_for_url(
        lambda url: url.startswith(f"{site_url}?q=")
    )  # the search page answers, not the paper page
    page.evaluate("window.readingRoom.ready")
    page.wait_for_selector("#results .message")
    wait_for(page, IDLE)
    hits = watched.hits()
    assert len(hits) >= 3 and {arxiv_id for arxiv_id, _ in hits} == {DOC2QUERY}
    pages = [number for _, number in hits]
    assert pages == sorted(pages)  # sections in page order
    watched.search("tag:t1")  # the test corpus tags papers t0/t1: a tag alone lists its papers
    assert {arxiv_id for arxiv_id, _ in watched.hits()} == {SMALL_PAPERS[1], ADDED_PAPER}


def test_back_from_a_paper_restores_results_mode_and_scroll(site_url, watched):
    page = watched.page
    page.set_viewport_size({"width": 900, "height": 420})
    watched.open(site_url)
    page.evaluate("window.readingRoom.semanticReady")
    watched.search("model training data")
    assert "semantic" in page.inner_text("#results .message")
    before = watched.hits()
    assert len(before) > 8
    page.evaluate("document.querySelectorAll('#results .hit')[7].scrollIntoView()")
    page.wait_for_timeout(300)
    scrolled = page.evaluate("window.scrollY")
    assert scrolled > 300
    # A script click: page.click would first scroll the link into view and move the place to restore.
    page.evaluate(
        "document.querySelectorAll('#results .hit')[7].closest('.paper-group').querySelector('h2 a').click()"
    )
    page.wait_for_url("**/papers/**")
    page.go_back()
    page.wait_for_selector("#results .hit", timeout=2_000)  # drawn at once, not after the engine loads
    assert watched.hits() == before
    assert "semantic" in page.inner_text("#results .message")
    assert abs(page.evaluate("window.scrollY") - scrolled) < 5
    assert page.query_selector("#notice").is_hidden()  # no "update with semantic search" to click again


def test_corpus_table_sorts_filters_by_words_and_keeps_filters_in_the_url(site_url, watched):
    page = watched.page
    page.goto(f"{site_url}corpus/")

    def titles() -> list[str]:
        return [
            row.inner_text().split("\n")[0]
            for row in page.query_selector_all("#corpus-table tbody tr:not([hidden])")
        ]

    page.click("th button[data-sort=title]")
    assert titles() == sorted(titles(), key=str.lower)  # the first click sorts A to Z
    assert page.get_attribute("th:has(button[data-sort=title])", "aria-sort") == "ascending"
    page.fill("#corpus-text", "value key")  # the title says "Key-Value": words, in any order
    assert titles() == [corpus.GQA.title]
    page.wait_for_url("**q=value+key**")
    page.select_option("#corpus-tag", "t0")
    page.wait_for_url("**tag=t0**")
    page.reload()
    assert page.input_value("#corpus-text") == "value key" and page.input_value("#corpus-tag") == "t0"
    assert titles() == [corpus.GQA.title]
    page.select_option("#corpus-tag", "t1")  # GQA is tagged t0 only
    assert titles() == []


def test_a_typo_gets_a_did_you_mean_from_the_corpus(site_url, watched):
    watched.open(site_url + "?mode=bm25")
    watched.search("grouped query attenton")
    suggestion = watched.page.wait_for_selector("#results .suggestion a")
    assert suggestion.inner_text() == "grouped query attention"
    suggestion.click()
    watched.page.wait_for_url("**q=grouped+query+attention**")
    wait_for(watched.page, IDLE)
    assert watched.page.input_value("#q") == "grouped query attention"
    assert watched.page.query_selector("#results .suggestion") is None
    assert watched.hits()[0][0] == GQA


def test_nonsense_is_called_nonsense(site_url, watched):
    watched.open(site_url)
    watched.page.evaluate("window.readingRoom.semanticReady")
    watched.search("zzqx")
    assert watched.page.inner_text("#results .message").startswith("Nothing matches these words well")
    watched.search(PARAPHRASE)  # no shared word either, but close in meaning: real results
    assert watched.page.inner_text("#results .message").split()[1] == "passages"


def test_a_query_given_while_loading_says_it_waits_then_runs(site_url, watched):
    page = watched.page
    page.goto(site_url + "?q=doc2query&mode=bm25")  # the script starts long before Python is ready
    waiting = page.wait_for_selector("#results .message.waiting")
    assert "will run as soon as it is ready" in waiting.inner_text()
    page.wait_for_selector("#results .hit")
    assert page.query_selector("#results .waiting") is None
    page.evaluate("window.readingRoom.semanticReady")
    # The index read whole once searches pause still comes over after "ready", and is counted: wait for it.
    wait_for(
        page, "(t => !('index_whole_wanted' in t) || 'index_read_whole' in t)(readingRoom.status().timeline)"
    )
    loaded = page.inner_text("#status")
    for query in ("grouped query attention", "renormalization group", "doc2query expansion"):
        watched.search(query)
    assert page.inner_text("#status") == loaded  # searching is not loading: the figure stays


def test_copy_citation_gives_title_and_a_bibtex_entry(site_url, watched):
    page = watched.page
    watched.open(site_url + "?mode=bm25")
    watched.search("doc2query")
    page.evaluate("navigator.clipboard.writeText = async (text) => { window.copied = text; }")
    paper = (
        corpus.DOC2QUERY
    )  # "Expanding Documents with Predicted Queries ...", Rosa Lindqvist and two more, 2019
    assert watched.hits()[0][0] == DOC2QUERY
    pages = page.inner_text("#results .hit .pdf-link")  # "p.2" or "pp.2-3"
    page.click("#results .hit .copy")
    cited = page.evaluate("window.copied")
    authors = ", ".join(paper.authors)
    version = f"v{paper.versions}"  # the version the site indexed, in the reference part
    assert cited == (
        f"[arXiv:{DOC2QUERY} {pages}] {authors} (2019). {paper.title}. arXiv:{DOC2QUERY}{version}, {pages}."
    )
    page.evaluate("window.copied = null")
    page.click("#results .hit .copy-bibtex")  # the entry comes from the references file, fetched on the click
    wait_for(page, "() => window.copied !== null")
    entry = page.evaluate("window.copied")
    assert entry.startswith(
        "@misc{lindqvist2019expanding,\n"
    )  # first author's surname, year, first title word
    assert f"  title = {{{paper.title}}}," in entry and f"  eprint = {{{DOC2QUERY}{version}}}," in entry
    assert f"  author = {{{' and '.join(paper.authors)}}}," in entry and "  year = {2019}," in entry
    assert f"  primaryClass = {{{paper.categories[0]}}}," in entry and "note" not in entry
    assert f"  url = {{https://arxiv.org/abs/{DOC2QUERY}{version}}}" in entry
    assert entry.rstrip().endswith("}")


def test_sorting_papers_by_date_and_no_more_results_past_the_end(site_url, watched):
    page = watched.page
    watched.open(site_url + "?mode=bm25")
    watched.search("model data results training method performance table")
    first = watched.hits()
    # One passage per page of 4 five-page papers: fewer than a page of results, so nothing more to ask for.
    assert 4 < len(first) < 20 and page.query_selector("#results button.more") is None
    page.select_option("#sort", "date")
    page.wait_for_url("**sort=date**")
    groups = page.query_selector_all("#results .paper-group")
    years = [int(group.query_selector(".meta").inner_text().split(" · ")[-2]) for group in groups]
    assert len(groups) > 1 and years == sorted(years, reverse=True)
    # The first version's year: doc2query's v2 came out in 2020 and still reads 2019.
    first_years = {topic.arxiv_id: int(topic.published[:4]) for topic in corpus.TOPICS}
    assert years == [first_years[group.get_attribute("data-arxiv-id")] for group in groups]
    assert sorted(watched.hits()) == sorted(first)  # the same passages, papers reordered
    page.select_option("#sort", "")
    assert watched.hits() == first


@pytest.fixture(scope="module")
def mirror_url(mirror_site):
    """The four real mirror papers, 7-8 pages each: more passages than one page of results shows."""
    require_browser()
    with serving(mirror_site) as url:
        yield url


@pytest.mark.mirror
def test_more_results_continue_the_ranking(mirror_url, watched):
    page = watched.page
    watched.open(mirror_url + "?mode=bm25")
    watched.search("model data results training method performance table")
    first = watched.hits()
    assert len(first) == 20
    page.click("#results button.more")
    wait_for(page, "document.querySelectorAll('#results .hit').length > 20")
    assert watched.hits()[:20] == first  # the same ranking, continued
    active = "[document.activeElement.dataset.arxivId, Number(document.activeElement.dataset.page)]"
    assert tuple(page.evaluate(active)) == watched.hits()[20]  # focus where the new passages begin
    page.select_option("#sort", "date")
    page.wait_for_url("**sort=date**")
    years = [
        int(m.inner_text().split(" · ")[-2]) for m in page.query_selector_all("#results .paper-group .meta")
    ]
    assert years == sorted(years, reverse=True) and len(set(years)) > 1


def test_on_a_phone_the_first_result_is_in_view_and_filters_fold_away(site_url, browser):
    context = browser.new_context(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    page = context.new_page()
    try:
        page.goto(site_url + "?mode=bm25")
        page.evaluate("window.readingRoom.ready")
        assert page.is_hidden("#year-min") and page.is_hidden(".keyboard-help")
        page.fill("#q", "doc2query")
        page.press("#q", "Enter")
        first = page.wait_for_selector("#results .hit")
        assert first.bounding_box()["y"] < 844 * 0.75
        page.click(".options-toggle")
        assert (
            page.is_visible("#year-min") and page.get_attribute(".options-toggle", "aria-expanded") == "true"
        )
        assert "passages from" in page.inner_text("#result-count")
        assert page.get_attribute("#result-count", "aria-live") == "polite"
    finally:
        context.close()
