"""The names a reading list's papers call each other by, mined at build time for navigation.

A community name ("DPR", "FiD", "RETRO", "TAS-B") is rarely in the named paper's title or abstract,
but the list's other papers write it right beside their citation of it: "(DPR; Karpukhin et al.,
2020)", "RETRO (Borgeaud et al., 2022)", "TAS-B [23]", "Fusion-in-Decoder (FiD) [12]". The build
already matches every parsed reference to the list (`citation_match`) and knows where the body cites
it, so this module reads the word written just before each such citation, and the names a paper gives
its own method in its body ("we refer to it as Fusion-in-Decoder", "abbreviated to MemN2N").

A name is kept for the paper that most citing papers use it for, and only where that use dominates
(a name written for several papers, "RLHF", names none clearly), where it reads as a coined name, not
a word, and, said only once, where its case is mixed ("FiD", not "LLM"). Each paper keeps the few
names the most papers use (`MAX_LIST_NAMES`); they are stored with its short names in the paper table
(`formats.papers`), which is all navigation reads.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from builder.citation_graph import list_papers
from builder.citation_match import ReferenceMatcher
from builder.models import IngestedPaper, ParsedPaper
from builder.references import (
    PaperReferences,
    Reference,
    _covers,
    cached_references,
    entry_year,
    first_surname,
    references_span,
)
from readingroom_core.analysis import STOP_WORDS
from readingroom_core.formats.papers import PaperRecord
from readingroom_core.navigation import name_key

MAX_LIST_NAMES = 6  # per paper, the most used first: enough for its name, acronym and spellings
DOMINANCE = 2  # a name's papers for one paper must be this many times its papers for all others
# of the list's papers that write a name, the share that write it for the paper it names: a dataset or
# a generic term written beside a citation now and then ("SQuAD", 21 papers) is no paper's name
NAMING_SHARE = 0.2
_TOKEN = r"[A-Za-z][\w\-]*\w|[A-Za-z]\d"
_GROUP = re.compile(r"\[(\d{1,4}(?:\s*[,;–-]\s*\d{1,4})*)\]")
# the name before a citation: "(DPR; Karpukhin", "[RETRO, Borgeaud", "FiD [12]", "RETRO (Borgeaud",
# "Fusion-in-Decoder (FiD) [12]"
_INSIDE = re.compile(rf"[(\[]\s*({_TOKEN})\s*[;,]\s*(?:e\.g\.,?\s*|see\s+)?$")
_BEFORE = re.compile(
    rf"(?<![\w-])({_TOKEN})\)?(?:\s+(?:models?|method|approach|architecture|system)(?:\s+(?:of|by|from|in))?)?"
    rf"\s*[(\[]?\s*$"
)
# a paper naming its own method in its body
_OWN = re.compile(
    rf"\b(?:[Ww]e\s+(?:call|term|dub|name)\s+(?:this|it|them|our\s+\w+(?:\s+\w+)?)\s+(?:as\s+)?"
    rf"|[Ww]e\s+refer\s+to\s+(?:it|this|them|our\s+\w+(?:\s+\w+)?)\s+as\s+|abbreviated\s+(?:to|as)\s+)"
    rf"(?:the\s+)?({_TOKEN})"
)
# a model size or depth after a name ("BERT-base", "LLaMA-13B", "ResNet-101") is the same name
_SIZE = re.compile(r"(?:-(?:base|large|small|tiny|mini|xl|xxl|\d+(?:\.\d+)?[bmk]|\d{2,}))+$", re.IGNORECASE)


def list_names(
    bodies: Mapping[str, str],
    references: Sequence[PaperReferences],
    matcher: ReferenceMatcher,
    titles: Mapping[str, str],
) -> dict[str, tuple[str, ...]]:
    """Each paper's names as the list writes them, the most used first (papers with none are absent).
    `bodies`: each paper's text but its reference list (`body_of`); `titles`: each paper's title."""
    title_words = {arxiv_id: set(re.findall(r"\w+", title.lower())) for arxiv_id, title in titles.items()}
    uses: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    spelt: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for paper in references:
        body = " ".join(bodies.get(paper.arxiv_id, "").split())
        for reference in paper.references:
            matched = matcher.match(reference, citing=paper.arxiv_id)
            if len(matched) != 1 or matched[0].arxiv_id == paper.arxiv_id:
                continue
            cited = matched[0].arxiv_id
            for name in _names_at_citations(body, reference, title_words.get(cited, set())):
                uses[name_key(name)][cited].add(paper.arxiv_id)
                spelt[name_key(name)][name] += 1
        for name in _own_names(body):
            uses[name_key(name)][paper.arxiv_id].add(paper.arxiv_id)
            spelt[name_key(name)][name] += 1
    written = [set(re.findall(_TOKEN, body)) for body in bodies.values()]
    named: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for key, papers in uses.items():
        ranked = sorted(papers.items(), key=lambda item: (-len(item[1]), item[0]))
        owner, users = ranked[0]
        others = sum(len(citing) for _, citing in ranked[1:])
        name = max(spelt[key].items(), key=lambda item: (item[1], item[0]))[0]
        mentions = sum(any(spelling in tokens for spelling in spelt[key]) for tokens in written)
        clear = len(users) >= 2 or _said_once_clearly(name)
        if clear and len(users) >= DOMINANCE * others and len(users) >= NAMING_SHARE * mentions:
            named[owner].append((len(users), name))
    return {
        arxiv_id: tuple(
            name for _, name in sorted(found, key=lambda item: (-item[0], item[1]))[:MAX_LIST_NAMES]
        )
        for arxiv_id, found in named.items()
    }


def body_of(parsed: ParsedPaper) -> str:
    """A paper's text but its reference list: appendices cite too ("monoT5 (Nogueira et al., 2020)")."""
    span = references_span(parsed)
    return parsed.text[: span[0]] + "\n\n" + parsed.text[span[1] :] if span else parsed.text


