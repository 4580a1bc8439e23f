"""Titles as people write them: a title in ALL CAPS (arXiv metadata taken from some PDFs, e.g.
"LORA: LOW-RANK ADAPTATION OF LARGE LANGUAGE MODELS") becomes title case with its acronyms and names
kept ("LoRA: Low-Rank Adaptation of Large Language Models"); in a title with lower case letters, a word
the PDF set in capitals takes the abstract's mixed-case spelling ("QLORA" -> "QLoRA", "Roformer" ->
"RoFormer"), and a long capitalised name that spells no acronym of the title becomes a name
("SELF-INSTRUCT" -> "Self-Instruct", "MEDUSA" -> "Medusa"; "RAPTOR: Recursive Abstractive Processing
for Tree-Organized Retrieval" stays).

The build applies it once, in the paper's site record (`builder/writers/papers.py`), and the BibTeX
writer (`builder/bibliography.py`) braces the words it keeps; the browser shows the titles as written.
The chunks' context lines keep the title as fetched: the embedding model is uncased, and their cache
keys stay as they are.

All caps erase what was an acronym, so the paper's abstract (rarely in caps) says how a word is
written: a word the abstract writes only with a capital after its first letter ("LoRA", "RAPTOR",
"ReAct", never plainly) is written that way; otherwise a word with a digit or without a vowel ("GPT-3", "LSTM") stays in caps,
a short function word ("of", "and", "via") is lower case except first and after a colon, and any other
word is capitalised.
"""

from __future__ import annotations

import re

_WORD_RE = re.compile(r"[^\W\d_][^\W_]*|\d[^\W_]*")
# A word and the words hyphenated to it ("SELF-INSTRUCT", "Match-LSTM"), as one name.
_COMPOUND_RE = re.compile(r"[^\W_]+(?:-[^\W_]+)*")
_SMALL = frozenset(
    "a an and as at but by for from in into nor of on onto or over per the to up via vs with without".split()
)
_VOWELS = frozenset("aeiouyAEIOUY")
# A capitalised word this long is likelier a name set in capitals than an acronym nobody spells out.
_NAME_LETTERS = 6


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


def mixed_spellings(text: str) -> dict[str, str]:
    """The abstract's mixed-case spellings ("QLoRA", "RoFormer": a capital after the first letter and a
    lower case letter), by lower case: a PDF's capitals or a capitalised title word cannot say them."""
    found: dict[str, str] = {}
    for word in _WORD_RE.findall(text):
        if any(c.isupper() for c in word[1:]) and any(c.islower() for c in word):
            found.setdefault(word.lower(), word)
    return found


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
    """`title` in title case when it is in ALL CAPS, acronyms and names kept as the abstract writes
    them; otherwise with its capitalised words respelled as `_respelled` says."""
    if not is_all_caps(title):
        return _respelled(title, abstract)
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


def _respelled(title: str, abstract: str) -> str:
    """A title with lower case letters, its capitalised words set as the abstract or the title says."""
    mixed = mixed_spellings(abstract)

    def respell(match: re.Match[str]) -> str:
        compound = match.group()
        parts = compound.split("-")
        respelled = [_mixed(part, mixed) for part in parts]
        if respelled != parts:
            return "-".join(respelled)
        if _is_capitalised_name(compound) and not _is_acronym(compound, match.start(), title):
            return "-".join(part[:1] + part[1:].lower() for part in parts)
        return compound

    return _COMPOUND_RE.sub(respell, title)


def _mixed(part: str, mixed: dict[str, str]) -> str:
    """`part` as the abstract spells it, where the title's capitals cannot say it: a word in capitals
    ("QLORA") takes any mixed spelling that starts with a capital, a capitalised word ("Roformer") one
    without a run of three capitals ("RoFormer", not the emphasis of "RECITation")."""
    spelling = mixed.get(part.lower())
    if spelling is None or not spelling[:1].isupper():
        return part
    if part.isupper() or (part[1:].islower() and not re.search(r"[A-Z]{3}", spelling)):
        return spelling
    return part


def _is_capitalised_name(compound: str) -> bool:
    """Letters only, all capitals, each part with a vowel, long enough to be a name ("MEDUSA",
    "SELF-INSTRUCT"), not "BERT", "RAFT" or "GPT-3"."""
    parts = compound.split("-")
    letters = "".join(parts)
    if not letters.isalpha() or not letters.isupper() or len(letters) < _NAME_LETTERS:
        return False
    return all(len(part) >= 2 and any(c in _VOWELS for c in part) for part in parts)


def _is_acronym(compound: str, start: int, title: str) -> bool:
    """Whether the title's other words spell `compound`: its first letter a word's first, the rest in
    order after it within twice as many words, at least half of them words' first letters ("REALM" in
    "Retrieval-Augmented Language Model"; not "SELF-INSTRUCT" in "Self Generated Instructions")."""
    letters = compound.replace("-", "").lower()
    rest = [w.lower() for w in _WORD_RE.findall(title[:start] + " " + title[start + len(compound) :])]
    for index, word in enumerate(rest):
        if word.startswith(letters[0]):
            initials = _most_initials(letters, rest[index : index + 2 * len(letters)])
            if initials * 2 >= len(letters):
                return True
    return False


def _most_initials(letters: str, words: list[str]) -> int:
    """The most of `letters` that can be words' first letters when all of them are matched in order in
    `words` (the first at the first word's start); -1 when they cannot all be matched."""
    text = " ".join(words)
    starts = {0} | {at + 1 for at, c in enumerate(text) if c == " "}
    best: dict[tuple[int, int], int] = {}

    def most(k: int, at: int) -> int:
        if k == len(letters):
            return 0
        if (k, at) not in best:
            found = -1
            for index in range(at, len(text)):
                if text[index] == letters[k]:
                    after = most(k + 1, index + 1)
                    if after >= 0:
                        found = max(found, after + (index in starts))
            best[(k, at)] = found
        return best[(k, at)]

    return 1 + most(1, 1) if text.startswith(letters[0]) and most(1, 1) >= 0 else -1
