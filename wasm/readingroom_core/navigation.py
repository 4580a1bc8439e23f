"""Navigational queries: a query that names one paper of the list puts that paper first.

Researchers look papers up by name every minute: an arXiv id in any of its written forms
(`2106.09685v2`, `arXiv:2106.09685`, an abs or pdf URL, `hep-th/9901001`), a title pasted whole or in
part (quoted or not, with a typo or two), "Vaswani et al. 2017", an author with words of what the paper
does ("karpukhin dense retrieval", `navigation_words`), or a name the paper goes by ("LoRA", "BERT", and
what the list's other papers call it, "DPR", "FiD": `builder/list_names.py`). Passage ranking alone
puts other papers first for all of these, so the engine asks this module which paper, if any, the query
names, and shows that paper's opening passage first; the rest of the ranking stays as the search made it.

It reads only the per-paper table (ids, titles, authors, years and the short names the build derived
with `short_names` and from the list's citations), which is in memory from start-up. A query naming no
paper, or several equally, names none: a wrong paper first is worse than the search's own ranking.
"""

from __future__ import annotations

import math
import re
import sys
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

from readingroom_core.analysis import STOP_WORDS, bare_id, fold
from readingroom_core.formats.papers import PaperRecord
from readingroom_core.fusion import Fused
from readingroom_core.lru import LastResult
from readingroom_core.navigation_words import pick, split_query, topic_words
from readingroom_core.spelling import edit_distance

# New-style ids (2106.09685, 1301.3781), old-style ones (hep-th/9901001, math.gt/0309136), each with an
# optional version; the query is folded (lower case) before matching.
_ID_RE = re.compile(r"(?<![\w.])(\d{4}\.\d{4,5}|[a-z][a-z-]*(?:\.[a-z]{2})?/\d{7})(?:v\d+)?(?!\d)")
_WORD_RE = re.compile(r"[a-z0-9]+")
_URL_RE = re.compile(r"(?:https?://)?(?:www\.)?(?:export\.)?arxiv\.org/(?:abs|pdf)/|\.pdf\b")
# "Vaswani 2017", "Vaswani et al. 2017", "(Devlin et al., 2019)", "Lewis and Perez 2020", "Hu et al 2021a"
_AUTHOR_YEAR_RE = re.compile(
    r"\(?\s*(?P<names>[a-z][a-z' .&-]*?)(?P<etal>\s+et\.?\s+al\.?)?\s*,?\s*\(?(?P<year>(?:19|20)\d\d)[a-z]?\)?\s*\.?"
)
_AUTHOR_SPLIT_RE = re.compile(r"\s+(?:and|&)\s+|\s*&\s*")
_TRAILING_YEAR_RE = re.compile(r"\s*\(?((?:19|20)\d\d)\)?$")
# Words around a short name that do not change which paper it names ("the LoRA paper").
_FILLER = frozenset({"the", "paper", "arxiv", "pdf", "article"})
MIN_TITLE_WORDS = 3  # an unquoted query shorter than this is a topic, not a title
TITLE_QUERY_SHARE = 0.8  # of the query's words that must appear in the title, in order
TITLE_COVER_SHARE = 0.5  # of the title's words the query must cover
# A part of a title must hold four of its words or more ("large language models" is no part of "A
# Watermark for Large Language Models"; "Efficient Estimation of Word Representations" is one), and this
# share of its weight (its words' rarity among titles), so that it is not only its commonest words.
PART_WORDS, PART_WEIGHT_SHARE = 4, 0.4


@dataclass(frozen=True)
class Named:
    """The paper a query names (its index in the papers table) and how it named it."""

    paper: int
    how: str  # "bare id" (the query is an id alone) | "id" | "author-year" | "short name" | "title" | "author-topic"


def words(text: str) -> list[str]:
    """Folded (lower case, accents spelt in ASCII) alphanumeric words."""
    return _WORD_RE.findall(fold(text))


def name_key(text: str) -> str:
    """A short name as queries compare it: "Self-RAG", "self rag" and "SELFRAG" are one name."""
    return "".join(words(text))


