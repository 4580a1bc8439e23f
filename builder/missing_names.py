"""The names by which the list's papers call a work they cite: "Chinchilla (Hoffmann et al., 2022)",
"SQuAD [12]". A visitor searches for a work by such a name far more often than by its title, which may
not hold it ("Training compute-optimal large language models").

A name is the one word right before a citation of the entry (only a space or an opening bracket
between), when it reads as a name: capitalised or with an inner capital or digit ("PaLM", "T5",
"GPT-4"), not a word that opens sentences or points into the paper ("The", "Table"). Conservative on
purpose, since a visitor's query is matched against these names: a name must be used at least twice
(by two papers, or twice in one), and never a word of a list paper's title (a name like "Transformer"
would claim every query about the list's own subject).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence

from builder.models import ParsedPaper
from builder.references import Reference, entry_year, first_surname, references_span

MIN_USES = 2
MAX_NAMES = 3  # per work, most used first
_NAME = re.compile(r"(?:[A-Z][\w\-.]*[A-Za-z0-9]|[a-z]+[A-Z0-9][\w\-]*)$")
_BEFORE = re.compile(r"([\w\-.]+)[ \t]*\(?$")
_NOT_NAMES = frozenset(
    """The This That These Those Our We In On For From With By As An And Or But Table Figure Fig Section
    Sec Eq Equation Appendix See Following Recently Previous Prior Work Works Models Model Methods Method
    Approaches Approach Datasets Dataset Benchmarks Benchmark Similarly However Also Like Such Unlike
    Both Here There It Its Et Al QA Questions""".split()
)


def _mentions(body: str, reference: Reference) -> list[int]:
    """Every offset where the body cites `reference`: its "[12]" (also inside "[3, 12]"), and its first
    author's surname followed by its year within a few words (a numbered list's papers name authors too)."""
    found = []
    if reference.label:
        number = int(reference.label)
        for match in re.finditer(r"\[(\d{1,4}(?:\s*[,;–-]\s*\d{1,4})*)\]", body):
            parts = re.split(r"\s*[,;]\s*", match[1])
            if any(_covers(part, number) for part in parts):
                found.append(match.start())
    surname, year = first_surname(reference.text), entry_year(reference.text)
    if surname and year:
        pattern = rf"\b{re.escape(surname)}\b[^()\[\]]{{0,40}}?\(?{year}"
        found += [match.start() for match in re.finditer(pattern, body)]
    return found


def _covers(part: str, number: int) -> bool:
    bounds = re.split(r"\s*[–-]\s*", part)
    return all(b.isdigit() for b in bounds) and int(bounds[0]) <= number <= int(bounds[-1])


def name_before(body: str, at: int) -> str:
    """The word right before offset `at` when it reads as a name, else ""."""
    before = _BEFORE.search(body[max(0, at - 60) : at])
    if not before:
        return ""
    word = before[1].rstrip(".")
    if len(word) < 2 or word in _NOT_NAMES or not _NAME.match(word) or word.isdigit():
        return ""
    return word


def reference_names(parsed: ParsedPaper, reference: Reference) -> list[str]:
    """The names `parsed`'s body gives `reference` where it cites it, once per citation."""
    span = references_span(parsed)
    body = parsed.text[: span[0]] if span else parsed.text
    return [name for at in _mentions(body, reference) if (name := name_before(body, at))]


def first_cited_page(parsed: ParsedPaper, reference: Reference) -> int | None:
    """The page of the body's first citation of `reference` by either form (the reference list's own
    `cited_on` looks for a numbered entry's number only)."""
    span = references_span(parsed)
    body = parsed.text[: span[0]] if span else parsed.text
    found = _mentions(body, reference)
    return parsed.page_at(min(found)) if found else None


def title_words(titles: Iterable[str]) -> frozenset[str]:
    """The lowercased words of the list's own titles, which no missing work may be named by."""
    return frozenset(word.lower() for title in titles for word in re.findall(r"\w+", title))


def work_names(uses: Sequence[str], listed_words: frozenset[str]) -> list[str]:
    """The names used at least MIN_USES times (case as most often written), most used first."""
    counts = Counter(name.lower() for name in uses)
    spelled: dict[str, Counter[str]] = {}
    for name in uses:
        spelled.setdefault(name.lower(), Counter())[name] += 1
    kept = [
        key
        for key, count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        if count >= MIN_USES and key not in listed_words
    ]
    return [spelled[key].most_common(1)[0][0] for key in kept[:MAX_NAMES]]
