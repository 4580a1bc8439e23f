"""Plain data passed between pipeline stages.

Stages are functions from one of these to the next; keeping the data dumb (dataclasses, JSON-able)
lets each stage be tested alone and cached on disk.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

# New-style ids (since April 2007) begin with the year and month of first submission: 1706.03762 -> 2017-06.
_NEW_STYLE_ID = re.compile(r"(\d{2})(\d{2})\.\d{4,5}(?:v\d+)?")
# Old-style ids (archive/YYMMNNN) encode it too: hep-th/9901001 -> 1999-01.
_OLD_STYLE_ID = re.compile(r"[a-z\-]+(?:\.[A-Z]{2})?/(\d{2})(\d{2})\d{3}(?:v\d+)?")


def file_stem(arxiv_id: str) -> str:
    """An arXiv id as a file or folder name: old-style ids hold a slash ("hep-th/9901001")."""
    return arxiv_id.replace("/", "_")


def first_version_date(arxiv_id: str, published: str) -> str:
    """When the paper first appeared: arXiv's `published` (the v1 date), else the month its id encodes.

    A mirror copy of a later version often lacks `published`; its `updated` date is the revision's,
    which put "Attention Is All You Need" in 2023. Returns "YYYY-MM-DD", "YYYY-MM" or "".
    """
    if published[:4].isdigit():
        return published[:10]
    match = _NEW_STYLE_ID.fullmatch(arxiv_id) or _OLD_STYLE_ID.fullmatch(arxiv_id)
    if not match:
        return ""
    yy, month = int(match.group(1)), int(match.group(2))
    if not 1 <= month <= 12:
        return ""
    century = 1900 if match.re is _OLD_STYLE_ID and yy >= 91 else 2000
    return f"{century + yy:04d}-{month:02d}"


@dataclass(frozen=True)
class PaperRef:
    """One entry of the reading list, as the researcher wrote it."""

    arxiv_id: str  # without version, e.g. "2005.11401" or "hep-th/9901001"
    version: str | None = None  # "v4" when pinned
    tags: tuple[str, ...] = ()
    note: str = ""


@dataclass(frozen=True)
class LockEntry:
    """What a previous build resolved for a paper; makes rebuilds reproducible."""

    version: str  # "v4"
    pdf_sha256: str


@dataclass(frozen=True)
class Settings:
    """Site settings from the corpus file."""

    title: str = "Reading Room"
    description: str = ""
    base_url: str = "/"
    model: str = "all-MiniLM-L6-v2"  # a name we ship, or a path to a sentence-transformers folder
    query_prefix: str = ""
    document_prefix: str = ""
    # How many MB of the index files read by range a visitor's browser fetches whole (render.app_config).
    whole_index_mb: float = 16.0


# One paper's parsing limits (builder/stages/parse/bounded.py, whose docstring says how they were chosen),
# here so that the command line shows them without importing the parser.
DEFAULT_SECONDS = 60.0
DEFAULT_MEMORY_MB = 2048


@dataclass(frozen=True)
class ParseLimits:
    seconds: float = DEFAULT_SECONDS  # wall time of one paper
    memory_mb: int = DEFAULT_MEMORY_MB  # address space one paper may add to its process


DEFAULT_LIMITS = ParseLimits()


@dataclass(frozen=True)
class Publish:
    """How the publishing workflow (.github/workflows/publish.yml) treats the list: `[publish]`."""

    weekly: bool = False  # also rebuild every Monday, asking arXiv for new versions of unpinned papers


@dataclass
class PaperMeta:
    """What arXiv (or a mirror) says about one version of a paper."""

    arxiv_id: str
    version: str  # "v4"
    title: str
    authors: list[str]
    abstract: str
    categories: list[str]
    primary_category: str
    published: str  # ISO date of v1, "" when unknown
    updated: str  # ISO date of this version, "" when unknown
    withdrawn: bool = False
    comment: str = ""
    doi: str = ""
    journal_ref: str = ""

    @property
    def first_version(self) -> str:
        """Date of v1 ("YYYY-MM-DD" or "YYYY-MM"), what the site shows, filters and sorts by as the year."""
        return first_version_date(self.arxiv_id, self.published)

    @property
    def year(self) -> int | None:
        """The year of the first version; a later revision's date would misplace old papers."""
        date = self.first_version
        return int(date[:4]) if date[:4].isdigit() else None

    @property
    def versioned_id(self) -> str:
        return f"{self.arxiv_id}{self.version}"

    @property
    def abs_url(self) -> str:
        return f"https://arxiv.org/abs/{self.versioned_id}"  # the version indexed, as every link

    @property
    def pdf_url(self) -> str:
        return f"https://arxiv.org/pdf/{self.versioned_id}"