def _names_at_citations(body: str, reference: Reference, title_words: set[str]) -> list[str]:
    """The names written just before each place the body cites `reference` alone: coined ones, or a
    capitalised word of the cited title ("Mixtral models [17]" for "Mixtral of Experts")."""
    found = []
    for start in _citation_starts(body, reference):
        before = body[max(0, start - 50) : start]
        match = _INSIDE.search(before) or _BEFORE.search(before)
        if match:
            name = _SIZE.sub("", match[1])
            titled = name[:1].isupper() and len(name) >= 4 and name.lower() in title_words - STOP_WORDS
            if coined(name) or titled:
                found.append(name)
    return found


def _citation_starts(body: str, reference: Reference) -> list[int]:
    """Where the body cites the reference: "[12]" on its own (a group "[3, 12]" names no one paper), or
    its first author and year ("Karpukhin et al., 2020", "Izacard and Grave 2021")."""
    if reference.label:
        number = int(reference.label)
        return [
            match.start()
            for match in _GROUP.finditer(body)
            if re.fullmatch(r"\d+(?:\s*[–-]\s*\d+)?", match[1]) and _covers(match[1], number)
        ]
    surname, year = first_surname(reference.text), entry_year(reference.text)
    if not surname or not year:
        return []
    pattern = rf"\b{re.escape(surname)}\b(?:\s+et\s+al\.?|\s+(?:and|&)\s+[^\W\d][\w'’-]+)?,?\s*\(?{year}"
    return [match.start() for match in re.finditer(pattern, body)]


def _own_names(body: str) -> list[str]:
    """The names a paper gives its method in its body; a hyphenated name of capitalised parts counts
    here ("Fusion-in-Decoder"), since the paper itself says it is a name."""
    names = []
    for match in _OWN.finditer(body):
        name = match[1]
        capitalised = sum(part[:1].isupper() for part in name.split("-"))
        if coined(name) or ("-" in name and capitalised >= 2):
            names.append(name)
    return list(dict.fromkeys(names))


def coined(token: str) -> bool:
    """A coined name, not a word: capitals past its first letter ("FiD", "RETRO", "TAS-B", "vLLM"), or
    a capital with digits ("E5", "T5"); never a plural ("LLMs") or a stop word."""
    if len(name_key(token)) < 2 or token.lower() in STOP_WORDS or re.fullmatch(r"[A-Z]{2,}s", token):
        return False
    if any(len(part) >= 2 and any(c.isupper() for c in part[1:]) for part in token.split("-")):
        return True
    return token[0].isupper() and any(c.isdigit() for c in token) and any(c.isalpha() for c in token)


def _said_once_clearly(name: str) -> bool:
    """Lower and upper case letters both, not ending in a digit ("FiD", "BiDAF"): a name only one paper writes
    is trusted only so, since capitals near a citation are as often a generic term ("LLM", "BN", "T0")
    and a closing number a variant of another model ("Llama2", "vLLM1"; "docT5query" is a name)."""
    letters = [c for c in name if c.isalpha()]
    mixed = any(c.islower() for c in letters) and any(c.isupper() for c in letters)
    return mixed and not name[-1].isdigit()


def paper_names(papers: Sequence[IngestedPaper], cache_dir: Path) -> dict[str, tuple[str, ...]]:
    """`list_names` of the papers a build ingested, their reference entries read from the cache."""
    references = [cached_references(p.fetched, p.parsed, cache_dir) for p in papers]
    matcher = ReferenceMatcher(list_papers([p.meta for p in papers]))
    bodies = {p.meta.arxiv_id: body_of(p.parsed) for p in papers}
    return list_names(bodies, references, matcher, {p.meta.arxiv_id: p.meta.title for p in papers})


def with_list_names(
    records: Sequence[PaperRecord], names: Mapping[str, tuple[str, ...]]
) -> list[PaperRecord]:
    """The records with the list's names for each paper after the names it gives itself (one spelling
    of a name each), which is where navigation reads a paper's names."""
    named = []
    for record in records:
        own = {name_key(name) for name in record.short_names}
        extra = tuple(name for name in names.get(record.id, ()) if name_key(name) not in own)
        named.append(replace(record, short_names=record.short_names + extra) if extra else record)
    return named
