"""What the reading list is missing: the works its papers cite most that are not on it.

Reference entries that name no list paper are grouped into works: by the arXiv id an entry prints,
else by its title (the entry's segment after the authors and year, squeezed to letters and digits, so
"Attention is all you need" and "Attention Is All You Need." are one work); an id-less entry joins the
id of another entry with the same title. A work counts each citing paper once.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from builder.citation_match import ReferenceMatcher, squeeze
from builder.references import PaperReferences, Reference

MIN_TITLE = 12  # squeezed characters: a shorter guess ("Preprint", "Technical report") groups nothing
_LABEL = re.compile(r"^\s*\[[^\]]{1,60}\]\s*")
_QUOTED = re.compile(r"[“\"]([^”\"]{12,300})[”\"]")
# A sentence ends at a full stop that is not an initial ("J. Devlin") and is followed by a space.
_SENTENCE_END = re.compile(r"(?<![\s.\-][A-Z])(?<!^[A-Z])(?<!\bet al)\.\s+")
_YEAR_ONLY = re.compile(r"^\(?\d{4}[a-z]?\)?$")
_VENUE = re.compile(
    r"^(?:in\b|arxiv|corr\b|advances in|proceedings|journal|transactions|url\b|https?:|doi|tmlr|preprint|"
    r"technical report|openreview|\w+ preprint)",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class MissingWork:
    """A work cited by papers of the list and not on it: its arXiv id where an entry gives one, its
    title as the entries print it, one entry as printed, and the list papers citing it."""

    arxiv_id: str
    title: str
    reference: str
    cited_by: tuple[str, ...]
    entries: tuple[tuple[str, Reference], ...] = ()  # (citing paper, its entry) for every entry grouped

    def pages(self) -> tuple[int | None, ...]:
        """The first page on which each citing paper (as `cited_by`) cites the work, where found."""
        first: dict[str, int | None] = {}
        for citing, reference in self.entries:
            page, known = reference.cited_on, first.get(citing)
            if citing not in first or (page is not None and (known is None or page < known)):
                first[citing] = page
        return tuple(first.get(citing) for citing in self.cited_by)

    def to_json(self) -> dict:
        return {
            "arxiv_id": self.arxiv_id or None,
            "cited_by_count": len(self.cited_by),
            "cited_by": list(self.cited_by),
            "title": self.title,
            "reference": self.reference,
        }


def entry_title(text: str) -> str:
    """The entry's title as printed: a quoted phrase, else the first sentence after the authors that is
    neither a year standing alone ("Devlin et al. 2019. BERT: …") nor a venue ("In Proc. …")."""
    text = _LABEL.sub("", text)
    quoted = _QUOTED.search(text)
    if quoted:
        return quoted[1].strip(" ,.")
    sentences = [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]
    titles = [s for s in sentences[1:] if not _YEAR_ONLY.match(s) and not _VENUE.match(s)]
    return titles[0].rstrip(".") if titles else ""


@dataclass
class _Work:
    arxiv_id: str
    titles: list[str]
    reference: str
    citing: list[str]
    entries: list[tuple[str, Reference]]

    @property
    def title(self) -> str:
        """The title most of its entries print (the first of equals)."""
        named = [title for title in self.titles if title]
        return max(named, key=named.count) if named else ""


def missing_works(
    references: Sequence[PaperReferences], matcher: ReferenceMatcher, min_citing: int = 2
) -> list[MissingWork]:
    """The works not on the list cited by at least `min_citing` papers of it, most cited first."""
    unmatched = [
        (paper.arxiv_id, reference)
        for paper in references
        for reference in paper.references
        if not matcher.match(reference, citing=paper.arxiv_id) and not _names_listed(reference, matcher)
    ]
    id_of_title = {
        squeeze(entry_title(r.text)): r.arxiv_ids[0]
        for _, r in unmatched
        if r.arxiv_ids and entry_title(r.text)
    }
    works: dict[str, _Work] = {}
    for citing, reference in unmatched:
        title = entry_title(reference.text)
        key = _work_key(reference, squeeze(title), id_of_title)
        if not key:
            continue
        arxiv_id = "" if key.startswith("title:") else key
        work = works.setdefault(key, _Work(arxiv_id, [], reference.text, [], []))
        work.titles.append(title)
        work.entries.append((citing, reference))
        if citing not in work.citing:
            work.citing.append(citing)
    kept = [w for w in works.values() if len(w.citing) >= min_citing]
    kept.sort(key=lambda w: (-len(w.citing), w.arxiv_id or "~", squeeze(w.title)))
    return [MissingWork(w.arxiv_id, w.title, w.reference, tuple(w.citing), tuple(w.entries)) for w in kept]


def _names_listed(reference: Reference, matcher: ReferenceMatcher) -> bool:
    """An entry that prints the id of a list paper is that paper's (the citing paper's own, say)."""
    return any(arxiv_id in matcher.by_id for arxiv_id in reference.arxiv_ids)


def _work_key(reference: Reference, title: str, id_of_title: dict[str, str]) -> str:
    if reference.arxiv_ids:
        return reference.arxiv_ids[0]
    if title in id_of_title:
        return id_of_title[title]
    return f"title:{title}" if len(title) >= MIN_TITLE else ""