@dataclass
class FetchedPaper:
    """A paper whose PDF sits on local disk and matches its checksum."""

    meta: PaperMeta
    pdf_path: str
    pdf_sha256: str
    source: str  # "cache", "mirror" or "arxiv"
    ref: PaperRef | None = None


@dataclass(frozen=True)
class Failure:
    """One line of the build report: what went wrong, for which paper, and what to do."""

    arxiv_id: str
    stage: str  # "config", "fetch", "parse", "chunk", ...
    reason: str
    hint: str = ""

    def line(self) -> str:
        tail = f" — {self.hint}" if self.hint else ""
        return f"[{self.stage}] {self.arxiv_id}: {self.reason}{tail}"


@dataclass(frozen=True)
class PageFlag:
    """A page whose text cannot be trusted or is missing."""

    page: int  # 1-based physical page
    kind: str  # "no-text" or "garbled"
    detail: str = ""


@dataclass(frozen=True)
class PageSpan:
    """Where one PDF page's cleaned text sits inside ParsedPaper.text ([start, end))."""

    page: int  # 1-based physical page of the PDF
    start: int
    end: int


@dataclass(frozen=True)
class Section:
    """A detected heading; it governs the text from `start` to the next heading."""

    title: str
    start: int  # offset into ParsedPaper.text
    page: int
    level: int = 1


@dataclass
class ParsedPaper:
    """Cleaned text of a whole paper with a map back to pages.

    `text` is every page's cleaned text in order, pages joined by a blank line; `pages` map every
    character offset of `text` to the page it came from, which is what makes `[arXiv:ID p.N]`
    citations and quote checks exact. The bibliography stays in `text` (so offsets stay simple) but
    `references_span` marks it so chunking leaves it out; appendices after it remain searchable.
    """

    arxiv_id: str
    text: str
    pages: list[PageSpan]
    sections: list[Section]
    references_span: tuple[int, int] | None = None  # [start, end) in `text`
    page_count: int = 0
    flags: list[PageFlag] = field(default_factory=list)
    unmapped_glyphs: int = 0  # glyphs the PDF does not map to Unicode, dropped from `text`

    def page_at(self, offset: int) -> int:
        """The 1-based page that holds character `offset` of `text`."""
        lo, hi = 0, len(self.pages) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.pages[mid].start <= offset:
                lo = mid
            else:
                hi = mid - 1
        return self.pages[lo].page

    def section_at(self, offset: int) -> str:
        title = ""
        for section in self.sections:
            if section.start > offset:
                break
            title = section.title
        return title

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ParsedPaper:
        return cls(
            arxiv_id=data["arxiv_id"],
            text=data["text"],
            pages=[PageSpan(**p) for p in data["pages"]],
            sections=[Section(**s) for s in data["sections"]],
            references_span=tuple(data["references_span"]) if data.get("references_span") else None,
            page_count=data.get("page_count", 0),
            flags=[PageFlag(**f) for f in data.get("flags", [])],
            unmapped_glyphs=data.get("unmapped_glyphs", 0),
        )


@dataclass(frozen=True)
class Chunk:
    """A passage that is embedded, indexed and shown; `text` is the cleaned paper text verbatim."""

    chunk_id: str
    arxiv_id: str
    page_start: int
    page_end: int
    char_start: int  # offsets into ParsedPaper.text
    char_end: int
    section: str
    text: str
    n_tokens: int  # word pieces of `text` alone, without special tokens or context prefix
    context: str = ""  # "title — section" (cut to fit) that is embedded and indexed with `text`

    @property
    def indexed_text(self) -> str:
        """What the embedder and BM25 see: the context line, then the verbatim text."""
        return f"{self.context}\n{self.text}" if self.context else self.text


@dataclass
class IngestedPaper:
    """A paper that made it through ingestion: what arXiv says, its text, and its chunks."""

    fetched: FetchedPaper
    parsed: ParsedPaper
    chunks: list[Chunk] = field(default_factory=list)

    @property
    def meta(self) -> PaperMeta:
        return self.fetched.meta
