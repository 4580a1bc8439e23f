"""Checking an answer's citations against the page text of the sources it was given.

Verification, for each citation:
- "invented": the id is not the id of any source (version suffixes ignored);
- "page_not_found": a cited page lies outside every page span of that paper's sources;
- "no_quote": no quote, or one under 3 words / 12 letters, so nothing can be checked;
- "quote_not_found": the quote is not in the cited page's text (the reason says where it is if it is on
  another source page of that paper, or how much of it matched);
- "verified": the quote is in the cited page's text. A quote that runs across a page break counts when
  it starts or ends on the cited page and continues on the neighbouring page; the reason says so.
Matching compares the letters and digits only, case-folded, after Unicode compatibility decomposition
(NFKD, which also splits ligatures such as "ﬁ"), with accents dropped: whitespace, line-break
hyphenation, typographic quotes and dashes and other punctuation cannot break a verbatim quote, while
any changed, added or dropped word does.

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

import re
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import Any

from readingroom_core.analysis import bare_id
from readingroom_core.citations import Citation, Uncited, find_uncited, pages_label, parse_citations

MIN_QUOTE_WORDS = 3
MIN_QUOTE_LETTERS = 12
PAGE_MARK_RE = re.compile(r"\s*\u27e6p\.\d+\u27e7\s*")  # ⟦p.8⟧, where the prompt shows a page break


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


# --- matching ----------------------------------------------------------------------------------------


@lru_cache(maxsize=512)
def skeleton(text: str) -> tuple[str, list[int]]:
    """Case-folded letters and digits of `text` after NFKD (accents dropped), and each one's offset in
    `text`, so a match can be mapped back for highlighting. Cached: one answer checks the same pages
    many times. The offsets list is shared; never change it."""
    letters: list[str] = []
    offsets: list[int] = []
    for index, char in enumerate(text):
        if char.isascii():
            if char.isalnum():
                letters.append(char.lower())
                offsets.append(index)
            continue
        for part in unicodedata.normalize("NFKD", char).casefold():
            if part.isalnum():
                letters.append(part)
                offsets.append(index)
    return "".join(letters), offsets


def _quote_skeleton(quote: str) -> str:
    return skeleton(PAGE_MARK_RE.sub(" ", quote))[0]


def quote_is_checkable(quote: str) -> bool:
    return len(quote.split()) >= MIN_QUOTE_WORDS and len(_quote_skeleton(quote)) >= MIN_QUOTE_LETTERS


def find_quote(quote: str, text: str) -> tuple[int, int] | None:
    """[start, end) of `quote` in `text` under the module's normalisation, or None."""
    wanted = _quote_skeleton(quote)
    letters, offsets = skeleton(text)
    at = letters.find(wanted) if wanted else -1
    if at < 0:
        return None
    return offsets[at], offsets[at + len(wanted) - 1] + 1


def _longest_matching_words(quote: str, text: str) -> int:
    """How many of the quote's words, from its start or its end, occur verbatim in `text` (for reasons)."""
    words = quote.split()
    letters = skeleton(text)[0]
    best = 0
    for size in range(len(words), 0, -1):
        if any(
            _quote_skeleton(" ".join(words[s : s + size])) in letters for s in range(len(words) - size + 1)
        ):
            best = size
            break
    return best


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


def verify_citation(
    citation: Citation, sources: Sequence[SourceSpan], pages: Mapping[str, Mapping[int, str]]
) -> Citation:
    """Sets the citation's status, reason, source, found page and highlight; `pages` maps a bare arXiv
    id to its page texts (the sources' pages and their neighbours)."""
    wanted = bare_id(citation.arxiv_id)
    of_paper = [s for s in sources if bare_id(s.arxiv_id) == wanted]
    if not of_paper:
        citation.status = "invented"
        citation.reason = f"arXiv:{citation.arxiv_id} was not one of the sources given to the model"
        return citation
    covered = {p for s in of_paper for p in range(s.page_start, s.page_end + 1)}
    outside = [p for p in range(citation.page, citation.page_end + 1) if p not in covered]
    if outside:
        given = ", ".join(pages_label(s.page_start, s.page_end) for s in of_paper)
        citation.status = "page_not_found"
        citation.reason = (
            f"p.{outside[0]} of arXiv:{citation.arxiv_id} was not among the sources (given: {given})"
        )
        return citation
    citation.source = next(s.n for s in of_paper if s.page_start <= citation.page <= s.page_end)
    if not quote_is_checkable(citation.quote):
        citation.status = "no_quote"
        citation.reason = (
            "no quote to check"
            if not citation.quote.strip()
            else f"the quote is too short to check (at least {MIN_QUOTE_WORDS} words)"
        )
        return citation
    page_texts = dict(pages.get(wanted, {}))
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
    matched = _longest_matching_words(citation.quote, texts)
    if matched == 0:
        return f"the quote does not occur on {where}"
    return f"the quote does not occur verbatim on {where} (at most {matched} of its {words} words match in a row)"


def verify_answer(
    answer: str, sources: Sequence[SourceSpan], pages: Mapping[str, Mapping[int, str]]
) -> VerifyResult:
    citations = [verify_citation(c, sources, pages) for c in parse_citations(answer)]
    return VerifyResult(citations, find_uncited(answer, citations))
