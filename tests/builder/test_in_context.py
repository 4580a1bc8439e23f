"""A passage read in context (readingroom_core.in_context, through `Site.page_in_context` as the worker
calls it) on a real build: the page's text with a result's passage or an Ask quote marked, the pages a
step away, and the errors a mistyped shared link gets."""

import json
import re

from readingroom_core.browser import open_folder


def page(site, **request) -> dict:
    return json.loads(site.page_in_context(json.dumps(request)))


def marked(reply: dict) -> str:
    return "".join(text for text, mark in reply["segments"] if mark)


def whole(reply: dict) -> str:
    return "".join(text for text, _ in reply["segments"])


def test_a_results_passage_is_marked_on_its_page(built_sites):
    site = open_folder(built_sites.second)
    search = json.loads(
        site.prepare(json.dumps({"query": "grouped query attention key value heads", "mode": "bm25", "k": 5}))
    )
    hit = json.loads(site.search(search["search"]))["hits"][0]
    reply = page(site, arxiv_id=hit["arxiv_id"], page=hit["page_start"], chunk_id=hit["chunk_id"])
    assert reply["marked"] and reply["arxiv_id"] == hit["arxiv_id"] and reply["page"] == hit["page_start"]
    assert reply["version"] == "v1"  # the generated GQA paper has one version, the one indexed
    text = marked(reply)
    assert len(text) > 80 and text in site.engine.chunk(hit["doc_id"]).text  # the passage itself
    assert len(whole(reply)) > len(text)  # the rest of the page around it
    first, last = reply["first"], reply["last"]
    assert (reply["prev"], reply["next"]) == (
        hit["page_start"] - 1 if hit["page_start"] > first else None,
        hit["page_start"] + 1 if hit["page_start"] < last else None,
    )


def test_a_quote_is_marked_and_a_neighbouring_page_shows_unmarked(built_sites):
    site = open_folder(built_sites.second)
    paper = site.engine.papers[2]
    reply = page(site, arxiv_id=paper.id, page=2)
    words = whole(reply).split()
    # generated pages repeat their sentences: a run of words that p.3 does not hold
    runs = [" ".join(words[at : at + 12]) for at in range(0, len(words) - 12, 6)]
    quote = next(run for run in runs if not page(site, arxiv_id=paper.id, page=3, quote=run)["marked"])
    quoted = page(site, arxiv_id=paper.id, page=2, quote=quote)
    letters = lambda text: re.sub(r"\W+", "", text)  # noqa: E731  (the quote rule ignores punctuation)
    assert quoted["marked"] and letters(marked(quoted)) == letters(quote)
    assert whole(quoted) == whole(reply)  # the same page, only marked
    beside = page(site, arxiv_id=paper.id, page=quoted["next"], quote=quote)
    assert not beside["marked"] and beside["page"] == 3 and beside["prev"] == 2


def test_a_mistyped_link_says_what_is_wrong(built_sites):
    site = open_folder(built_sites.second)
    paper = site.engine.papers[0]
    assert "not in this reading list" in page(site, arxiv_id="9999.99999", page=1)["error"]
    assert "has no text for p.99" in page(site, arxiv_id=paper.id, page=99)["error"]
    assert page(site, arxiv_id=f"{paper.id}v1", page=1)["arxiv_id"] == paper.id  # a versioned id reads too
