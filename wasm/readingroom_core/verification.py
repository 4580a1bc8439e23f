"""Checking an answer's citations against the page text of the sources it was given.

Verification, for each citation:
- "invented": the id is not the id of any source;
- "version_not_found": the id names a version (`v97`) other than the one the site holds (an id without a
  version names the one the site holds), so its PDF link would point at another text;
- "page_not_found": a cited page lies outside every page span of that paper's sources;
- "no_quote": no quote, or one under 3 words / 12 letters, so nothing can be checked;
- "quote_not_found": the quote is not in the cited page's text (the reason says where it is if it is on
  another source page of that paper, or how much of it matched);
- "verified": the quote is in the cited page's text. A quote that runs across a page break counts when
  it starts or ends on the cited page and continues on the neighbouring page; the reason says so.
Matching follows one rule, `canonical`: what PDFs and typing change freely (case, ligatures, accents,
quote and dash styles, whitespace, spacing around punctuation, line-end hyphenation) is ignored; what
carries meaning (every letter and digit, word boundaries, decimal points, signs, percent and comparison
signs) must match exactly, and a quote starts and ends on word boundaries of the page.

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
    version: str = ""  # the version the site holds, such as "v2"; "" when the site does not say


# --- matching ----------------------------------------------------------------------------------------

# Characters that carry a number's or a comparison's meaning: kept, and glued to their neighbours so that
# spacing around them ("49 %", "< 5") does not matter while dropping or adding one does.
_SYMBOLS = frozenset("+-\u00b1%<>\u2264\u2265\u2260\u226a\u226b=~\u2248\u00d7^_")
_DASHES = frozenset("-\u00ad\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d")
_NUMBER_MARKS = frozenset(".,/:\u2044")  # kept between two digits: 1.4, 1,000, 3/4, 1:2
_SPACE, _DROP = " ", ""


def _pieces(text: str) -> list[tuple[str, int]]:
    """(character, offset) after NFKD, case folding and accent dropping; whitespace and punctuation that
    carries no meaning become one " ", superscripts and subscripts a "^" or "_" before their digits."""
    pieces: list[tuple[str, int]] = []
    for index, char in enumerate(text):
        if char.isascii():
            if char.isalnum():
                pieces.append((char.lower(), index))
            elif char in _SYMBOLS or char in _NUMBER_MARKS:
                pieces.append((char, index))
            else:
                pieces.append((_SPACE, index))
            continue
        if char in _DASHES:
            pieces.append(("-", index))
            continue
        if char in _SYMBOLS:
            pieces.append((char, index))
            continue
        tag = unicodedata.decomposition(char)
        if tag.startswith(("<super>", "<sub>")):
            pieces.append(("^" if tag.startswith("<super>") else "_", index))
        for part in unicodedata.normalize("NFKD", char).casefold():
            if part.isalnum() or part in _SYMBOLS or part in _NUMBER_MARKS:
                pieces.append((part, index))
            elif unicodedata.category(part) in ("Mn", "Cf"):
                continue  # accents and invisible format characters (soft hyphens are dashes above)
            else:
                pieces.append((_SPACE, index))
    return pieces


def _resolve(pieces: list[tuple[str, int]]) -> list[str]:
    """What each piece becomes: a dash before a number is a sign or a range ("-4.9", "10 - 20"); a dash
    right after a letter and before a letter, with or without a line break between, joins them
    ("re-\\ntriever", "first-stage" and "firststage" are one word, as PDFs and the parser's
    de-hyphenation write it either way); any other dash separates words; number marks
    count only between two digits; runs of separators shrink to one space between words and vanish
    next to symbols."""
    chars = [char for char, _ in pieces]
    count = len(chars)
    next_solid = [count] * (count + 1)  # index of the next piece that is not a separator
    for i in range(count - 1, -1, -1):
        next_solid[i] = i if chars[i] != _SPACE else next_solid[i + 1]
    out = chars[:]
    for i, char in enumerate(chars):
        after = chars[next_solid[i + 1]] if next_solid[i + 1] < count else ""
        if char == "-":
            if after.isdigit():
                out[i] = "-"
            elif i > 0 and chars[i - 1].isalpha() and after.isalpha():
                out[i] = _DROP
                for j in range(i + 1, next_solid[i + 1]):
                    out[j] = _DROP
            else:
                out[i] = _SPACE
        elif char in _NUMBER_MARKS:
            joins_digits = 0 < i < count - 1 and chars[i - 1].isdigit() and chars[i + 1].isdigit()
            out[i] = char if joins_digits else _SPACE
    return out


def canonical(text: str) -> tuple[str, tuple[int, ...]]:
    """The one rule by which a quote matches page text, and each kept character's offset in `text`.

    Equal after this: case (case folding), ligatures and other compatibility forms (NFKD), accents,
    quote styles, dash styles (‐‑‒–—− are all "-" as signs), runs of whitespace and punctuation that
    carries no meaning, spacing around symbols, and hyphens inside a word ("re-\\ntriever" = "retriever").
    Kept exactly: every letter and digit, each word boundary (one space), decimal points and commas
    between digits, signs (+ - ± as signs or ranges), % and comparison signs (< > ≤ ≥ = ≠ ~ ≈ ×),
    superscripts."""
    pieces = _pieces(text)
    resolved = _resolve(pieces)
    chars: list[str] = []
    offsets: list[int] = []
    for (_, offset), char in zip(pieces, resolved, strict=True):
        if char == _DROP:
            continue
        if char == _SPACE:
            if chars and chars[-1] != _SPACE and chars[-1] not in _SYMBOLS:
                chars.append(_SPACE)
                offsets.append(offset)
            continue
        if char in _SYMBOLS and chars and chars[-1] == _SPACE:
            chars.pop()
            offsets.pop()
        chars.append(char)
        offsets.append(offset)
    if chars and chars[-1] == _SPACE:
        chars.pop()
        offsets.pop()
    return "".join(chars), tuple(offsets)


@lru_cache(maxsize=256)
def _page_canonical(text: str) -> tuple[str, tuple[int, ...]]:
    """`canonical` of a page or source text, cached apart from quotes: one answer checks the same pages
    many times, and its many quotes must not push them out."""
    return canonical(text)


@lru_cache(maxsize=64)
def _quote_canonical(quote: str) -> str:
    return canonical(PAGE_MARK_RE.sub(" ", quote))[0]


def quote_is_checkable(quote: str) -> bool:
    return (
        len(quote.split()) >= MIN_QUOTE_WORDS
        and sum(c.isalnum() for c in _quote_canonical(quote)) >= MIN_QUOTE_LETTERS
    )


def _at_boundary(text: str, at: int) -> bool:
    """Whether a match may start or end at `at` of a canonical text: at either end, next to a space, or
    between a letter and a symbol; never inside a word or number, nor between a number and its sign,
    percent or comparison ("4.9" is not in "-4.9%")."""
    if at <= 0 or at >= len(text) or _SPACE in (text[at - 1], text[at]):
        return True
    left, right = text[at - 1], text[at]
    return (left.isalpha() and right in _SYMBOLS) or (left in _SYMBOLS and right.isalpha())


def find_quote(quote: str, text: str) -> tuple[int, int] | None:
    """[start, end) of `quote` in `text` under `canonical`'s rule, starting and ending on word
    boundaries of `text`, or None."""
    wanted = _quote_canonical(quote)
    if not wanted:
        return None
    letters, offsets = _page_canonical(text)
    at = letters.find(wanted)
    while at >= 0:
        end = at + len(wanted)
        if _at_boundary(letters, at) and _at_boundary(letters, end):
            return offsets[at], offsets[end - 1] + 1
        at = letters.find(wanted, at + 1)
    return None


def _longest_matching_words(quote: str, text: str) -> int:
    """The longest run of the quote's words that occurs in `text` (for reasons). A run that occurs
    keeps occurring when shortened, so one sliding window finds it with a linear number of searches."""
    words = [canonical(word)[0] for word in quote.split()]
    letters = _page_canonical(text)[0]
    best = end = 0
    for start in range(len(words)):
        end = max(end, start)
        while end < len(words) and " ".join(words[start : end + 1]) in letters:
            end += 1
        best = max(best, end - start)
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
    cited_version = citation.arxiv_id[len(wanted) :].lower()
    if cited_version and all(s.version.lower() != cited_version for s in of_paper):
        held = of_paper[0].version
        citation.status = "version_not_found"
        citation.reason = (
            f"arXiv:{citation.arxiv_id} is not in the reading list, which holds {of_paper[0].arxiv_id}{held}"
            if held
            else f"arXiv:{citation.arxiv_id} names a version; the site does not say which one it holds"
        )
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
