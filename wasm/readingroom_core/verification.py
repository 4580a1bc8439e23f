"""Checking an answer's citations against the page text of the sources it was given.

Verification, for each citation:
- "invented": the id is not the id of any source (and, when the reading list is known, not in it
  either; the reason says where the quote is if it is somewhere in the list);
- "outside_sources": the id (or the cited page) is in the reading list but was not among the sources;
  when the quote is found there the reason says so ("found on p.5 of arXiv:X, which was not among the
  sources") and `found_page` names that page;
- "no_page": `[arXiv:ID]` with no page (the reason says where the quote is if a source page holds it);
- "version_not_found": the id names a version (`v97`) other than the one the site holds (an id without a
  version names the one the site holds), so its PDF link would point at another text;
- "page_not_found": a cited page lies outside every page span of that paper's sources (and the quote
  is on no page of the paper outside them; the reason says which source page holds it, if one does);
- "no_quote": no quote, or one under 3 words / 12 letters, so nothing can be checked;
- "quote_not_found": the quote is not in the cited page's text (the reason says where it is if it is on
  another source page of that paper, or how much of it matched);
- "verified": the quote is in the cited page's text. A quote that runs across a page break counts when
  it starts or ends on the cited page and continues on the neighbouring page; the reason says so.
Looking beyond the sources needs the site's texts: a `Library` (`library.CorpusLibrary` over the
search engine) says which ids the reading list holds and finds a quote's page by searching the quote's
words with BM25 and checking the few candidate pages' text, so the look-up is bounded and reads only
the texts of those candidates. Without a library (a bare evidence dict) every id that is not a
source is "invented" and every page outside them "page_not_found".
Matching follows one rule, `quotes.canonical` (see `quotes`).

JSON (`VerifyResult.to_dict()`), what the browser shows:
    {"citations": [{"arxiv_id", "page", "page_end", "quote", "verified", "status", "reason",
                    "source", "found_page", "highlight", "start", "end"}],
     "uncited": [{"text", "start", "end"}],
     "verified": int, "total": int, "summary": "7 of 8 citations verified"}
`page`/`page_end` are the cited pages; `source` the number of the source the citation was checked
against (null if none); `found_page` the page holding the quote's start, for a PDF link; `highlight`
[start, end) of the quote in that source's `text` when it lies there (else null); `start`/`end` the
citation's offsets in the answer text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from readingroom_core.analysis import bare_id
from readingroom_core.citations import Citation, Uncited, find_uncited, pages_label, parse_citations
from readingroom_core.quotes import MIN_QUOTE_WORDS, find_quote, longest_matching_words, quote_is_checkable


@dataclass
class VerifyResult:
    citations: list[Citation] = field(default_factory=list)
    uncited: list[Uncited] = field(default_factory=list)

    @property
    def verified(self) -> int:
        return sum(c.verified for c in self.citations)

    @property
    def summary(self) -> str:
        return f"{self.verified} of {len(self.citations)} citations verified"

    def to_dict(self) -> dict[str, Any]:
        return {
            "citations": [c.to_dict() for c in self.citations],
            "uncited": [asdict(u) for u in self.uncited],
            "verified": self.verified,
            "total": len(self.citations),
            "summary": self.summary,
        }


@dataclass(frozen=True)
class SourceSpan:
    """What verification needs of one numbered source."""

    n: int
    arxiv_id: str
    page_start: int
    page_end: int
    text: str
    version: str = ""  # the version the site holds, such as "v2"; "" when the site does not say


@dataclass(frozen=True)
class Found:
    """Where a quote lies in the reading list."""

    arxiv_id: str
    page: int


class Library(Protocol):
    """The whole reading list, for citations that leave the sources."""

    def holds(self, arxiv_id: str) -> bool:
        """Whether the reading list holds this (bare) arXiv id."""
        ...

    def locate(self, quote: str, arxiv_id: str | None, page: int = 0) -> Found | None:
        """The page of the reading list (of `arxiv_id` only, when given) that holds `quote`, or None;
        `page`, the cited page, is the answer whenever it holds the quote."""
        ...


# --- verification ------------------------------------------------------------------------------------


def _joined(pages: Mapping[int, str], numbers: Sequence[int]) -> tuple[str, list[tuple[int, int]]] | None:
    """The pages' texts joined by a blank line, and where each page starts; None if one is missing."""
    parts, starts, length = [], [], 0
    for number in numbers:
        text = pages.get(number)
        if text is None:
            return None
        starts.append((length, number))
        parts.append(text)
        length += len(text) + 2
    return "\n\n".join(parts), starts


