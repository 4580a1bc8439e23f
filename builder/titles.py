"""Titles as people write them: a title in ALL CAPS (arXiv metadata taken from some PDFs, e.g.
"LORA: LOW-RANK ADAPTATION OF LARGE LANGUAGE MODELS") becomes title case with its acronyms and names
kept ("LoRA: Low-Rank Adaptation of Large Language Models").

The one place this happens is the paper's site record (`builder/site/data.py`), so every page, search
result, Ask source and BibTeX entry (the browser's `citation.js` builds it from the record) shows the
same title. The chunks' context lines keep the title as fetched: the embedding model is uncased, and
their cache keys stay as they are.

All caps erase what was an acronym, so the paper's abstract (rarely in caps) says how a word is
written: a word the abstract writes only with a capital after its first letter ("LoRA", "RAPTOR",
"ReAct", never plainly) is written that way; otherwise a word with a digit or without a vowel ("GPT-3", "LSTM") stays in caps,
a short function word ("of", "and", "via") is lower case except first and after a colon, and any other
word is capitalised.
"""

from __future__ import annotations

import re

_WORD_RE = re.compile(r"[^\W\d_][^\W_]*|\d[^\W_]*")
_SMALL = frozenset(
    "a an and as at but by for from in into nor of on onto or over per the to up via vs with without".split()
)
_VOWELS = frozenset("aeiouyAEIOUY")


def is_all_caps(title: str) -> bool:
    letters = [c for c in title if c.isalpha()]
    return len(letters) >= 4 and not any(c.islower() for c in letters)


def _spellings(text: str) -> dict[str, str]:
    """The abstract's spelling of each word it writes only with a capital after its first letter
    ("LoRA"), by lower case; a word it also writes plainly ("self", "Self") is no acronym."""
    found: dict[str, str] = {}
    plain: set[str] = set()
    for word in _WORD_RE.findall(text):
        if any(c.isupper() for c in word[1:]):
            found.setdefault(word.lower(), word)
        else:
            plain.add(word.lower())
    return {lower: word for lower, word in found.items() if lower not in plain}


def _word(word: str, spellings: dict[str, str], first: bool) -> str:
    lower = word.lower()
    if lower in spellings:
        return spellings[lower]
    if any(c.isdigit() for c in word) or not any(c in _VOWELS for c in word):
        return word
    if lower in _SMALL and not first:
        return lower
    return word[:1] + word[1:].lower()


def title_case(title: str, abstract: str = "") -> str:
    """`title` unchanged unless it is in ALL CAPS; then in title case, acronyms and names kept as the
    abstract writes them."""
    if not is_all_caps(title):
        return title
    spellings = _spellings(abstract)
    parts: list[str] = []
    at = 0
    first = True
    for match in _WORD_RE.finditer(title):
        between = title[at : match.start()]
        parts.append(between)
        first = first or between.rstrip().endswith((":", "?", "!", "."))
        parts.append(_word(match.group(), spellings, first))
        first = False
        at = match.end()
    parts.append(title[at:])
    return "".join(parts)
