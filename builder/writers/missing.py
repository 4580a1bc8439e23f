"""The missing-works file (`readingroom_core.formats.missing`) from the build's reference lists: the
works `builder suggest` lists (cited by at least two papers of the list), with the pages that cite them
and the names the citing papers give them (`builder.missing_names`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from builder.citation_graph import list_papers
from builder.citation_match import ReferenceMatcher, squeeze
from builder.missing_names import first_cited_page, reference_names, title_words, work_names
from builder.missing_works import MissingWork as OneWork
from builder.missing_works import missing_works
from builder.models import IngestedPaper, ParsedPaper
from builder.references import PaperReferences, cached_references
from readingroom_core.formats.missing import MAX_WORKS, MIN_CITING, MissingWork, missing_bytes


def site_missing_works(
    references: Sequence[PaperReferences],
    matcher: ReferenceMatcher,
    parsed: dict[str, ParsedPaper],
    list_titles: Sequence[str],
) -> list[MissingWork]:
    """The list's most cited missing works as the site stores them, most cited first."""
    listed = title_words(list_titles)
    works = _merged(missing_works(references, matcher, MIN_CITING))[:MAX_WORKS]
    uses = [
        [
            name
            for citing, reference in work.entries
            if citing in parsed
            for name in reference_names(parsed[citing], reference)
        ]
        for work in works
    ]
    # A name several works are given ("MARCO" for MS MARCO and for the retrievers trained on it) belongs
    # to the one it names most often; the others lose it.
    owner: dict[str, tuple[int, int]] = {}
    for index, names in enumerate(uses):
        for name, count in Counter(n.lower() for n in names).items():
            if count > owner.get(name, (0, -1))[0]:
                owner[name] = (count, index)
    stored = []
    for index, (work, names) in enumerate(zip(works, uses, strict=True)):
        kept = [n for n in work_names(names, listed) if owner[n.lower()][1] == index]
        cited_by = tuple(
            (citing, page if page is not None else _page_in(work, citing, parsed))
            for citing, page in zip(work.cited_by, work.pages(), strict=True)
        )
        stored.append(MissingWork(work.arxiv_id or None, work.title, tuple(kept), cited_by))
    return stored


def _page_in(work: OneWork, citing: str, parsed: dict[str, ParsedPaper]) -> int | None:
    """The first page on which `citing` cites the work by name and year, where its list's entry (by
    number) found no page."""
    if citing not in parsed:
        return None
    pages = [first_cited_page(parsed[citing], r) for c, r in work.entries if c == citing]
    return min((p for p in pages if p is not None), default=None)


def _merged(works: list[OneWork]) -> list[OneWork]:
    """An id-less work folded into the work with an id whose printed title ends with its title: the id's
    entries often print the authors into the title ("…, Clark, A., et al. Training compute-optimal…")."""
    squeezed = [squeeze(work.title) for work in works]
    merged = list(works)
    folded: set[int] = set()
    for index, work in enumerate(works):
        title = squeezed[index]
        if work.arxiv_id or len(title) < 20:
            continue
        home = next((i for i, w in enumerate(works) if w.arxiv_id and squeezed[i].endswith(title)), None)
        if home is None:
            continue
        into = merged[home]
        citing = tuple(dict.fromkeys((*into.cited_by, *work.cited_by)))
        merged[home] = replace(
            into, title=work.title, cited_by=citing, entries=(*into.entries, *work.entries)
        )
        folded.add(index)
    kept = [work for index, work in enumerate(merged) if index not in folded]
    return sorted(kept, key=lambda work: -len(work.cited_by))  # stable: ties keep suggest's order


def list_missing(papers: Sequence[IngestedPaper], cache_dir: Path) -> list[MissingWork]:
    """The missing works of the papers a build ingested, from their cached reference lists."""
    references = [cached_references(p.fetched, p.parsed, cache_dir) for p in papers]
    matcher = ReferenceMatcher(list_papers([p.meta for p in papers]))
    parsed = {p.meta.arxiv_id: p.parsed for p in papers}
    return site_missing_works(references, matcher, parsed, [p.meta.title for p in papers])


def missing_file_bytes(works: Sequence[MissingWork]) -> bytes:
    return missing_bytes(works)