def _page_at(starts: list[tuple[int, int]], offset: int) -> int:
    page = starts[0][1]
    for start, number in starts:
        if start <= offset:
            page = number
    return page


def _check_quote(citation: Citation, pages: Mapping[int, str]) -> tuple[bool, str, int | None]:
    """(found, reason, page of the quote's start) for a citation whose pages are source pages."""
    cited = list(range(citation.page, citation.page_end + 1))
    joined = _joined(pages, cited)
    if joined and (span := find_quote(citation.quote, joined[0])):
        return True, _across(joined[1], span), _page_at(joined[1], span[0])
    for before, after in ((citation.page - 1, citation.page), (citation.page_end, citation.page_end + 1)):
        across = _joined(pages, [before, after])
        if (
            across
            and (span := find_quote(citation.quote, across[0]))
            and (reason := _across(across[1], span))
        ):
            return True, reason, _page_at(across[1], span[0])
    return False, "", None


def _across(starts: list[tuple[int, int]], span: tuple[int, int]) -> str:
    first, last = _page_at(starts, span[0]), _page_at(starts, span[1] - 1)
    return f"the quote runs across the page break from p.{first} to p.{last}" if first != last else ""


def page_holding(quote: str, pages: Mapping[int, str]) -> int | None:
    """The page of `pages` on which `quote` starts (also when it runs on over the next page), or None."""
    for number in sorted(pages):
        if find_quote(quote, pages[number]):
            return number
        across = _joined(pages, [number, number + 1])
        if across and (span := find_quote(quote, across[0])):
            return _page_at(across[1], span[0])
    return None


def _not_a_source(citation: Citation, wanted: str, library: Library | None) -> Citation:
    """An id that is none of the sources': in the reading list ("outside_sources") or not ("invented")."""
    checkable = quote_is_checkable(citation.quote)
    if library is None or not library.holds(wanted):
        citation.status = "invented"
        citation.reason = (
            f"arXiv:{citation.arxiv_id} is not in the reading list"
            if library is not None
            else f"arXiv:{citation.arxiv_id} was not one of the sources given to the model"
        )
        found = library.locate(citation.quote, None) if library is not None and checkable else None
        if found:
            citation.reason += f"; the quote is on p.{found.page} of arXiv:{found.arxiv_id}"
        return citation
    return _outside(citation, library.locate(citation.quote, wanted, citation.page) if checkable else None)


def _outside(citation: Citation, found: Found | None) -> Citation:
    citation.status = "outside_sources"
    if found:
        citation.found_page = found.page
        citation.reason = (
            f"found on p.{found.page} of arXiv:{found.arxiv_id}, which was not among the sources"
        )
    else:
        quote = "the quote is not in it" if quote_is_checkable(citation.quote) else "no quote to check"
        citation.reason = (
            f"arXiv:{citation.arxiv_id} is in the reading list but was not among the sources; {quote}"
        )
    return citation


def _version_mismatch(citation: Citation, of_paper: Sequence[SourceSpan], wanted: str) -> bool:
    cited_version = citation.arxiv_id[len(wanted) :].lower()
    if not cited_version or any(s.version.lower() == cited_version for s in of_paper):
        return False
    held = of_paper[0].version
    citation.status = "version_not_found"
    citation.reason = (
        f"arXiv:{citation.arxiv_id} is not in the reading list, which holds {of_paper[0].arxiv_id}{held}"
        if held
        else f"arXiv:{citation.arxiv_id} names a version; the site does not say which one it holds"
    )
    return True


def _no_page(citation: Citation, of_paper: Sequence[SourceSpan], pages: Mapping[int, str]) -> Citation:
    citation.status, citation.source = "no_page", of_paper[0].n
    citation.reason = f"arXiv:{citation.arxiv_id} is cited without a page"
    if quote_is_checkable(citation.quote) and (page := page_holding(citation.quote, pages)) is not None:
        citation.found_page = page
        citation.reason += f"; the quote is on p.{page}"
    return citation


