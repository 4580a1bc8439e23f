"""The reading list's own citation graph: which papers of the list cite which, and where.

Built from every paper's reference entries (`builder.references`) matched to the list
(`builder.citation_match`). It is written to the site as `data/graph.<hash>.json` (this module owns
that format: `{"v", "citations": [[citing, cited, page, how], …]}`), read back when the pages are
rendered again, and drawn on the paper pages and the corpus page.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path

from builder.citation_match import ListPaper, ReferenceMatcher
from builder.models import IngestedPaper, PaperMeta
from builder.references import PaperReferences, cached_references
from readingroom_core.formats.versioned import FORMAT_VERSION, compact_json, load_versioned


@dataclass(frozen=True)
class Citation:
    """`citing` cites `cited` (both papers of the list); `page`: the page of `citing` whose text
    first cites it, where found; `how`: the matching rule ("id", "title", "author-year")."""

    citing: str
    cited: str
    page: int | None
    how: str


@dataclass(frozen=True)
class CitationGraph:
    """Every citation between papers of the list, citing papers in list order, then cited ids."""

    citations: tuple[Citation, ...]

    def cites(self, arxiv_id: str) -> list[Citation]:
        return list(self._by_citing.get(arxiv_id, ()))

    def cited_by(self, arxiv_id: str) -> list[Citation]:
        return list(self._by_cited.get(arxiv_id, ()))

    # Every paper page asks for both: scanning every citation each time would be quadratic in the list
    # (commit c351cdd).
    @cached_property
    def _by_citing(self) -> dict[str, list[Citation]]:
        return _grouped(self.citations, lambda citation: citation.citing)

    @cached_property
    def _by_cited(self) -> dict[str, list[Citation]]:
        return _grouped(self.citations, lambda citation: citation.cited)

    def cited_counts(self) -> dict[str, int]:
        """How many papers of the list cite each cited paper (papers never cited are absent)."""
        counts: dict[str, int] = {}
        for citation in self.citations:
            counts[citation.cited] = counts.get(citation.cited, 0) + 1
        return counts


def build_graph(references: Sequence[PaperReferences], matcher: ReferenceMatcher) -> CitationGraph:
    """One citation per (citing, cited) pair, with the earliest page on which it is made."""
    citations: list[Citation] = []
    for paper in references:
        found: dict[str, Citation] = {}
        for reference in paper.references:
            for match in matcher.match(reference, citing=paper.arxiv_id):
                known = found.get(match.arxiv_id)
                if known is None:
                    found[match.arxiv_id] = Citation(
                        paper.arxiv_id, match.arxiv_id, reference.cited_on, match.how
                    )
                elif _earlier(reference.cited_on, known.page):
                    found[match.arxiv_id] = replace(known, page=reference.cited_on)
        citations += [found[cited] for cited in sorted(found)]
    return CitationGraph(tuple(citations))


def _grouped(citations: Sequence[Citation], key: Callable[[Citation], str]) -> dict[str, list[Citation]]:
    """The citations by `key`, each group in the graph's order."""
    groups: dict[str, list[Citation]] = {}
    for citation in citations:
        groups.setdefault(key(citation), []).append(citation)
    return groups


def _earlier(page: int | None, than: int | None) -> bool:
    return page is not None and (than is None or page < than)


def graph_bytes(graph: CitationGraph) -> bytes:
    rows = [[c.citing, c.cited, c.page, c.how] for c in graph.citations]
    return compact_json({"v": FORMAT_VERSION, "citations": rows})


def read_graph(data: bytes | str, what: str = "graph file") -> CitationGraph:
    loaded = load_versioned(data, what)
    return CitationGraph(tuple(Citation(*row) for row in loaded["citations"]))


def list_papers(metas: Sequence[PaperMeta]) -> list[ListPaper]:
    """What the matcher needs of each paper of the list, from arXiv's metadata."""
    return [ListPaper.of(m.arxiv_id, m.title, m.authors, (m.first_version, m.updated)) for m in metas]


def list_graph(papers: Sequence[IngestedPaper], cache_dir: Path) -> CitationGraph:
    """The graph of the papers a build ingested, their reference entries read once and cached."""
    references = [cached_references(p.fetched, p.parsed, cache_dir) for p in papers]
    return build_graph(references, ReferenceMatcher(list_papers([p.meta for p in papers])))