def similar(typed: str, known: str) -> bool:
    """Equal, or one typo apart for words of five letters or more (two for ten or more)."""
    if typed == known:
        return True
    allowed = 0 if len(known) < 5 else 1 if len(known) < 10 else 2
    return allowed > 0 and edit_distance(typed, known, allowed) <= allowed


class PaperFinder:
    """Which paper a query names, over one site's papers table (built when the site opens, but for the
    author index: see `_authors`)."""

    def __init__(self, papers: Sequence[PaperRecord]) -> None:
        self._papers = papers
        self._by_id = {bare_id(paper.id): index for index, paper in enumerate(papers)}
        self._titles = [[sys.intern(word) for word in words(paper.title)] for paper in papers]
        title_index: dict[str, set[int]] = {}
        self._last: LastResult[str, Named | None] = LastResult()
        for index, title in enumerate(self._titles):
            for word in title:
                if word not in STOP_WORDS:
                    title_index.setdefault(word, set()).add(index)
        # each word's papers as an array, a fraction of what sets hold in the worker's heap (commit 7f00770)
        self._title_index = {word: array("I", sorted(owners)) for word, owners in title_index.items()}
        # how much a title word tells titles apart: "watermark" much, "language" and "models" little
        self._weight = {
            word: math.log((len(papers) + 1) / (len(owners) + 0.5))
            for word, owners in self._title_index.items()
        }
        claims: dict[str, set[int]] = {}
        for index, paper in enumerate(papers):
            for name in paper.short_names:
                claims.setdefault(name_key(name), set()).add(index)
        # a name two papers claim names neither
        self._short = {key: owners.pop() for key, owners in claims.items() if len(owners) == 1 and key}

    def find(self, query: str) -> Named | None:
        """The one paper `query` names, or None (at 10,000 papers 13 ms in CPython: kept for the runs of
        the step after the first, `lru.LastResult`; commit ed7197e)."""
        return self._last.get(query, lambda: self._find(query))

    def _find(self, query: str) -> Named | None:
        folded = fold(query).strip()
        for how, finder in (
            ("id", self._by_arxiv_id),
            ("author-year", self._by_author_year),
            ("short name", self._by_short_name),
            ("title", self._by_title),
            ("author-topic", self._by_author_topic),
        ):
            found = finder(folded)
            if found is not None:
                return Named(found, "bare id" if how == "id" and _bare_id(folded) else how)
        return None

    def _by_arxiv_id(self, folded: str) -> int | None:
        for match in _ID_RE.finditer(folded):
            found = self._by_id.get(match.group(1))
            if found is not None:
                return found
        return None

    def _by_author_year(self, folded: str) -> int | None:
        match = _AUTHOR_YEAR_RE.fullmatch(folded)
        if not match:
            return None
        names = [words(name) for name in _AUTHOR_SPLIT_RE.split(match.group("names").strip())]
        if not all(0 < len(name) <= 3 for name in names):
            return None
        year = int(match.group("year"))
        # "X et al." names the first author; a bare "X 2020" may name any. A year off by one is how
        # a conference year cites an arXiv year ("Devlin et al. 2019"), for a first author only.
        tries = [(0, True), (1, True)] + ([] if match.group("etal") else [(0, False)])
        for tolerance, first_author in tries:
            found = [
                i
                for i, paper in enumerate(self._papers)
                if paper.year
                and abs(paper.year - year) <= tolerance
                and self._has_authors(i, names, first_author)
            ]
            if found:
                return found[0] if len(found) == 1 else None
        return None

    @cached_property
    def _authors(self) -> list[list[list[str]]]:
        """Each paper's author names as folded words, made when a query first reads "X et al. 2020", not
        when the site opens, whose time they would lengthen (commit 7b13998). A name on several papers is
        one list: a reading list's authors recur, so shared lists hold a fraction of the words (commit
        7ba59f8)."""
        shared: dict[str, list[str]] = {}
        for paper in self._papers:
            for author in paper.authors:
                if author not in shared:
                    shared[author] = [sys.intern(word) for word in words(author)]
        return [[shared[author] for author in paper.authors] for paper in self._papers]

    def _has_authors(self, paper: int, names: list[list[str]], first_author: bool) -> bool:
        """Whether the paper's author list holds the names in that order (the first name first, when
        `first_author`); a name matches the end of an author's name ("dao", "tri dao", "de jong")."""
        authors = self._authors[paper]
        at = 0
        for position, name in enumerate(names):
            while at < len(authors) and not _ends_with(authors[at], name):
                if first_author and position == 0:
                    return False
                at += 1
            if at == len(authors):
                return False
            at += 1
        return True

    def _by_short_name(self, folded: str) -> int | None:
        year_match = _TRAILING_YEAR_RE.search(folded)
        text = folded[: year_match.start()] if year_match else folded
        kept = [word for word in words(text) if word not in _FILLER]
        if not kept or len(kept) > 4:
            return None
        key = "".join(kept)
        found = self._short.get(key)
        if found is None and len(key) >= 7:
            near = {paper for name, paper in self._short.items() if similar(key, name)}
            found = near.pop() if len(near) == 1 else None
        if found is not None and year_match:
            year = self._papers[found].year
            return found if year and abs(year - int(year_match.group(1))) <= 1 else None
        return found

    def _words_of(self, paper: int) -> list[str]:
        """A paper's title words and names, as a query's topic words are read against them."""
        return self._titles[paper] + self._names[paper]

    @cached_property
    def _names(self) -> list[list[str]]:
        return [[name_key(name) for name in paper.short_names] for paper in self._papers]

    def _by_author_topic(self, folded: str) -> int | None:
        """An author's surname (first or last) with topic words, and maybe a year (`navigation_words`):
        the papers that author wrote first, else wrote at all, and the words pick one of them."""
        split = split_query(words(folded))
        if split is None:
            return None
        typed, year = split
        for name, rest in ((typed[:1], typed[1:]), (typed[:2], typed[2:]), (typed[-1:], typed[:-1])):
            topic = topic_words(rest)
            if not topic or name[0] in STOP_WORDS or len(name[-1]) < 2:
                continue
            first, anywhere = self._surnames.get(name[-1], ((), ()))
            for first_author, papers in ((True, first), (False, anywhere)):
                candidates = [
                    i
                    for i in papers
                    if (year is None or abs((self._papers[i].year or 0) - year) <= 1)
                    and self._has_authors(i, [name], first_author)
                ]
                if candidates:
                    return pick(candidates, topic, self._words_of, self._weight, similar)
        return None

    @cached_property
    def _surnames(self) -> dict[str, tuple[list[int], list[int]]]:
        """Each surname's papers, those it wrote first and all, so that a query of a few words looks up
        its candidates instead of reading every author list (made at the first such query)."""
        index: dict[str, tuple[list[int], list[int]]] = {}
        for paper, authors in enumerate(self._authors):
            for position, author in enumerate(authors):
                if author:
                    first, anywhere = index.setdefault(author[-1], ([], []))
                    if position == 0:
                        first.append(paper)
                    if not anywhere or anywhere[-1] != paper:
                        anywhere.append(paper)
        return index

    def _by_title(self, folded: str) -> int | None:
        quoted = re.fullmatch(r"[\"\u201c\u201d'](.+)[\"\u201c\u201d']", folded)
        typed = words(quoted.group(1) if quoted else folded)
        if len(typed) < (2 if quoted else MIN_TITLE_WORDS):
            return None
        content = {word for word in typed if word not in STOP_WORDS}
        counts: dict[int, int] = {}
        for word in content:
            for paper in self._title_index.get(word, ()):
                counts[paper] = counts.get(paper, 0) + 1
        scored = []
        for paper, shared in counts.items():
            if shared * 2 >= len(content):
                score = title_match(typed, self._titles[paper], self._weight)
                if score is not None:
                    scored.append((score, paper))
        scored.sort(reverse=True)
        if not scored or (len(scored) > 1 and scored[1][0] == scored[0][0]):
            return None
        return scored[0][1]


