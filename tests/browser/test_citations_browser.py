"""Issue 60's items 1, 4 and 5 in Debian chromium, at desktop (1366x900) and phone (390x844) sizes:
semantic mode runs the query that waited for the encoder and says which retrievers ran; every arXiv link
names the version indexed; the BibTeX of a result, of its paper page, of a result-set export and of the
visitor's own list (collected with "Add to my list") is one entry, which pybtex reads; the whole list
exports as BibTeX and CSL-JSON; and nothing is fetched from outside the site.

Screenshots are written to $READINGROOM_SHOTS when set.
"""

import json
from pathlib import Path
from urllib.parse import urlencode

import pytest
from pybtex.database import parse_string
from support import corpus
from support.builds import ADDED_PAPER, SMALL_PAPERS
from support.chromium import wait_for
from support.site_page import DOC2QUERY, PHONE, VECTORS, Watched, release, shoot

pytestmark = pytest.mark.browser

DESKTOP = {"width": 1366, "height": 900}
SUMMARY = "document.querySelector('#results .message')?.textContent || ''"
QUESTION = "how does the model expand passages with predicted queries"
VERSIONS = {topic.arxiv_id: f"v{topic.versions}" for topic in corpus.TOPICS}
SIZES = pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])


def held_open(view: Watched, url: str) -> list:
    """Open `url` with the dense directory held back, so semantic search cannot come up yet."""
    held: list = []
    view.context.route(VECTORS, lambda route: held.append(route))
    view.page.goto(url)
    view.page.evaluate("window.readingRoom.ready")
    return held


@SIZES
def test_a_semantic_link_runs_by_itself_once_the_encoder_is_up(site_url, watched, viewport):
    page = watched.page
    page.set_viewport_size(viewport)
    held = held_open(watched, site_url + "?" + urlencode({"q": QUESTION, "mode": "dense"}))
    waiting = f"Semantic search is still loading; “{QUESTION}” will run as soon as it is ready."
    wait_for(page, f"() => ({SUMMARY}) === {json.dumps(waiting)}")
    shoot(page, f"semantic-waiting-{viewport['width']}")
    release(page, held)
    wait_for(page, f"() => ({SUMMARY}).endsWith('(semantic search)')")  # no Enter pressed again
    assert "keyword" not in page.evaluate(SUMMARY)
    assert page.query_selector_all("#results .hit")
    shoot(page, f"semantic-ran-{viewport['width']}")
    assert watched.foreign == [] and watched.errors == []


def test_semantic_mode_chosen_and_searched_before_loading_ends_runs_when_ready(site_url, watched):
    page = watched.page
    page.set_viewport_size(DESKTOP)
    held = held_open(watched, site_url)
    page.select_option("#mode", "dense")
    page.fill("#q", QUESTION)
    page.press("#q", "Enter")
    wait_for(page, f"() => ({SUMMARY}).startsWith('Semantic search is still loading')")
    release(page, held)
    wait_for(page, f"() => ({SUMMARY}).endsWith('(semantic search)')")
    page.select_option("#mode", "bm25")
    page.press("#q", "Enter")
    wait_for(page, f"() => ({SUMMARY}).endsWith('(keyword search)')")
    page.select_option("#mode", "hybrid")
    page.press("#q", "Enter")
    wait_for(page, f"() => ({SUMMARY}).endsWith('(keyword + semantic search)')")


def download(page, selector: str) -> str:
    with page.expect_download() as saved:
        page.click(selector)
    return Path(saved.value.path()).read_text(encoding="utf-8")


def copied(page, selector: str) -> str:
    page.evaluate("window.copied = null")
    page.click(selector)
    wait_for(page, "() => window.copied !== null")
    return page.evaluate("window.copied")


@SIZES
def test_every_place_gives_one_versioned_entry(site_url, watched, viewport):
    page = watched.page
    page.set_viewport_size(viewport)
    watched.open(site_url + "?mode=bm25")
    watched.search("doc2query predicted queries")
    assert watched.hits()[0][0] == DOC2QUERY
    version = VERSIONS[DOC2QUERY]
    first = page.locator("#results .hit").first
    assert (
        first.locator(".pdf-link")
        .get_attribute("href")
        .startswith(f"https://arxiv.org/pdf/{DOC2QUERY}{version}#page=")
    )
    abstract = first.get_by_text("arXiv abstract").get_attribute("href")
    assert abstract == f"https://arxiv.org/abs/{DOC2QUERY}{version}"
    page.evaluate("navigator.clipboard.writeText = async (text) => { window.copied = text; }")
    from_result = copied(page, "#results .hit .copy-bibtex")
    assert f"arXiv:{DOC2QUERY}{version}," in copied(page, "#results .hit .copy")
    result_set = download(page, "#results .sort .export-bib")
    groups = page.locator("#results .paper-group").count()
    entries = parse_string(result_set, "bibtex").entries
    assert len(entries) == groups and from_result in result_set  # the same text, not just the same fields
    csl = json.loads(download(page, "#results .sort .export-json"))
    assert [item["id"] for item in csl] == list(entries)
    page.locator("#results .paper-group").first.locator(".my-list-toggle").click()
    assert (
        page.locator("#results .paper-group").first.locator(".my-list-toggle").get_attribute("aria-pressed")
        == "true"
    )
    shoot(page, f"results-exports-{viewport['width']}")

    page.click("#results .paper-group h2 a")
    page.wait_for_url(f"**/papers/{DOC2QUERY}/")
    page.evaluate("navigator.clipboard.writeText = async (text) => { window.copied = text; }")
    assert copied(page, "#cite-actions .copy-bibtex") == from_result
    assert page.inner_text("#cite-actions .my-list-toggle") == "On my list ✓"
    shoot(page, f"paper-page-{viewport['width']}")

    page.goto(site_url + "corpus/")
    wait_for(page, "() => !document.getElementById('list-exports').hidden")
    assert "your list (1 paper)" in page.inner_text("#list-exports")
    shoot(page, f"corpus-exports-{viewport['width']}")
    mine = download(page, "#list-exports .mine .export-bib")
    assert mine == from_result + "\n"
    whole = parse_string(download(page, "#list-exports > .export .export-bib"), "bibtex").entries
    assert len(whole) == len((*SMALL_PAPERS, ADDED_PAPER))
    for entry in whole.values():
        arxiv_id = entry.fields["eprint"].rsplit("v", 1)[0]
        assert (
            entry.fields["eprint"] == arxiv_id + VERSIONS[arxiv_id]
            and entry.fields["archivePrefix"] == "arXiv"
        )
        assert entry.fields["url"] == f"https://arxiv.org/abs/{arxiv_id}{VERSIONS[arxiv_id]}"
        assert "note" not in entry.fields
    whole_csl = json.loads(download(page, "#list-exports > .export .export-json"))
    assert {item["number"] for item in whole_csl} == {
        f"arXiv:{i}{VERSIONS[i]}" for i in (*SMALL_PAPERS, ADDED_PAPER)
    }
    page.click("#list-exports .clear-my-list")
    assert "Your list is empty" in page.inner_text("#list-exports")
    assert watched.foreign == [] and watched.errors == []
