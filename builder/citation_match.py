"""Which paper of the reading list a reference entry names, if any.

Three ways, tried in order, each stricter about what it accepts than the one before it is tolerant:
1. an arXiv id in the entry (`arXiv:1706.03762`, `abs/1706.03762`, old-style ids): the entry names
   exactly the list papers whose ids it prints, and an entry that prints only other ids names none;
2. the paper's title inside the entry, both squeezed to lower-case letters and digits (so line breaks,
   hyphenation, case, accents and "&"/"and" no longer matter); a short title, or only the part before
   or after its colon, counts only with the first author's surname;
3. the first author's surname as the entry's first author, a year of the paper (first version, this
   version, or the year after the first: the conference year), and most of the title's words.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from builder.references import Reference, entry_year, first_surname

SHORT_TITLE = 16  # squeezed characters: a title shorter than this must come with its first author
# A title (or a part of one) is looked up by its first ANCHOR squeezed characters at every position of an
# entry, then checked whole: testing every title against every entry took hours at 10,000 papers
# (~500,000 entries), as the list grew twice over.
ANCHOR = 8
TITLE_WORDS_NEEDED = 0.6  # author-year: the share of the title's content words the entry must hold
_STOPWORDS = frozenset(
    "a an and are as at by for from in into is of on or the to via with without towards toward what how "
    "do does can we our you your its their using use based".split()
)
_REWRITES = (
    (re.compile(r"&"), " and "),
    (re.compile(r"\bvs\.?(?=\s)"), "versus"),
    (re.compile(r"\bw/"), "with "),
)


def fold(text: str) -> str:
    """Lower case without accents: "Rozière" → "roziere"."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).lower()


def squeeze(text: str) -> str:
    """Only the letters and digits, folded: how a title survives line breaks and hyphenation."""
    folded = fold(text)
    for pattern, replacement in _REWRITES:
        folded = pattern.sub(replacement, folded)
    return re.sub(r"[^a-z0-9]+", "", folded)


def title_words(text: str) -> frozenset[str]:
    """A title's content words, hyphenated words split: "Pre-training of Deep…" → {pre, training, deep…}."""
    return frozenset(w for w in re.findall(r"[a-z0-9]+", fold(text)) if len(w) > 2 and w not in _STOPWORDS)


@dataclass(frozen=True)
class ListPaper:
    """What matching needs of a paper of the reading list."""

    arxiv_id: str
    title: str
    surname: str  # the first author's, folded
    years: frozenset[str]

    @classmethod
    def of(cls, arxiv_id: str, title: str, authors: Sequence[str], dates: Iterable[str]) -> ListPaper:
        """`dates`: ISO dates of the paper (first version, this version…); the year after the first
        counts too, as papers are often cited by their conference year."""
        years = {date[:4] for date in dates if date[:4].isdigit()}
        if years:
            years.add(str(int(min(years)) + 1))
        surname = fold(authors[0].split()[-1]) if authors and authors[0].split() else ""
        return cls(arxiv_id, title, surname, frozenset(years))


@dataclass(frozen=True)
class Match:
    """A reference entry that names a list paper, and which rule said so ("id", "title", "author-year")."""

    arxiv_id: str
    how: str


class ReferenceMatcher:
    """Matches reference entries against the papers of one reading list."""

    def __init__(self, papers: Sequence[ListPaper]):
        self.papers = list(papers)
        self.by_id = {paper.arxiv_id: paper for paper in self.papers}
        self.titles = [(paper, squeeze(paper.title), _title_parts(paper.title)) for paper in self.papers]
        self.words = {paper.arxiv_id: title_words(paper.title) for paper in self.papers}
        self.anchored: dict[str, list[int]] = {}  # a title's or part's first ANCHOR characters -> titles
        self.short: list[int] = []  # titles too short to anchor (and so without parts): tried on every entry
        for number, (_, title, parts) in enumerate(self.titles):
            if 0 < len(title) < ANCHOR:
                self.short.append(number)
            for anchor in {text[:ANCHOR] for text in (title, *parts) if len(text) >= ANCHOR}:
                self.anchored.setdefault(anchor, []).append(number)
        self.by_surname: dict[str, list[ListPaper]] = {}
        for paper in self.papers:
            self.by_surname.setdefault(paper.surname, []).append(paper)

    def match(self, reference: Reference, citing: str = "") -> list[Match]:
        """The list papers the entry names (never `citing` itself), by the first rule that decides."""
        if reference.arxiv_ids:
            named = [i for i in reference.arxiv_ids if i in self.by_id and i != citing]
            return [Match(i, "id") for i in named]
        entry = squeeze(reference.text)
        surname = fold(first_surname(reference.text))
        by_title = [
            Match(paper.arxiv_id, "title")
            for paper, title, parts in (self.titles[number] for number in self._title_candidates(entry))
            if paper.arxiv_id != citing and _title_in(entry, title, parts, surname == paper.surname)
        ]
        if by_title:
            return by_title
        return [Match(i, "author-year") for i in self._by_author_year(reference, surname, citing)]

    def _title_candidates(self, entry: str) -> list[int]:
        """The titles (numbers, in list order) whose anchor the entry holds: every title it may name."""
        found = set(self.short)
        for start in range(len(entry) - ANCHOR + 1):
            found.update(self.anchored.get(entry[start : start + ANCHOR], ()))
        return sorted(found)

    def _by_author_year(self, reference: Reference, surname: str, citing: str) -> list[str]:
        year = entry_year(reference.text)
        if not surname or not year:
            return []
        words = title_words(reference.text)
        found = []
        for paper in self.by_surname.get(surname, ()):
            wanted = self.words[paper.arxiv_id]
            if paper.arxiv_id == citing or year not in paper.years:
                continue
            if len(wanted) >= 2 and len(wanted & words) >= TITLE_WORDS_NEEDED * len(wanted):
                found.append(paper.arxiv_id)
        return found


def _title_parts(title: str) -> tuple[str, ...]:
    """The parts of a title around its colon or dash ("REALM: Retrieval-Augmented Language Model
    Pre-Training"), where a part is a phrase of its own: references often drop one of them."""
    parts = re.split(r"\s*[:–—]\s+|\s+-\s+", title, maxsplit=1)
    if len(parts) < 2:
        return ()
    return tuple(
        squeeze(part) for part in parts if len(part.split()) >= 3 and len(squeeze(part)) >= SHORT_TITLE
    )


def _title_in(entry: str, title: str, parts: tuple[str, ...], same_author: bool) -> bool:
    """The whole title (a short one only with its first author), or a part of it with its first author."""
    if title and title in entry and (len(title) >= SHORT_TITLE or same_author):
        return True
    return same_author and any(part in entry for part in parts)