def title_match(typed: list[str], title: list[str], weight: dict[str, float]) -> float | None:
    """How well the typed words read as (part of) the title, or None if they do not: most of them must
    appear in the title in order (a typo allowed per word), nearly contiguously, and cover at least half
    of its words and of its weight (its rarer words: "large language models" is no part-title of "A
    Watermark for Large Language Models"). The score grows with both shares, so a whole title beats the
    part it shares with another."""
    matched, first, last, covered = _aligned(typed, title)
    if matched < TITLE_QUERY_SHARE * len(typed) or matched < TITLE_COVER_SHARE * len(title):
        return None
    if last - first + 1 > matched + 2:  # scattered title words are a question, not a title
        return None
    title_weight = sum(weight.get(word, 0.0) for word in title)
    share = sum(weight.get(title[j], 0.0) for j in covered) / title_weight if title_weight else 1.0
    content = [j for j, word in enumerate(title) if word in weight]
    whole = all(j in covered for j in content)
    if not whole and (len(set(content) & set(covered)) < PART_WORDS or share < PART_WEIGHT_SHARE):
        return None
    return matched / len(typed) + share


def _aligned(typed: list[str], title: list[str]) -> tuple[int, int, int, tuple[int, ...]]:
    """(words matched in order, first and last title position matched, the title positions matched):
    a longest common subsequence under `similar`."""
    empty: tuple[int, ...] = ()
    rows = [[(0, -1, -1, empty)] * (len(title) + 1) for _ in range(len(typed) + 1)]
    for i, word in enumerate(typed, start=1):
        for j, known in enumerate(title, start=1):
            best = max(rows[i - 1][j], rows[i][j - 1], key=lambda cell: cell[0])
            if similar(word, known):
                count, first, _, covered = rows[i - 1][j - 1]
                diagonal = (count + 1, first if count else j - 1, j - 1, (*covered, j - 1))
                best = max(best, diagonal, key=lambda cell: cell[0])
            rows[i][j] = best
    return rows[-1][-1]


