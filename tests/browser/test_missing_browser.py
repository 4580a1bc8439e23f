""" "Not on this list" in chromium, on a desktop and a phone: a list of two papers that both cite
Chinchilla, which the list lacks (support/missing_list.py), built for real. A query naming it gets the
note above the results, with the citing papers, the pages that cite it and its arXiv id; a topic query
and a query naming a paper of the list get none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support import missing_list
from support.builds import run_build
from support.chromium import wait_for
from support.served import require_browser, serving
from support.site_page import PHONE, shoot

from readingroom_core.formats.missing import read_missing
from readingroom_core.ranges import folder_reader

pytestmark = pytest.mark.browser

DESKTOP = {"width": 1366, "height": 900}
DRAWN = "() => document.getElementById('results').getAttribute('aria-busy') === 'false' && document.querySelector('#results .message')"


@pytest.fixture(scope="module")
def missing_site(tmp_path_factory) -> Path:
    require_browser()
    root = tmp_path_factory.mktemp("missing-site")
    mirror = missing_list.write_missing_mirror(root / "mirror")
    corpus_file = root / "readingroom.toml"
    papers = "".join(f'[[paper]]\nid = "{i}"\n\n' for i in missing_list.CITING)
    corpus_file.write_text(f'[site]\ntitle = "Missing list"\n\n{papers}')
    assert run_build(corpus_file, root / "site", root / "cache", mirror) == 0
    return root / "site"


@pytest.fixture(scope="module")
def missing_url(missing_site):
    with serving(missing_site) as url:
        yield url


def test_the_site_stores_the_work_it_lacks(missing_site):
    manifest = json.loads((missing_site / "manifest.json").read_text())
    path = manifest["files"]["missing"]
    works = read_missing(folder_reader(missing_site)(path), path)
    assert [(w.arxiv_id, w.names) for w in works] == [(missing_list.CHINCHILLA_ID, ("Chinchilla",))]


def _search(page, url: str, query: str) -> None:
    page.goto(f"{url}?q={query}&mode=bm25")
    page.evaluate("window.readingRoom.ready")
    wait_for(page, DRAWN)


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_a_query_naming_a_cited_work_the_list_lacks_says_so(missing_url, watched, viewport):
    page = watched.page
    page.set_viewport_size(viewport)
    _search(page, missing_url, "chinchilla")
    assert page.is_visible("#missing-note")
    note = page.inner_text("#missing-note")
    assert f"Not on this list: Chinchilla (“{missing_list.CHINCHILLA_TITLE}”) is cited by 2 papers" in note
    assert f"arXiv:{missing_list.CHINCHILLA_ID}" in note
    topics = missing_list.topics()
    for arxiv_id in missing_list.CITING:
        assert f"{topics[arxiv_id].title} (cites it on p. {missing_list.citing_page(arxiv_id)})" in note
    hrefs = page.eval_on_selector_all("#missing-note a", "links => links.map((a) => a.getAttribute('href'))")
    assert f"https://arxiv.org/abs/{missing_list.CHINCHILLA_ID}" in hrefs
    assert sum(h.endswith(f"papers/{i}/") for h in hrefs for i in missing_list.CITING) == 2
    box = page.locator("#missing-note").bounding_box()
    results = page.locator("#results").bounding_box()
    assert box and results and box["y"] < results["y"] and box["y"] < viewport["height"]  # above, in view
    shoot(page, f"missing-note-{'phone' if viewport['width'] < 500 else 'desktop'}")
    for query in ("compute optimal training of language models", "attention", topics["2401.20001"].title):
        _search(page, missing_url, query)
        assert page.is_hidden("#missing-note"), query
