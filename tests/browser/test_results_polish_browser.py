"""The results page in Debian chromium: a shared ?q= link turns hybrid by itself when semantic search comes
up (unless the reader has moved on), filter-only lists get no update offer, the compact view fits a
screenful of results, a menu filter combined with a typed one says so, and the About page explains Ask.

Screenshots (desktop 1366x768, phone 390 px) are written to $READINGROOM_SHOTS when set.
"""

from urllib.parse import urlencode

import pytest
from support.chromium import wait_for
from support.site_page import DESKTOP, KEYWORD_QUESTION, PHONE, VECTORS, Watched, release, shoot

pytestmark = pytest.mark.browser

SUMMARY = "document.querySelector('#results .message')?.textContent || ''"


def open_held(view: Watched, url: str) -> list:
    """Open `url` with the dense directory held back (semantic search cannot come up); the held routes."""
    held: list = []
    view.context.route(VECTORS, lambda route: held.append(route))
    view.page.goto(url)
    view.page.evaluate("window.readingRoom.ready")
    return held


def test_a_q_link_turns_hybrid_by_itself_when_semantic_search_comes_up(site_url, watched):  # noqa: F811
    page = watched.page
    held = open_held(watched, site_url + "?" + urlencode({"q": KEYWORD_QUESTION}))
    wait_for(page, f"() => ({SUMMARY}).includes('(keyword search)')")
    keyword_order = [h.get_attribute("data-chunk-id") for h in page.query_selector_all("#results .hit")]
    release(page, held)
    wait_for(page, f"() => ({SUMMARY}).includes('keyword + semantic')")
    assert page.is_hidden("#notice")  # no button to press: it happened
    assert keyword_order  # the keyword list was drawn first
    assert page.evaluate("readingRoom.status().semantic")


def test_results_the_reader_has_moved_into_are_not_reordered_but_offered(site_url, watched):  # noqa: F811
    page = watched.page
    held = open_held(watched, site_url + "?" + urlencode({"q": KEYWORD_QUESTION}))
    wait_for(page, f"() => ({SUMMARY}).includes('(keyword search)')")
    page.focus("#q")
    page.keyboard.press("ArrowDown")  # into the results
    release(page, held)
    page.evaluate("window.readingRoom.semanticReady")
    wait_for(page, "() => !document.getElementById('notice').hidden")
    assert "(keyword search)" in page.evaluate(SUMMARY)
    page.click("#notice button")
    wait_for(page, f"() => ({SUMMARY}).includes('keyword + semantic')")


def test_a_filter_only_list_gets_no_semantic_update(site_url, watched):  # noqa: F811
    page = watched.page
    held = open_held(watched, site_url + "?" + urlencode({"q": "tag:t1"}))
    wait_for(page, "() => document.querySelectorAll('#results .hit').length > 0")
    before = page.evaluate(SUMMARY)
    release(page, held)
    page.evaluate("window.readingRoom.semanticReady")
    page.wait_for_timeout(500)
    assert page.is_hidden("#notice") and page.evaluate(SUMMARY) == before


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_the_compact_view_shows_one_line_per_passage(site_url, watched, viewport):  # noqa: F811
    page = watched.page
    page.set_viewport_size(viewport)
    watched.open(site_url)
    page.evaluate("window.readingRoom.semanticReady")
    watched.search("retrieval")
    page.select_option("#view", "compact")
    wait_for(page, "() => document.getElementById('results').classList.contains('compact')")
    hits = page.locator("#results .hit")
    heights = [hits.nth(n).bounding_box()["height"] for n in range(hits.count())]
    assert len(heights) >= 10 and max(heights) < 32, heights  # one line each
    fold = viewport["height"]
    above = sum(1 for n in range(hits.count()) if hits.nth(n).bounding_box()["y"] + 20 <= fold)
    if viewport is DESKTOP:
        assert above >= 6, above
    assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
    shoot(page, f"results-compact-{'phone' if viewport is PHONE else 'desktop'}")
    page.reload()  # the choice is kept in this browser
    page.evaluate("window.readingRoom.ready")
    wait_for(page, "() => document.querySelectorAll('#results .hit').length > 0")
    assert page.evaluate("document.getElementById('results').classList.contains('compact')")
    page.select_option("#view", "")
    assert hits.nth(0).bounding_box()["height"] > 40  # the full view again
    shoot(page, f"results-full-{'phone' if viewport is PHONE else 'desktop'}")


def test_a_menu_filter_and_a_typed_filter_say_that_they_combine(site_url, watched):  # noqa: F811
    page = watched.page
    page.set_viewport_size(DESKTOP)
    watched.open(site_url + "?" + urlencode({"q": "model tag:t0", "tag": "t1"}))
    wait_for(page, "() => document.querySelectorAll('#results .hit').length > 0")
    note = page.locator("#filter-note")
    assert note.is_visible()
    assert note.text_content() == (
        "The Tag menu (t1) and tag: in the query combine: papers with any of these tags are shown."
    )
    shoot(page, "filter-note-desktop")
    page.select_option("#tag", "")
    wait_for(page, "() => document.getElementById('filter-note').hidden")


def test_the_about_page_explains_ask_and_where_the_key_goes(site_url, watched):  # noqa: F811
    page = watched.page
    page.goto(site_url + "about/")
    text = page.inner_text("main")
    assert "Asking the papers" in text and "Where the key goes." in text
    assert "sent only to the provider" in text and "never goes to this site" in text
    shoot(page, "about-ask-desktop")