def _bare_id(folded: str) -> bool:
    """Whether the query is an id and nothing more: "2106.09685", "arXiv:2106.09685v2", an abs URL."""
    rest = _URL_RE.sub(" ", _ID_RE.sub(" ", folded))
    return not [word for word in words(rest) if word not in {"arxiv", "abs", "pdf"}]


def _ends_with(author: list[str], name: list[str]) -> bool:
    """Whether an author's name ends with `name`, the last word allowing one typo ("vaswanni")."""
    if len(name) > len(author):
        return False
    tail = author[len(author) - len(name) :]
    return tail[:-1] == name[:-1] and similar(name[-1], tail[-1])


# --- short names, derived once at build time --------------------------------------------------------

_HEAD_RE = re.compile(r"^([^:]{2,40}):\s")  # "LoRA: Low-Rank Adaptation …"
_COMMA_HEAD_RE = re.compile(r"^([^\s,:]{2,30}),\s")  # "DistilBERT, a distilled version of BERT …"
_SENTENCE_RE = re.compile(r"[^.!?]+")
_TOKEN_RE = re.compile(r"[A-Za-z0-9][\w-]*[\w]|[A-Za-z]")
_INTRODUCING = frozenset("propose introduce present call term dub name develop build release design".split())
_NAMING = frozenset("called named dubbed or".split())
ACRONYM_WINDOW = 12  # words from "we propose" to the (ACRONYM) it defines; later ones are background
_SKIPPED = frozenset(
    "a an the our this these resulting new simple novel model models method approach framework system "
    "technique family called named dubbed".split()
)


