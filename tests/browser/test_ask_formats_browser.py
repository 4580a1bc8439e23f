"""Ask mode in Debian chromium, round two: citations in every shape models write them, quotes found
outside the sources, an Ask mode that shows only its own form, "Check an answer" on demand, settings
that fit a phone, and an ?ask= link that waits for semantic search before it gathers sources.

Screenshots of what changed (desktop 1366x768, phone 390 px) are written to $READINGROOM_SHOTS when set.
"""

import re
from pathlib import Path
from urllib.parse import urlencode

import pytest
from support.ask_page import QUESTION, AskPage
from support.chromium import wait_for
from support.mock_llm import INVENTED_ID, quote_from
from support.site_page import DESKTOP, PHONE, VECTORS, release, shoot, wait_until_held

from readingroom_core.browser import open_folder

pytestmark = pytest.mark.browser


def test_every_citation_shape_is_read_and_checked_in_the_page(asking, llm):  # noqa: F811
    asking.open()
    asking.page.set_viewport_size(DESKTOP)
    asking.configure(model="mock-formats")
    turn = asking.ask()
    assert turn["state"] == "done", turn
    expected = llm.answers[-1].expected
    statuses = [status for *_, status in expected]
    assert statuses.count("verified") == 8 and statuses[-2:] == ["no_page", "invented"]
    assert turn["summary"] == f"8 of {len(expected)} citations verified"
    assert len(turn["verified"]) == 8
    no_page, invented = turn["unverified"]
    assert "(no page)" in no_page["text"] and "cited without a page" in no_page["title"]
    assert INVENTED_ID in invented["text"] and "not in the reading list" in invented["title"]
    # The echoed <source …> tag is shown as text and read as no citation.
    assert '<source n="1"' in turn["answer"]
    assert asking.page.locator(".turn .answer-body .cite").count() == len(expected)
    asking.page.locator(".turn .answer").scroll_into_view_if_needed()
    shoot(asking.page, "ask-formats-desktop")


def _outside_quote(site: Path, sources: list[dict]) -> tuple[str, int, str]:
    """A quotable page of a paper of the site that is not among the sources: (arxiv id, page, quote)."""
    engine = open_folder(site).engine
    cited = {s["arxiv_id"] for s in sources}
    for index, paper in enumerate(engine.papers):
        pages = [page.page for page in engine.texts.head(index).pages]
        for page, text in engine.texts.page_texts(index, pages).items():
            quote = quote_from(text)
            if quote and paper.id not in cited:
                return paper.id, page, quote
    raise AssertionError("every paper is a source")


def test_check_an_answer_opens_on_demand_and_tells_outside_the_sources_from_invented(
    asking,  # noqa: F811
    served_site,  # noqa: F811
):
    page = asking.page
    asking.open("?ask=")
    asking.configure(key="")
    page.fill("#llm-budget", "1400")  # a few sources, so that some papers are not among them
    asking.ask(until="no-key")
    assert page.is_hidden(".turn .check-form")  # closed until asked for
    toggle = page.locator(".turn .check-answer")
    assert toggle.get_attribute("aria-expanded") == "false"
    toggle.click()
    assert page.is_visible(".turn .check-form") and toggle.get_attribute("aria-expanded") == "true"
    paper, number, quote = _outside_quote(served_site[0], asking.turn()["sources"])
    pasted = (
        f'One claim is true but left the sources [arXiv:{paper} p.{number}] *"{quote}"*.\n'
        f"Another cites a paper nobody gave [arXiv:{INVENTED_ID}]."
    )
    page.fill(".turn .check-form textarea", pasted)
    page.click(".turn .check-form button[type=submit]")
    wait_for(page, "() => document.querySelector('.turn').dataset.state === 'checked'")
    outside, invented = asking.turn()["unverified"]
    assert f"found on p.{number} of arXiv:{paper}, which was not among the sources" in outside["title"]
    assert "not in the reading list" in invented["title"]
    # BibTeX for what is cited and on the list, among the sources or not; never for the invented id.
    with page.expect_download() as saved:
        page.click(".turn .export-bib")
    bibtex = open(saved.value.path(), encoding="utf-8").read()
    assert bibtex.count("@misc{") == 1 and re.search(rf"eprint = {{{re.escape(paper)}v\d+}}", bibtex)
    assert INVENTED_ID not in bibtex and page.locator(".turn .export-md").count() == 1
    page.locator(".turn .answer").scroll_into_view_if_needed()
    shoot(page, "ask-check-outside-desktop")
    toggle.click()
    assert page.is_hidden(".turn .check-form")


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_ask_mode_shows_only_the_ask_form_and_its_settings_fit_the_screen(browser, site_url, llm, viewport):  # noqa: F811
    view = AskPage(browser, site_url, llm)
    page = view.page
    page.set_viewport_size(viewport)
    view.open("?ask=")
    assert page.is_visible("#ask-form") and page.is_hidden("#search-form") and page.is_hidden("#results")
    page.click("#llm-settings summary")
    page.select_option("#llm-provider", "openai")
    width = viewport["width"]
    for field in ("#llm-provider", "#llm-base-url", "#llm-model", "#llm-key", "#llm-budget"):
        box = page.locator(field).bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= width, (field, box)
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.locator("#llm-settings").scroll_into_view_if_needed()
    shoot(page, f"ask-settings-{'phone' if width < 500 else 'desktop'}")
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "ask-q"
    page.keyboard.type("a question")
    page.keyboard.press("Enter")  # asks; never the hidden search form
    wait_for(page, "() => document.querySelector('.turn')?.dataset.state === 'no-key'")
    assert "q=" not in page.url
    view.close()


def test_an_ask_link_waits_for_semantic_search_before_it_gathers_sources(browser, site_url):  # noqa: F811
    # A context of its own: AskPage's request log asks for each request's headers, which a held request
    # never has.
    context = browser.new_context()
    page = context.new_page()
    held = []
    context.route(VECTORS, lambda route: held.append(route))
    page.goto(site_url + "?" + urlencode({"ask": QUESTION}))
    status = "document.querySelector('.turn .turn-status')?.textContent || ''"
    wait_for(page, f"() => ({status}).includes('Waiting for semantic')")
    wait_until_held(page, held)
    assert page.locator(".turn .source-card").count() == 0
    assert not page.evaluate("readingRoom.status().semantic")
    assert "Waiting for semantic" in page.evaluate(status)
    release(page, held)
    wait_for(page, "() => ['no-key', 'ready'].includes(document.querySelector('.turn')?.dataset.state)")
    assert page.evaluate("readingRoom.status().semantic") and page.locator(".turn .source-card").count()
    context.close()
