"""The search page's menu filters in chromium, on a desktop and a phone: filters a shared link sets are
shown (and counted on the phone's "Filters and syntax" toggle), "No passages match" names them and
clears them, a year range that runs backwards says so and swaps; and the skip link leads to the first
result in one Tab and Enter (the form's own order takes a score of Tabs).

The browser test site's papers (support/corpus.py): 2019 cs.IR tag t0, 2024 cs.CL t1, 2023 cs.CL t0.
"""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from support.chromium import wait_for
from support.site_page import KEYWORD_QUESTION, PHONE, shoot

pytestmark = pytest.mark.browser

DESKTOP = {"width": 1366, "height": 900}
VIEWPORTS = pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
DRAWN = "() => document.getElementById('results').getAttribute('aria-busy') === 'false' && document.querySelector('#results .message')"


def _open(page, site_url: str, viewport: dict, **params: str) -> None:
    page.set_viewport_size(viewport)
    page.goto(f"{site_url}?{urlencode({'q': KEYWORD_QUESTION, 'mode': 'bm25', **params})}")
    page.evaluate("window.readingRoom.ready")
    wait_for(page, DRAWN)


def _hits(page) -> int:
    return page.locator("#results .hit").count()


def _name(viewport: dict) -> str:
    return "phone" if viewport["width"] < 500 else "desktop"


@VIEWPORTS
def test_filters_from_a_link_are_named_when_nothing_matches_and_clear_in_one_click(
    site_url, watched, viewport
):
    page = watched.page
    _open(page, site_url, viewport, cat="stat.ML", tag="t0")  # no paper of the list is both
    assert _hits(page) == 0
    line = page.inner_text("#filters-set")
    assert line.startswith("No passages match with these filters set: category stat.ML, tag t0.")
    assert page.is_visible("#filters-set .clear-filters")
    assert page.inner_text(".options-toggle") == "Filters and syntax (2 set)"
    box = page.locator("#filters-set").bounding_box()
    assert box and box["y"] + box["height"] <= viewport["height"]  # in view without scrolling
    shoot(page, f"filters-none-match-{_name(viewport)}")
    page.click("#filters-set .clear-filters")
    wait_for(page, "() => document.querySelectorAll('#results .hit').length > 0")
    assert "cat=" not in page.url and "tag=" not in page.url
    assert page.is_hidden("#filters-set") and page.inner_text(".options-toggle") == "Filters and syntax"


@VIEWPORTS
def test_filters_that_match_are_still_shown(site_url, watched, viewport):
    page = watched.page
    _open(page, site_url, viewport, tag="t0")
    assert _hits(page) > 0
    assert page.inner_text("#filters-set").startswith("Filters set: tag t0.")
    assert page.get_attribute("#filters-set", "role") == "status"  # announced


@VIEWPORTS
def test_a_backwards_year_range_says_so_and_swaps(site_url, watched, viewport):
    page = watched.page
    _open(page, site_url, viewport, year_min="2024", year_max="2019")
    assert _hits(page) == 0
    assert "The year range runs backwards (from 2024 to 2019)" in page.inner_text("#filters-set")
    shoot(page, f"filters-backwards-{_name(viewport)}")
    page.click("#filters-set .swap-years")
    wait_for(page, "() => document.querySelectorAll('#results .hit').length > 0")
    assert "year_min=2019" in page.url and "year_max=2024" in page.url
    assert page.inner_text("#filters-set").startswith("Filters set: from year 2019, to year 2024.")


def _tabs_to_first_result(page, limit: int = 40) -> int:
    for count in range(1, limit + 1):
        page.keyboard.press("Tab")
        if page.evaluate("Boolean(document.activeElement.closest('#results .paper-group'))"):
            return count
    raise AssertionError(f"no result within {limit} Tabs")


@VIEWPORTS
def test_the_skip_link_leads_to_the_first_result(site_url, watched, viewport):
    page = watched.page
    _open(page, site_url, viewport)
    assert _hits(page) > 0
    by_order = _tabs_to_first_result(page)
    page.reload()
    page.evaluate("window.readingRoom.ready")
    wait_for(page, DRAWN)
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to results"
    page.keyboard.press("Enter")
    first = page.evaluate("document.activeElement === document.querySelector('#results .hit')")
    assert first, page.evaluate("document.activeElement.outerHTML.slice(0, 200)")
    page.keyboard.press("ArrowDown")  # and the results' own keys go on from there
    assert page.evaluate("document.activeElement === document.querySelectorAll('#results .hit')[1]")
    print(
        f"{_name(viewport)}: {by_order} Tabs to the first result by the form's order; 1 Tab and Enter by the skip link"
    )
    assert by_order > 5