def short_names(title: str, abstract: str) -> tuple[str, ...]:
    """The names a paper gives itself: its title's head ("LoRA: …", "DistilBERT, a …") and the names
    its abstract introduces ("we propose XLNet", "… called BERT", "… Embeddings (HyDE)", "LoRA").

    Stored in the paper's record by the build; a name that two papers of a list claim names neither.
    """
    names: list[str] = []
    head = _HEAD_RE.match(title) or _COMMA_HEAD_RE.match(title)
    if head and _name_like_head(head.group(1)):
        names.append(head.group(1).strip())
    for sentence in _SENTENCE_RE.findall(abstract):
        names.extend(_introduced(sentence))
    return tuple(dict.fromkeys(name for name in names if len(name_key(name)) >= 2))


def _name_like_head(head: str) -> bool:
    """A title head that is a name ("LoRA", "Self-RAG", "Constitutional AI"), not a phrase
    ("Batch Normalization", "Train Short, Test Long")."""
    parts = head.split()
    if len(parts) == 1:
        return True
    return len(parts) <= 3 and "," not in head and any(_name_like(part) for part in parts)


def _name_like(token: str) -> bool:
    """A coined name: a part with capitals past its first letter ("XLNet", "LoRA", "vLLM", "BERT",
    "GPT-3"), not a capitalised word or compound ("Low-Rank", "In-Context")."""
    if re.fullmatch(r"[A-Z]{2,}s", token):
        return False  # a plural ("LLMs") is a kind of thing, not a name
    return any(len(part) >= 2 and any(c.isupper() for c in part[1:]) for part in token.split("-"))


def _introduced(sentence: str) -> list[str]:
    """Names a sentence of an abstract introduces, when "we" introduce something in it ("we propose",
    "we call", …): the name right after the verb (skipping "a new model"), after "called", "named",
    "dubbed" or ", or", or an acronym in parentheses spelling the initials of the words before it."""
    tokens = _TOKEN_RE.findall(sentence)
    lowered = [token.lower() for token in tokens]
    verbs = [
        i for i, word in enumerate(lowered) if _is_introducing(word) and "we" in lowered[max(0, i - 3) : i]
    ]
    if not verbs:
        return []
    found = []
    for i, word in enumerate(lowered[verbs[0] :], start=verbs[0]):
        if i in verbs or word in _NAMING:
            after = i + 1
            while after < len(tokens) and lowered[after] in _SKIPPED:
                after += 1
            if after < len(tokens) and _name_like(tokens[after]):
                found.append(tokens[after])
    for match in re.finditer(r"\(([A-Za-z][\w-]{1,15})\)", sentence):
        before = sentence[: match.start()]
        near_verb = len(_TOKEN_RE.findall(before)) - verbs[0] <= ACRONYM_WINDOW
        if near_verb and _spells_initials(match.group(1), before):
            found.append(match.group(1))
    return found


def _is_introducing(word: str) -> bool:
    return (
        word in _INTRODUCING
        or word.removesuffix("d") in _INTRODUCING
        or word.removesuffix("ed") in _INTRODUCING
    )


def _spells_initials(acronym: str, before: str) -> bool:
    """Whether the acronym's capitals are the initials of the words right before it:
    "Hypothetical Document Embeddings (HyDE)", "Chain-of-Verification (CoVe)"."""
    capitals = [c.lower() for c in acronym if c.isupper()]
    if len(capitals) < 2:
        return False
    initials = [part[0].lower() for part in re.split(r"[\s-]+", before.strip()) if part][-len(capitals) - 3 :]
    at = 0
    for initial in initials:
        if at < len(capitals) and initial == capitals[at]:
            at += 1
    return at == len(capitals) and initials[-1] == capitals[-1]


def named_first(top: list[Fused], fused: Sequence[Fused], opening: int, k: int) -> list[Fused]:
    """The ranking with the named paper's opening passage first and the rest in their order (the last
    one dropped when the opening was not among the top `k`)."""
    first = next((result for result in fused if result.doc_id == opening), None)
    if first is None:
        first = Fused(opening, 0.0, dict.fromkeys(top[0].ranks if top else ("bm25", "dense")))
    return [first, *(result for result in top if result.doc_id != opening)][:k]
