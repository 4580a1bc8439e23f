"""Issue 60, items 2 and 3, in Debian chromium at desktop and phone sizes: the landing state before a
query (examples run in place, gone with results, back when the query is cleared) and a passage read in
context (from a result and from an Ask citation: the page's text with the passage marked, prev/next, the
indexed version's PDF at that page, a URL that can be shared, Back and Forward).

The four-paper site of the browser conftest (watched: no request leaves the machine, no console error).
READINGROOM_SHOTS=DIR saves the screenshots.
"""

import re
from urllib.parse import parse_qs, urlsplit

import pytest
from support.builds import SMALL_PAPERS
from support.chromium import wait_for
from support.site_page import shoot

pytestmark = pytest.mark.browser

GQA = SMALL_PAPERS[2]  # "Grouped-Query Attention: Sharing Key-Value Heads for Fast Decoding", one version
QUESTION = "How does Grouped-Query Attention work?"  # the landing's question drawn from that title
SIZES = {"desktop": {"width": 1366, "height": 900}, "phone": {"width": 390, "height": 844}}
IDLE = "document.querySelector('#results').getAttribute('aria-busy') === 'false'"
READ = "document.querySelector('#reader').getAttribute('aria-busy') === 'false' && !!document.querySelector('#reader .page-text')"


def landing_shown(page) -> bool:
    return page.is_visible("#landing")


@pytest.mark.parametrize("size", SIZES)
def test_the_landing_runs_an_example_goes_with_results_and_returns(site_url, watched, size):
    page = watched.page
    page.set_viewport_size(SIZES[size])
    watched.open(site_url)
    assert landing_shown(page)
    examples = page.eval_on_selector_all("#landing a.example", "links => links.map((a) => a.dataset.query)")
    assert QUESTION in examples and "tag:t0" in examples
    assert page.inner_text("#landing").count("Recently added") == 1
    shoot(page, f"landing-{size}")
    page.click(f"#landing a.example:text-is('{QUESTION}')")
    wait_for(page, "document.querySelector('#results .hit') !== null")
    wait_for(page, IDLE)
    assert parse_qs(urlsplit(page.url).query)["q"] == [QUESTION]  # in place: the same page, its URL
    assert page.input_value("#q") == QUESTION
    assert GQA in [arxiv_id for arxiv_id, _ in watched.hits()]
    assert not landing_shown(page)
    page.fill("#q", "")
    page.press("#q", "Enter")
    wait_for(page, "document.querySelector('#results').childElementCount === 0")
    assert landing_shown(page)  # cleared: back by itself
    page.go_back()
    page.wait_for_selector("#results .hit")
    assert not landing_shown(page)


@pytest.mark.parametrize("size", SIZES)
def test_a_result_opens_its_page_in_context_with_steps_and_history(site_url, watched, size):
    page = watched.page
    page.set_viewport_size(SIZES[size])
    watched.open(site_url)
    watched.search("grouped query attention key value heads")
    hit = page.query_selector("#results .hit")
    arxiv_id, number = hit.get_attribute("data-arxiv-id"), int(hit.get_attribute("data-page"))
    chunk = hit.get_attribute("data-chunk-id")
    snippet = " ".join(hit.query_selector(".snippet").inner_text().split())
    hit.query_selector("a.in-context").click()
    wait_for(page, READ)
    query = parse_qs(urlsplit(page.url).query)
    assert query["read"] == [arxiv_id] and query["p"] == [str(number)] and query["chunk"] == [chunk]
    assert not landing_shown(page) and not page.is_visible("#results") and not page.is_visible("#search-form")
    marked = " ".join(page.inner_text("#reader .page-text mark").split())
    words = [w for w in re.findall(r"\w+", snippet) if len(w) > 3][:5]
    assert len(marked) > 80 and all(word in marked for word in words)  # the result's passage, marked
    assert page.is_visible("#reader .page-text mark")  # scrolled into view
    assert (
        page.get_attribute("#reader .reader-pdf", "href")
        == f"https://arxiv.org/pdf/{arxiv_id}v1#page={number}"
    )
    shoot(page, f"in-context-{size}")
    step = "next" if page.query_selector("#reader a.reader-step.next") else "prev"
    page.click(f"#reader a.reader-step.{step}")
    wait_for(page, f"new URLSearchParams(location.search).get('p') !== '{number}'")
    wait_for(page, READ)
    other = int(parse_qs(urlsplit(page.url).query)["p"][0])
    assert other == number + (1 if step == "next" else -1)
    assert page.get_attribute("#reader .reader-pdf", "href").endswith(f"#page={other}")
    page.go_back()
    wait_for(page, f"new URLSearchParams(location.search).get('p') === '{number}'")
    wait_for(page, READ)
    assert page.is_visible("#reader .page-text mark")
    page.go_back()
    page.wait_for_selector("#results .hit")
    assert page.is_visible("#results") and not page.is_visible("#reader")
    page.go_forward()
    wait_for(page, READ)
    assert page.is_visible("#reader .page-text mark")


def test_a_shared_reading_link_opens_alone_and_leads_back_to_search(site_url, watched):
    page = watched.page
    page.set_viewport_size(SIZES["phone"])
    quote = "Memory bandwidth, not arithmetic, limits the speed of incremental decoding"
    page.goto(f"{site_url}?read={GQA}&p=2&quote={quote.replace(' ', '+')}")
    wait_for(page, READ)
    text = page.inner_text("#reader .page-text")
    if quote.split(",")[0] in text:  # generated pages draw their sentences: p.2 may not hold this one
        assert " ".join(page.inner_text("#reader .page-text mark").split()).startswith("Memory bandwidth")
    else:
        assert "not on this page" in page.inner_text("#reader .reader-note")
    assert "<" not in page.inner_html("#reader .page-text").replace("<mark>", "").replace("</mark>", "")
    page.click("#reader .reader-back")
    page.wait_for_url(site_url)
    assert landing_shown(page)


@pytest.mark.parametrize("size", SIZES)
def test_an_ask_citation_opens_its_quote_in_context(asking, llm, size):
    page = asking.page
    page.set_viewport_size(SIZES[size])
    asking.open()
    asking.configure("custom")
    turn = asking.ask()
    assert turn["state"] == "done" and turn["verified"], turn
    arxiv_id, _label, quote, _ = llm.answers[-1].expected[0]
    first = page.query_selector(".turn .cite.verified a.in-context")
    first.click()
    wait_for(page, READ)
    query = parse_qs(urlsplit(page.url).query)
    assert query["read"] == [arxiv_id] and query["quote"] == [quote]
    marked = " ".join(page.inner_text("#reader .page-text mark").split())
    assert re.sub(r"\W+", "", marked) == re.sub(r"\W+", "", quote)
    assert not page.is_visible("#ask")
    shoot(page, f"ask-in-context-{size}")
    page.go_back()
    page.wait_for_selector("#ask .turn")
    assert page.is_visible("#ask") and page.locator(".turn").count() == 1  # the thread is as it was
