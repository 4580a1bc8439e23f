"""Citations that leave the sources, checked against the whole reading list of a built site: a true quote
from a page of the list that was not among the sources is "outside_sources" and says where it was
found; an id the list does not hold is "invented"; `[arXiv:ID]` without a page is flagged "no_page".
The same checks run in CPython and (pyodide-marked) in Pyodide, through the core driver.
"""

import pytest
from support.mock_llm import quote_from
from support.pyodide import missing_runtime, run_in_cpython, run_in_pyodide

from builder.site.runtime import build_core_wheel
from readingroom_core.answers import evidence, verify
from readingroom_core.browser import open_folder
from readingroom_core.library import CorpusLibrary
from readingroom_core.quotes import find_quote

INVENTED = "2401.99999"


@pytest.fixture(scope="module")
def site(built_sites):
    return built_sites.second


@pytest.fixture(scope="module")
def engine(site):
    return open_folder(site).engine


@pytest.fixture(scope="module")
def found(engine):
    """Evidence for a question (keyword side), and a quotable page of a paper that is not a source and
    a page of a source's paper that lies outside every source."""
    data = evidence(engine, {"question": "retrieval augmented generation", "budget": 1500, "k": 2}, None)
    cited = {s["arxiv_id"]: s for s in data["sources"]}
    covered = {(s["arxiv_id"], p) for s in data["sources"] for p in range(s["page_start"], s["page_end"] + 1)}
    other_paper = other_page = None
    for index, paper in enumerate(engine.papers):
        pages = [page.page for page in engine.texts.head(index).pages]
        texts = engine.texts.page_texts(index, pages)
        for page, text in texts.items():
            quote = quote_from(text)
            if not quote or (paper.id, page) in covered:
                continue
            if paper.id not in cited and other_paper is None:
                other_paper = (paper.id, page, quote)
            if paper.id in cited and other_page is None:
                other_page = (paper.id, page, quote)
    assert data["sources"] and other_paper and other_page
    return data, other_paper, other_page


def answer_leaving_the_sources(found) -> str:
    data, (paper, page, quote), (source_paper, source_page, source_quote) = found
    first = data["sources"][0]
    return (
        f'One claim [arXiv:{paper} p.{page}] *"{quote}"*. '
        f'Another [arXiv:{source_paper} p.{source_page} "{source_quote}"]. '
        f'A third [arXiv:{INVENTED} p.2 "{quote}"]. '
        f"A fourth [arXiv:{INVENTED}]. "
        f"A fifth [arXiv:{first['arxiv_id']}]. "
        f'A sixth [arXiv:{paper} p.{page} "words that this paper never wrote anywhere"].'
    )


def test_a_true_quote_outside_the_sources_is_not_called_invented(engine, found):
    data, (paper, page, _), (source_paper, source_page, _) = found
    result = verify(answer_leaving_the_sources(found), data, CorpusLibrary(engine))
    statuses = [c["status"] for c in result["citations"]]
    assert statuses == [
        "outside_sources",
        "outside_sources",
        "invented",
        "invented",
        "no_page",
        "outside_sources",
    ]
    outside, outside_page, invented, bare_invented, no_page, not_found = result["citations"]
    assert outside["reason"] == f"found on p.{page} of arXiv:{paper}, which was not among the sources"
    assert outside["found_page"] == page and not outside["verified"]
    assert outside_page["reason"] == (
        f"found on p.{source_page} of arXiv:{source_paper}, which was not among the sources"
    )
    assert invented["reason"].startswith(f"arXiv:{INVENTED} is not in the reading list; the quote is on p.")
    assert bare_invented["reason"] == f"arXiv:{INVENTED} is not in the reading list"
    assert no_page["reason"] == f"arXiv:{data['sources'][0]['arxiv_id']} is cited without a page"
    assert not_found["reason"] == (
        f"arXiv:{paper} is in the reading list but was not among the sources; the quote is not in it"
    )
    assert result["summary"] == "0 of 6 citations verified"


def test_the_library_finds_the_page_that_holds_a_quote(engine, found):
    _, (paper, page, quote), _ = found
    library = CorpusLibrary(engine)
    located = library.locate(quote, paper, page)
    assert (located.arxiv_id, located.page) == (paper, page)
    for anywhere in (library.locate(quote, paper), library.locate(quote, None)):
        index = [p.id for p in engine.papers].index(anywhere.arxiv_id)
        assert find_quote(quote, engine.texts.page_texts(index, [anywhere.page])[anywhere.page])
    assert library.locate(quote, paper).arxiv_id == paper
    assert library.locate("nothing in this reading list says anything like these words", None) is None
    assert library.holds(f"{paper}v1") and not library.holds(INVENTED)


def test_without_the_reading_list_outside_means_invented(found):
    data = found[0]
    statuses = [c["status"] for c in verify(answer_leaving_the_sources(found), data)["citations"]]
    assert statuses == ["invented", "page_not_found", "invented", "invented", "no_page", "invented"]


@pytest.mark.pyodide
def test_pyodide_checks_outside_the_sources_like_cpython(site, found, tmp_path):
    reason = missing_runtime()
    if reason:
        pytest.skip(reason)
    request = {
        "op": "verify",
        "site": str(site),
        "cases": [{"answer": answer_leaving_the_sources(found), "evidence": found[0]}],
    }
    in_pyodide = run_in_pyodide(request, build_core_wheel(tmp_path))
    assert "emscripten" in in_pyodide["python"]
    assert in_pyodide["results"] == run_in_cpython(request)["results"]
    assert in_pyodide["results"][0]["citations"][0]["status"] == "outside_sources"


def test_a_source_quote_on_a_wrong_page_is_a_wrong_page(engine, found):
    """The quote is on a source's page; only the page cited is wrong: page_not_found, saying where."""
    data = found[0]
    source = data["sources"][0]
    quote = quote_from(source["text"])
    wrong = max(s["page_end"] for s in data["sources"]) + 7
    answer = f'A claim [arXiv:{source["arxiv_id"]} p.{wrong} "{quote}"].'
    (citation,) = verify(answer, data, CorpusLibrary(engine))["citations"]
    assert citation["status"] == "page_not_found"
    assert citation["reason"].startswith(f"p.{wrong} of arXiv:{source['arxiv_id']} was not among the sources")
    assert "; the quote is on p." in citation["reason"]
