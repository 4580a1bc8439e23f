"""Filters: which papers, and so which chunks, a search may return.

A query's field filters (`querysyntax.parse_search`) and the search form's facets both become `Filters`.
Values of one field are alternatives (any may match); different fields must all match.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

from readingroom_core.analysis import bare_id, fold
from readingroom_core.formats.papers import PaperRecord
from readingroom_core.lru import LastResult

# Allowed chunks are listed up to this many: the dense side reads the lists holding them only for a few
# hundred at most (`DenseLists.reads_holders`), and listing costs time only where it is used.
LISTED_CHUNKS = 4096


@dataclass(frozen=True)
class Filters:
    year_min: int | None = None
    year_max: int | None = None
    categories: tuple[str, ...] = ()  # "cs.CL", or an archive such as "cs"
    tags: tuple[str, ...] = ()
    paper_ids: tuple[str, ...] = ()  # arXiv ids; a version suffix is ignored
    authors: tuple[str, ...] = ()  # substring of any author name, case and accents aside

    def is_empty(self) -> bool:
        return self == Filters()


def narrower(current: int | None, new: int | None, pick: Callable[[int, int], int]) -> int | None:
    """The tighter of two optional bounds (`pick` is max for lower bounds, min for upper ones)."""
    if current is None or new is None:
        return new if current is None else current
    return pick(current, new)


def merge_filters(first: Filters, second: Filters) -> Filters:
    """Both filters at once: year bounds intersect, value lists join (each list is a set of alternatives)."""
    return Filters(
        year_min=narrower(first.year_min, second.year_min, max),
        year_max=narrower(first.year_max, second.year_max, min),
        categories=tuple(dict.fromkeys((*first.categories, *second.categories))),
        tags=tuple(dict.fromkeys((*first.tags, *second.tags))),
        paper_ids=tuple(dict.fromkeys((*first.paper_ids, *second.paper_ids))),
        authors=tuple(dict.fromkeys((*first.authors, *second.authors))),
    )


def normalized(filters: Filters) -> Filters:
    """Filters in the form `PaperKeys.passes` compares: lower case, accents folded in author names,
    arXiv ids without version."""
    return Filters(
        year_min=filters.year_min,
        year_max=filters.year_max,
        categories=tuple(c.strip().lower() for c in filters.categories),
        tags=tuple(t.strip().lower() for t in filters.tags),
        paper_ids=tuple(bare_id(i) for i in filters.paper_ids),
        authors=tuple(author_key(a) for a in filters.authors),
    )


def author_key(name: str) -> str:
    """An author name as filters compare it: `author:roziere` finds Rozière, `author:OGUZ` Oğuz."""
    return fold(name.strip()).lower()


@dataclass(frozen=True)
class PaperKeys:
    """What filters look at, normalised once at load so a query compares plain strings."""

    year: int | None
    categories: tuple[str, ...]
    tags: frozenset[str]
    bare_id: str
    authors: tuple[str, ...]

    @classmethod
    def of(cls, paper: PaperRecord) -> PaperKeys:
        return cls(
            year=paper.year,
            categories=tuple(c.lower() for c in paper.categories),
            tags=frozenset(t.lower() for t in paper.tags),
            bare_id=bare_id(paper.id),
            authors=tuple(author_key(a) for a in paper.authors),
        )

    def passes(self, filters: Filters) -> bool:
        """Whether the paper meets `filters` (already `normalized`)."""
        if filters.year_min is not None or filters.year_max is not None:
            if self.year is None:
                return False
            if filters.year_min is not None and self.year < filters.year_min:
                return False
            if filters.year_max is not None and self.year > filters.year_max:
                return False
        if filters.categories and not any(
            c == wanted or c.startswith(wanted + ".")
            for wanted in filters.categories
            for c in self.categories
        ):
            return False
        if filters.tags and self.tags.isdisjoint(filters.tags):
            return False
        if filters.paper_ids and self.bare_id not in filters.paper_ids:
            return False
        return not filters.authors or any(
            wanted in author for wanted in filters.authors for author in self.authors
        )


@dataclass(frozen=True)
class Allowed:
    """The chunks a query may return, how many there are, and their doc ids where few (`LISTED_CHUNKS`)."""

    test: Callable[[int], bool]
    count: int
    docs: list[int] | None = None


class PaperFilter:
    """Every paper's filter keys, computed once, at the first query with a filter (computed as the site
    opens, they delay the first result of a large list, and most first queries have no filter; commit
    49bfaca), so that a query decides once per paper and asking about a chunk is one list lookup."""

    def __init__(self, papers: Sequence[PaperRecord], paper_of: Sequence[int]) -> None:
        self._papers = papers
        self._paper_of = paper_of
        self.tags = sorted({tag.lower() for paper in papers for tag in paper.tags})
        # the same filters give the same object: a step run again after a fetch finds its sums by it
        self._last: LastResult[Filters, Allowed | None] = LastResult()

    @cached_property
    def _keys(self) -> list[PaperKeys]:
        return [PaperKeys.of(paper) for paper in self._papers]

    def allowed(self, filters: Filters) -> Allowed | None:
        """The chunks of the papers that pass `filters` (None: all)."""
        if filters.is_empty():
            return None
        return self._last.get(filters, lambda: self._allowed(filters))

    def _allowed(self, filters: Filters) -> Allowed:
        wanted = normalized(filters)
        passing = [keys.passes(wanted) for keys in self._keys]
        spans = [paper.doc_ids for paper, passes in zip(self._papers, passing, strict=True) if passes]
        count = sum(len(span) for span in spans)
        docs = [doc_id for span in spans for doc_id in span] if count <= LISTED_CHUNKS else None
        paper_of = self._paper_of
        return Allowed(lambda doc_id: passing[paper_of[doc_id]], count, docs)