def _page_outside(
    citation: Citation,
    of_paper: Sequence[SourceSpan],
    outside: int,
    pages: Mapping[int, str],
    library: Library | None,
) -> Citation:
    """A cited page that no source covers: the quote on that page (or, when no source page holds it, on
    another page of the paper) means the citation left the sources; on a source's page only, that only
    the page is wrong."""
    checkable = quote_is_checkable(citation.quote)
    covered = {p: t for p, t in pages.items() if any(s.page_start <= p <= s.page_end for s in of_paper)}
    on_source = page_holding(citation.quote, covered) if checkable else None
    if library is not None and checkable:
        found = library.locate(citation.quote, bare_id(citation.arxiv_id), citation.page)
        if found and (found.page == citation.page or on_source is None):
            return _outside(citation, found)
    given = ", ".join(pages_label(s.page_start, s.page_end) for s in of_paper)
    citation.status = "page_not_found"
    citation.reason = f"p.{outside} of arXiv:{citation.arxiv_id} was not among the sources (given: {given})"
    if on_source is not None:
        citation.reason += f"; the quote is on p.{on_source}"
    return citation


def verify_citation(
    citation: Citation,
    sources: Sequence[SourceSpan],
    pages: Mapping[str, Mapping[int, str]],
    library: Library | None = None,
) -> Citation:
    """Sets the citation's status, reason, source, found page and highlight; `pages` maps a bare arXiv
    id to its page texts (the sources' pages and their neighbours); `library`, when given, is the
    whole reading list, for citations that leave the sources."""
    wanted = bare_id(citation.arxiv_id)
    of_paper = [s for s in sources if bare_id(s.arxiv_id) == wanted]
    if not of_paper:
        return _not_a_source(citation, wanted, library)
    if _version_mismatch(citation, of_paper, wanted):
        return citation
    page_texts = dict(pages.get(wanted, {}))
    if citation.page == 0:
        return _no_page(citation, of_paper, page_texts)
    covered = {p for s in of_paper for p in range(s.page_start, s.page_end + 1)}
    outside = [p for p in range(citation.page, citation.page_end + 1) if p not in covered]
    if outside:
        return _page_outside(citation, of_paper, outside[0], page_texts, library)
    citation.source = next(s.n for s in of_paper if s.page_start <= citation.page <= s.page_end)
    if not quote_is_checkable(citation.quote):
        citation.status = "no_quote"
        citation.reason = (
            "no quote to check"
            if not citation.quote.strip()
            else f"the quote is too short to check (at least {MIN_QUOTE_WORDS} words)"
        )
        return citation
    found, reason, found_page = _check_quote(citation, page_texts)
    if not found:
        citation.status = "quote_not_found"
        citation.reason = _missing_quote_reason(citation, of_paper, page_texts)
        return citation
    citation.status, citation.reason, citation.found_page = "verified", reason, found_page
    holder = next((s for s in of_paper if find_quote(citation.quote, s.text)), None)
    if holder is not None:
        citation.source = holder.n
        citation.highlight = find_quote(citation.quote, holder.text)
    return citation


def _missing_quote_reason(
    citation: Citation, of_paper: Sequence[SourceSpan], pages: Mapping[int, str]
) -> str:
    where = citation.pages_label
    for number in sorted(pages):
        if not citation.page <= number <= citation.page_end and find_quote(citation.quote, pages[number]):
            return f"the quote is on p.{number}, not {where}"
    cited = _joined(pages, list(range(citation.page, citation.page_end + 1)))
    if cited is None:
        texts = " ".join(s.text for s in of_paper)
    else:
        texts = cited[0]
    words = len(citation.quote.split())
    matched = longest_matching_words(citation.quote, texts)
    if matched == 0:
        return f"the quote does not occur on {where}"
    return f"the quote does not occur verbatim on {where} (at most {matched} of its {words} words match in a row)"


def verify_answer(
    answer: str,
    sources: Sequence[SourceSpan],
    pages: Mapping[str, Mapping[int, str]],
    library: Library | None = None,
) -> VerifyResult:
    citations = [verify_citation(c, sources, pages, library) for c in parse_citations(answer)]
    return VerifyResult(citations, find_uncited(answer, citations))
