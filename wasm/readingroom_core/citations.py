"""Citations in an LLM's answer: parsed, and checked against the page text of the sources it was given.

The one citation shape the prompt asks for, after every claim:

    [arXiv:2312.10997 p.7 "short verbatim quote"]

one citation per bracket, several brackets for several sources, `pp.7-8` when the quote's page is not
known. Parsing is lenient about what models really write: several citations in one bracket separated
by `;` or `,`, `pp.` ranges with any dash, `p. 7` / `page 7`, a missing `arXiv:` prefix, typographic
quotes (“…”, «…», „…“), a colon or comma between the parts, `(p. 7)`, a quote written just before the
citation instead of inside it, Markdown emphasis or code marks around
any part, and citations inside list items and table cells. A bare arXiv id counts only when a page
follows it.

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

Uncited claims are sentences with no citation. Sentences are split out of the answer line by line:
headings, lines ending in ":" (list and table intros), table header and rule rows, code, sentences
under 4 words and statements about the sources themselves ("The sources do not say …") are not claims.
A citation right after a sentence's full stop belongs to that sentence.

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

SHAPE = '[arXiv:ID p.N "short verbatim quote"]'
STATUSES = ("verified", "invented", "page_not_found", "no_quote", "quote_not_found")
MIN_QUOTE_WORDS = 3
MIN_QUOTE_LETTERS = 12
MIN_CLAIM_WORDS = 4
PAGE_MARK_RE = re.compile(r"\s*\u27e6p\.\d+\u27e7\s*")  # ⟦p.8⟧, where the prompt shows a page break

_ID = r"(?:\d{4}\.\d{4,5}|[a-z][a-z.-]*/\d{7})(?:v\d+)?"
_PAGE = (
    r"(?:pp?\.?|pages?)\s*(?P<first>\d{1,4})"
    r"(?:\s*(?:-|\u2010|\u2011|\u2012|\u2013|\u2014|to)\s*(?:pp?\.?\s*)?(?P<last>\d{1,4}))?"
)
_MARKS = r"[\s*_`]*"
_OPENING = {'"': '"', "\u201c": "\u201d\u201c\"", "\u201d": "\u201d\"", "\u00ab": "\u00bb", "\u201e": "\u201c\u201d\"",
            "\u2033": "\u2033\""}  # fmt: skip
_CITATION_RE = re.compile(
    rf"(?P<open>[\[(]{_MARKS})?(?:arxiv{_MARKS}:?{_MARKS}(?P<id>{_ID})|(?<![\w.])(?P<bare>{_ID}))"
    rf"{_MARKS}[,:;]?{_MARKS}(?P<paren>\()?{_PAGE}(?(paren)\))",
    re.IGNORECASE,
)
_AFTER_PAGE_RE = re.compile(r"[\s*_`,:;\u2013\u2014-]*")
_CLOSE_RE = re.compile(rf"{_MARKS}[\])]")
# A quote written just before the citation instead of inside it: “…” [arXiv:ID p.N]
_QUOTE_BEFORE_RE = re.compile(
    r"[\"\u201c\u00ab]([^\"\u201c\u201d\u00ab\u00bb\n]{8,400})[\"\u201d\u00bb][\s*_`,:\u2013\u2014-]*$"
)
_NEXT_IN_GROUP_RE = re.compile(rf"{_MARKS}[;,]{_MARKS}(?=(?:arxiv|{_ID}))", re.IGNORECASE)
_VERSION_RE = re.compile(r"v\d+$")


@dataclass
class Citation:
    arxiv_id: str
    page: int
    page_end: int
    quote: str
    start: int  # offsets of the citation in the answer
    end: int
    status: str = ""
    reason: str = ""
    source: int | None = None
    found_page: int | None = None
    highlight: tuple[int, int] | None = None

    @property
    def verified(self) -> bool:
        return self.status == "verified"

    @property
    def pages_label(self) -> str:
        return f"p.{self.page}" if self.page == self.page_end else f"pp.{self.page}-{self.page_end}"

    def to_dict(self) -> dict:
        data = asdict(self)
        data["verified"] = self.verified
        data["highlight"] = list(self.highlight) if self.highlight else None
        return data


@dataclass(frozen=True)
class Uncited:
    text: str
    start: int
    end: int


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

    def to_dict(self) -> dict:
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


# --- parsing -----------------------------------------------------------------------------------------


def bare_id(arxiv_id: str) -> str:
    return _VERSION_RE.sub("", arxiv_id.strip().lower())


def _read_quote(answer: str, at: int) -> tuple[str, int] | None:
    """The quote opening at `at` (after optional marks) and the offset after its closing mark."""
    skipped = re.compile(_MARKS).match(answer, at).end()
    opening = answer[skipped : skipped + 1]
    closers = _OPENING.get(opening)
    if not closers:
        return None
    end = skipped + 1
    while end < len(answer) and answer[end] not in closers and answer[end] != "\n":
        end += 1
    if end >= len(answer) or answer[end] == "\n":
        return None
    return answer[skipped + 1 : end], end + 1


def parse_citations(answer: str) -> list[Citation]:
    """Every citation in `answer`, in order, with its offsets; see the module docstring for the shapes."""
    citations = []
    at = 0
    while True:
        match = _CITATION_RE.search(answer, at)
        if match is None:
            return citations
        arxiv_id = match.group("id") or match.group("bare")
        first = int(match.group("first"))
        last = int(match.group("last") or first)
        end = match.end()
        quote = ""
        quoted = _read_quote(answer, _AFTER_PAGE_RE.match(answer, end).end())
        start = match.start()
        if quoted:
            quote, end = quoted
        elif before := _QUOTE_BEFORE_RE.search(
            answer, max(0, start - 500, citations[-1].end if citations else 0), start
        ):
            quote = before.group(1)
        in_group = match.group("open") is not None or (citations and citations[-1].end == start)
        closing = _CLOSE_RE.match(answer, end)
        if closing and in_group:
            end = closing.end()
        else:
            joined = _NEXT_IN_GROUP_RE.match(answer, end)
            if joined and in_group:
                end = joined.end()
        citations.append(Citation(arxiv_id, min(first, last), max(first, last), quote.strip(), start, end))
        at = end


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
        given = ", ".join(_label(s.page_start, s.page_end) for s in of_paper)
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


def _label(first: int, last: int) -> str:
    return f"p.{first}" if first == last else f"pp.{first}-{last}"


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


# --- uncited claims ----------------------------------------------------------------------------------

_ABBREVIATIONS = re.compile(
    r"(?:\b(?:e\.g|i\.e|et al|etc|vs|cf|fig|figs|eq|eqs|sec|tab|no|approx|resp|p|pp|ch|vol|dr|mr|ms)|\b[A-Z])\.$",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"[.!?][\"'\u201d\u2019)*_]*(?=\s+|$)")
_LIST_MARK = re.compile(r"^\s*(?:[-*+\u2022]|\d{1,3}[.)])\s+")
_HTML_TAG = re.compile(r"<(script|style)\b.*?</\1\s*>|<[^>]*>", re.IGNORECASE | re.DOTALL)
_MD_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_META = re.compile(
    r"\b(?:sources?|passages?|excerpts?|provided (?:text|context|material))\b.*\b(?:not|no|insufficient|"
    r"neither|nor|lack|lacks|cannot|unable|silent|only)\b|\b(?:insufficient|not enough information)\b",
    re.IGNORECASE,
)
_WORD = re.compile(r"[^\W\d_]{2,}")


def _claim_lines(answer: str) -> list[tuple[int, str]]:
    """(offset, line) of every line that can hold claims: no headings, code, rules, table header or
    separator rows, and no line that only introduces what follows."""
    lines = []
    offset = 0
    in_code = False
    previous_was_table = False
    for raw in answer.splitlines(keepends=True):
        line = raw.rstrip("\r\n")
        start = offset
        offset += len(raw)
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            in_code = not in_code
            continue
        is_table = stripped.startswith("|")
        table_header = is_table and not previous_was_table
        previous_was_table = is_table
        if (
            in_code
            or not stripped
            or stripped.startswith("#")
            or re.fullmatch(r"[-*_=|:\s]+", stripped)
            or stripped.rstrip("*_ ").endswith(":")
            or table_header
        ):
            continue
        lines.append((start, line))
    return lines


def _sentences(line: str, cited: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """[start, end) of each sentence of `line` (a table row is one); a citation right after a full
    stop belongs to the sentence before it. `cited` are citation spans, relative to the line."""
    cuts = []
    for match in _SENTENCE_END.finditer(line):
        end = match.end()
        if _ABBREVIATIONS.search(line[max(0, match.start() - 8) : match.start() + 1]):
            continue
        if any(start < end <= stop for start, stop in cited):
            continue
        following = len(line) - len(line[end:].lstrip())
        attached = [stop for start, stop in cited if start == following]
        cuts.append(attached[0] if attached else end)
    bounds, start = [], 0
    for cut in sorted(set(cuts)):
        bounds.append((start, cut))
        start = cut
    bounds.append((start, len(line)))
    return bounds


def find_uncited(answer: str, citations: Sequence[Citation]) -> list[Uncited]:
    uncited = []
    for line_start, line in _claim_lines(answer):
        line_end = line_start + len(line)
        cited = [
            (c.start - line_start, c.end - line_start) for c in citations if line_start <= c.start < line_end
        ]
        body_start = _LIST_MARK.match(line).end() if _LIST_MARK.match(line) else 0
        for start, end in _sentences(line, cited):
            start = max(start, body_start)
            if end <= start or any(start <= c_start < end for c_start, _ in cited):
                continue
            sentence = line[start:end]
            plain = _MD_LINK.sub(r"\1", _HTML_TAG.sub(" ", sentence))
            if len(_WORD.findall(plain)) < MIN_CLAIM_WORDS or _META.search(plain):
                continue
            lead = len(sentence) - len(sentence.lstrip())
            text = sentence.strip()
            uncited.append(Uncited(text, line_start + start + lead, line_start + start + lead + len(text)))
    return uncited


def verify_answer(
    answer: str, sources: Sequence[SourceSpan], pages: Mapping[str, Mapping[int, str]]
) -> VerifyResult:
    citations = [verify_citation(c, sources, pages) for c in parse_citations(answer)]
    return VerifyResult(citations, find_uncited(answer, citations))
