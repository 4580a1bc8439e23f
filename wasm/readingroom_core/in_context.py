"""A passage read in context: one page of a paper's text, as the site ships it, with the passage (a
result's chunk) or a quote (an Ask citation's) marked, and the pages a step away named.

The page is rebuilt from the texts file by range (`PaperTexts.page_texts`, the same text Ask's
verification checks quotes against), so what the reader sees is what search indexed, and no PDF is
hosted. A quote is found by the one quote rule (`quotes.find_quote`); a chunk by its id among the chunks
that cover the page, its part on this page being a literal run of the page's text. The reply's text
crosses as [text, marked] runs, so JavaScript never maps Python string offsets.
"""

from __future__ import annotations

from typing import Any

from readingroom_core.analysis import bare_id
from readingroom_core.engine import SearchEngine
from readingroom_core.quotes import PAGE_MARK_RE, find_quote


def page_in_context(
    engine: SearchEngine, arxiv_id: str, page: int, chunk_id: str = "", quote: str = ""
) -> dict[str, Any]:
    """{arxiv_id, version, title, authors, year, page, first, last, prev, next, segments, marked} or
    {"error"}: `marked` says whether the passage or quote was found on this page (a shared link to a
    page a step away shows it plain)."""
    index = {bare_id(paper.id): n for n, paper in enumerate(engine.papers)}
    wanted = bare_id(arxiv_id)
    if wanted not in index:
        return {"error": f"arXiv:{arxiv_id} is not in this reading list"}
    paper_index = index[wanted]
    paper = engine.papers[paper_index]
    numbers = sorted(span.page for span in engine.texts.head(paper_index).pages)
    if page not in numbers:
        shown = f"pages {numbers[0]}-{numbers[-1]}" if numbers else "no pages"
        return {"error": f"arXiv:{paper.id} has no text for p.{page} ({shown} hold text)"}
    text = engine.texts.page_texts(paper_index, [page]).get(page, "")
    span = _quote_span(quote, text) if quote else _chunk_span(engine, paper_index, page, chunk_id, text)
    at = numbers.index(page)
    engine.forget_past_texts()
    return {
        "arxiv_id": paper.id,
        "version": paper.version,
        "title": paper.title,
        "authors": list(paper.authors),
        "year": paper.year,
        "page": page,
        "first": numbers[0],
        "last": numbers[-1],
        "prev": numbers[at - 1] if at > 0 else None,
        "next": numbers[at + 1] if at + 1 < len(numbers) else None,
        "segments": _runs(text, span),
        "marked": span is not None,
    }


def _quote_span(quote: str, text: str) -> tuple[int, int] | None:
    return find_quote(PAGE_MARK_RE.sub(" ", quote), text)


def _chunk_span(
    engine: SearchEngine, paper_index: int, page: int, chunk_id: str, text: str
) -> tuple[int, int] | None:
    """Where the chunk `chunk_id`'s part on `page` lies in the page's text, when it covers the page."""
    if not chunk_id:
        return None
    paper = engine.papers[paper_index]
    head = engine.texts.head(paper_index)
    spans = {span.page: (span.start, span.end) for span in head.pages}
    start, end = spans[page]
    for position in range(head.chunk_count):
        chunk_start, chunk_end = head.span(position)
        if chunk_end <= start or chunk_start >= end:
            continue
        chunk = engine.texts.chunk(paper.first_chunk + position)
        if chunk.id != chunk_id:
            continue
        part = chunk.text[max(chunk.start, start) - chunk.start : min(chunk.end, end) - chunk.start].strip()
        at = text.find(part) if part else -1
        return (at, at + len(part)) if at >= 0 else None
    return None


def _runs(text: str, span: tuple[int, int] | None) -> list[list[Any]]:
    if span is None:
        return [[text, False]]
    start, end = span
    runs = [[text[:start], False], [text[start:end], True], [text[end:], False]]
    return [run for run in runs if run[0]]
