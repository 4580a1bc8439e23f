"""In chromium: a bare arXiv id shows that paper's passages alone, its opening first, at desktop and phone
sizes (the generated test site)."""

import pytest
from support.site_page import DESKTOP, PHONE, shoot

pytestmark = pytest.mark.browser

GQA = "2305.13245"  # generated: "Grouped-Query Attention: …", five sections


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
@pytest.mark.parametrize("query", [GQA, f"arXiv:{GQA}v2"])
def test_a_bare_id_shows_only_that_paper(site_url, watched, viewport, query):  # noqa: F811
    watched.page.set_viewport_size(viewport)
    watched.open(site_url)
    watched.page.evaluate("window.readingRoom.semanticReady")
    watched.search(query)
    hits = watched.hits()
    assert len(hits) > 1 and {arxiv_id for arxiv_id, _ in hits} == {GQA}, hits
    assert hits[0] == (GQA, 1)
    groups = watched.page.query_selector_all("#results .paper-group")
    assert [group.get_attribute("data-arxiv-id") for group in groups] == [GQA]
    assert f"{len(hits)} passages from 1 paper (" in watched.page.inner_text("#result-count")
    if query == GQA:
        shoot(watched.page, f"bare-id-{'phone' if viewport is PHONE else 'desktop'}")
