"""The search page's landing state: what a visitor meets before typing anything.

Example questions and searches are drawn from the list itself (its papers' short names, the phrases
its titles share, its tags and its most frequent author) and each is run through the core's own search
on the site being built before it is shown, so that no example is dead: a question must bring up the
paper it was drawn from, a search must return passages. The check is the keyword side (the build has
no query vector), and the site's hybrid search returns what that side finds and more. The draw depends
on the list alone (no randomness), so a build of the same list shows the same page.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from readingroom_core.analysis import STOP_WORDS, fold
from readingroom_core.browser import open_site
from readingroom_core.engine import Hit
from readingroom_core.formats.manifest import Manifest, manifest_bytes
from readingroom_core.formats.papers import PaperRecord
from readingroom_core.options import SearchOptions
from readingroom_core.ranges import folder_reader

QUESTIONS = 3
SEARCHES = 3
RECENT = 5
MOST_CITED = 5
CHECK_K = 10  # a question's own paper must be among this many passages
QUESTION_TRIES = 24  # questions searched at most: a render of a 10,000-paper list stays quick
# Questions about a paper by its own name; each candidate takes the next form, so the examples differ.
QUESTION_FORMS = ("How does {} work?", "What problem does {} solve?", "How is {} evaluated?")
TITLE_HEAD_WORDS = 3
_BREAK_RE = re.compile(r"[:;,.!?()\[\]]")
_WORD_RE = re.compile(r"[a-z][a-z-]+")

Search = Callable[[str], Sequence[Hit]]


@dataclass(frozen=True)
class Example:
    query: str
    why: str  # what it shows the visitor ("a paper's short name", "a tag filter"…)


@dataclass(frozen=True)
class Landing:
    questions: tuple[Example, ...]
    searches: tuple[Example, ...]
    recent: tuple[PaperRecord, ...]
    most_cited: tuple[tuple[PaperRecord, int], ...]
    years: tuple[int, int] | None
    tags: tuple[tuple[str, int], ...]


def landing(papers: Sequence[PaperRecord], cited: dict[str, int], search: Search) -> Landing:
    """The landing state of a list: its examples (each checked with `search`), its last-added papers
    (the reading list's last entries: `add` appends) and its most cited papers within the list."""
    ranked = sorted(range(len(papers)), key=lambda n: (-cited.get(papers[n].id, 0), n))
    years = sorted(p.year for p in papers if p.year)
    tags = Counter(tag for paper in papers for tag in paper.tags)
    return Landing(
        questions=tuple(example_questions([papers[n] for n in ranked], search)),
        searches=tuple(example_searches(papers, tags, search)),
        recent=tuple(reversed(papers[-RECENT:])),
        most_cited=tuple(
            (papers[n], cited[papers[n].id]) for n in ranked[:MOST_CITED] if cited.get(papers[n].id)
        ),
        years=(years[0], years[-1]) if years else None,
        tags=tuple(sorted(tags.items(), key=lambda item: (-item[1], item[0]))),
    )


def example_questions(papers: Sequence[PaperRecord], search: Search) -> list[Example]:
    """Questions naming papers by their short names (or the short head of a "Name: subtitle" title),
    most cited first, kept where the search brings up the paper named."""
    found: list[Example] = []
    seen: set[str] = set()
    tries = 0
    for paper in papers:
        if tries == QUESTION_TRIES:
            break
        name = next(
            (n for n in (*paper.short_names, _title_head(paper.title)) if n and fold(n) not in seen), None
        )
        if name is None:
            continue
        question = QUESTION_FORMS[len(found) % len(QUESTION_FORMS)].format(name)
        tries += 1
        if any(hit.arxiv_id == paper.id for hit in search(question)[:CHECK_K]):
            seen.add(fold(name))
            found.append(Example(question, f"about {name} (arXiv:{paper.id})"))
        if len(found) == QUESTIONS:
            break
    return found


def _title_head(title: str) -> str:
    """ "Grouped-Query Attention" of "Grouped-Query Attention: Sharing Key-Value Heads…": a name."""
    head, colon, _ = title.partition(":")
    return head.strip() if colon and 0 < len(head.split()) <= TITLE_HEAD_WORDS else ""


def example_searches(papers: Sequence[PaperRecord], tags: Counter[str], search: Search) -> list[Example]:
    """A phrase the titles share, a tag filter, an author: the search syntax by example, each kept
    where it returns passages."""
    candidates = [*_phrases(papers), *_tag_searches(tags), *_author_searches(papers)]
    found: list[Example] = []
    kinds: set[str] = set()
    for example in candidates:
        if example.why in kinds:
            continue
        if search(example.query):
            kinds.add(example.why)
            found.append(example)
        if len(found) == SEARCHES:
            break
    return found


def _phrases(papers: Sequence[PaperRecord]) -> list[Example]:
    """Two-word title phrases that no stop word breaks, those most titles share first."""
    counts: Counter[str] = Counter()
    for paper in papers:
        pairs = set()
        for part in _BREAK_RE.split(fold(paper.title)):  # no phrase across a colon or a comma
            words = _WORD_RE.findall(part)
            pairs |= {f"{a} {b}" for a, b in zip(words, words[1:], strict=False) if not {a, b} & STOP_WORDS}
        counts.update(pairs)
    shared = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return [Example(f'"{phrase}"', "an exact phrase") for phrase, _ in shared[:3]]


def _tag_searches(tags: Counter[str]) -> list[Example]:
    return [
        Example(f"tag:{tag}", "a tag filter")
        for tag, _ in sorted(tags.items(), key=lambda t: (-t[1], t[0]))[:3]
    ]


def _author_searches(papers: Sequence[PaperRecord]) -> list[Example]:
    """The surnames that sign the most papers of the list (ties by name)."""
    surnames: Counter[str] = Counter()
    for paper in papers:
        surnames.update({_surname(author) for author in paper.authors if _surname(author)})
    ranked = sorted(surnames.items(), key=lambda item: (-item[1], item[0]))
    return [Example(f"author:{name}", "an author") for name, _ in ranked[:3]]


def _surname(author: str) -> str:
    parts = _WORD_RE.findall(fold(author))
    return parts[-1] if parts else ""


def keyword_search(out_dir: Path, manifest: Manifest) -> Search:
    """The core's keyword search on the site in `out_dir` (its manifest not yet on disk)."""
    site = open_site(folder_reader(out_dir), manifest_bytes(manifest))
    options = SearchOptions(k=CHECK_K, mode="bm25")
    return lambda query: site.engine.search(query, None, options)
