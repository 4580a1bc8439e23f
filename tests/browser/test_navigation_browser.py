"""In chromium: a query naming a paper shows that paper first, from its opening passage; a query whose best
matches are weak in words and in meaning says so above the passages (the generated test site)."""

import pytest

pytestmark = pytest.mark.browser

GQA = "2305.13245"  # generated: "Grouped-Query Attention: …" by Ines Carvalho, Kwame Mensah, Lena Vogel, 2023


@pytest.mark.parametrize(
    "query",
    ["Carvalho et al. 2023", "arxiv.org/abs/2305.13245v2", "grouped-query attention sharing key-value heads"],
)
def test_a_query_naming_a_paper_shows_it_first_from_its_opening(site_url, watched, query):  # noqa: F811
    watched.open(site_url)
    watched.page.evaluate("window.readingRoom.semanticReady")
    watched.search(query)
    first_group = watched.page.query_selector("#results .paper-group")
    assert first_group.get_attribute("data-arxiv-id") == GQA
    assert watched.hits()[0] == (GQA, 1)


def test_unrelated_words_get_the_low_match_note(site_url, watched):  # noqa: F811
    watched.open(site_url)
    watched.page.evaluate("window.readingRoom.semanticReady")
    watched.search("purple elephant banana smoothie")
    note = watched.page.inner_text("#results .message")
    assert note.startswith("Nothing matches these words well") and watched.hits()
    watched.search("grouped-query attention key-value heads")  # the same page, a real topic: no note
    assert not watched.page.inner_text("#results .message").startswith("Nothing matches")
