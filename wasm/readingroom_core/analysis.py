"""Text analysis shared by the index builder and the browser.

Queries and documents must become terms through the very same code, so this module is stdlib-only and
avoids anything whose result depends on the Python/Unicode version (Pyodide ships a newer Unicode table
than CPython 3.11): folding uses a table built only from long-assigned Unicode blocks, and tokens are
made of ASCII letters and digits alone.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Iterable
from functools import lru_cache
from typing import TypeVar

# Blocks whose characters were all assigned (or are permanently reserved) long before Unicode 14, so
# their decompositions are fixed by Unicode's normalization stability policy.
_FOLDED_RANGES = (
    (0x00C0, 0x024F),  # Latin-1 Supplement letters, Latin Extended-A and -B
    (0x1E00, 0x1EFF),  # Latin Extended Additional (Vietnamese and friends)
    (0xFB00, 0xFB06),  # Latin ligatures: ﬁ ﬂ ﬀ ...
    (0xFF10, 0xFF5A),  # fullwidth digits and letters
    (0x1D400, 0x1D7FF),  # mathematical alphanumerics: 𝑥 𝐖 𝛼 𝟎
)
# Letters that have no decomposition but an obvious ASCII spelling.
_EXTRA_FOLDS = {
    "ß": "ss",
    "æ": "ae",
    "œ": "oe",
    "ø": "o",
    "ł": "l",
    "đ": "d",
    "ð": "d",
    "þ": "th",
    "ı": "i",
    "ŋ": "ng",
    "ħ": "h",
    "ŧ": "t",
    "Æ": "ae",
    "Œ": "oe",
    "Ø": "o",
    "Ł": "l",
    "Đ": "d",
    "Ð": "d",
    "Þ": "th",
}
# Greek letters are common in scientific text ("β-VAE", "α = 0.1"); spelling them lets queries type them.
_GREEK = (
    "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho "
    "sigma tau upsilon phi chi psi omega"
).split()
_GREEK_FOLDS = {
    chr(first + i + (i >= 17)): name  # skips final ς (and the unassigned code point among capitals)
    for first in (0x0391, 0x03B1)
    for i, name in enumerate(_GREEK)
}
_GREEK_FOLDS.update({"ς": "sigma", "ϵ": "epsilon", "ϑ": "theta", "ϕ": "phi", "ϖ": "pi", "ϱ": "rho"})
# Dashes that stand for a hyphen inside compounds.
_HYPHENS = "\u2010\u2011\u2012\u2013\u2212"


def _fold_character(char: str) -> str | None:
    """ASCII spelling of one character, or None when it has none worth indexing."""
    category = unicodedata.category(char)
    if category[0] not in "LN" or category == "No":
        return None  # superscripts are footnote marks or powers, not part of a word
    base = "".join(c for c in unicodedata.normalize("NFKD", char) if not unicodedata.combining(c))
    if base.isascii() and base.isalnum():
        return base.lower()
    return _EXTRA_FOLDS.get(base.lower()) or _GREEK_FOLDS.get(base)


def _build_fold_table() -> dict[int, str]:
    """Translation table applied to raw text; anything it leaves outside [a-z0-9-] separates tokens.

    Built without str.lower(), whose mapping of newer code points differs between Unicode versions.
    """
    table = {ord(upper): upper.lower() for upper in string.ascii_uppercase}
    table.update({ord(dash): "-" for dash in _HYPHENS})
    for first, last in _FOLDED_RANGES:
        for code in range(first, last + 1):
            folded = None if unicodedata.category(chr(code)) == "Cn" else _fold_character(chr(code))
            if folded is not None:
                table[code] = folded
    table.update({ord(char): ascii_form for char, ascii_form in {**_EXTRA_FOLDS, **_GREEK_FOLDS}.items()})
    return table


FOLD_TABLE = _build_fold_table()

# Function words of English, plus "et al" which every citation repeats.
STOP_WORDS = frozenset(
    """
    a about above after again against all also am an and any are as at be because been before being
    below between both but by can could did do does doing down during each either et al etc few for from
    further had has have having he her here hers herself him himself his how however i if in into is
    it its itself just may me might more most must my myself no nor not of off on once only or other
    our ours ourselves out over own same shall she should so some such than that the their theirs them
    themselves then there these they this those through thus to too under until up upon very via was
    we were what when where which while who whom whose why will with within without would yet you your
    yours yourself yourselves
    """.split()
)

_NUMBERISH = r"[a-z0-9]*[0-9](?:\.[0-9]+)+[a-z0-9]*"  # 3.5, 2005.11401, gpt3.5, 2005.11401v2
_PIECE = rf"(?:{_NUMBERISH}|[a-z0-9]+)"
_TOKEN_RE = re.compile(rf"{_PIECE}(?:-{_PIECE})*")
_VERSIONED_ARXIV_ID = re.compile(r"([0-9]{4}\.[0-9]{4,5})v[0-9]+")
_MAX_TERM_LENGTH = 40  # longer runs are URLs, hashes or extraction garbage


def fold(text: str) -> str:
    """Lowercase and spell accented, Greek and math letters in ASCII."""
    return text.translate(FOLD_TABLE)


def analyze(text: str, joined_compounds: bool = True) -> list[str]:
    """Index/query terms of `text`, in reading order.

    A hyphenated compound yields its joined form first and then its parts, so "GPT-3" matches "gpt3"
    and "BERT-base" matches both "bert" and "bertbase". Single characters and stop words are dropped as
    standalone terms but still count inside the joined form ("k-NN" -> "knn", "nn"). Phrase checks
    analyse without joined forms, so "fine-tuning BERT" is found in "fine tuning BERT" and vice versa.
    """
    terms: list[str] = []
    for match in _TOKEN_RE.finditer(fold(text)):
        parts = match.group().split("-")
        if len(parts) > 1 and joined_compounds and not all(part.isdigit() for part in parts):
            joined = "".join(parts)
            if len(joined) <= _MAX_TERM_LENGTH:
                terms.append(_normalize_term(joined))
        for part in parts:
            if len(part) < 2 or len(part) > _MAX_TERM_LENGTH or part in STOP_WORDS:
                continue
            terms.append(_normalize_term(part))
            versioned = _VERSIONED_ARXIV_ID.fullmatch(part)
            if versioned:
                terms.append(versioned.group(1))
    return terms


def _normalize_term(token: str) -> str:
    """Stem words; keep tokens with digits (l2, f1, gpt3, 2005.11401) verbatim."""
    return stem(token) if token.isalpha() else token


_ARXIV_VERSION_RE = re.compile(r"v\d+$")


def bare_id(arxiv_id: str) -> str:
    """An arXiv id as filters and citations compare it: lower case, without its version suffix, so
    `2005.11401v2` names the paper `2005.11401`."""
    return _ARXIV_VERSION_RE.sub("", arxiv_id.strip().lower())


def contains_phrase(text: str, phrase: list[str]) -> bool:
    """Whether `phrase` (from `querysyntax.parse_query`) occurs in `text` as adjacent terms, stop words aside.

    The text is analysed like phrases are, without joined compounds, so hyphens and spaces between
    words do not matter ("fine-tuning" = "fine tuning"), but a glued "GPT3" does not match "GPT-3 ...".
    """
    terms = analyze(text, joined_compounds=False)
    width = len(phrase)
    return width == 0 or any(
        terms[start : start + width] == phrase
        for start, term in enumerate(terms[: len(terms) - width + 1])
        if term == phrase[0]
    )


# --- Snowball English (Porter2) stemmer, written from the published algorithm description. ---
# Hand-written because the core is stdlib-only; tests/builder/test_stemmer_reference.py holds it to
# snowballstemmer 2.2.0 word for word (docs/measurements/stemmer.json: the whole mirror and three BEIR sets).

_VOWELS = frozenset("aeiouy")
_DOUBLES = ("bb", "dd", "ff", "gg", "mm", "nn", "pp", "rr", "tt")
_LI_ENDINGS = frozenset("cdeghkmnrt")
_R1_PREFIXES = ("gener", "commun", "arsen")
_EXCEPTIONS = {
    "skis": "ski",
    "skies": "sky",
    "dying": "die",
    "lying": "lie",
    "tying": "tie",
    "idly": "idl",
    "gently": "gentl",
    "ugly": "ugli",
    "early": "earli",
    "only": "onli",
    "singly": "singl",
    "sky": "sky",
    "news": "news",
    "howe": "howe",
    "atlas": "atlas",
    "cosmos": "cosmos",
    "bias": "bias",
    "andes": "andes",
}
_INVARIANT_AFTER_1A = frozenset(
    ("inning", "outing", "canning", "herring", "earring", "proceed", "exceed", "succeed")
)


SuffixRule = TypeVar("SuffixRule", str, tuple[str, str])


def _longest_first(rules: Iterable[SuffixRule]) -> tuple[SuffixRule, ...]:
    """Sort suffix rules so that the first match is the longest, as every Porter2 step requires."""
    return tuple(sorted(rules, key=lambda rule: -len(rule if isinstance(rule, str) else rule[0])))


_STEP1B = _longest_first(("eed", "eedly", "ed", "edly", "ing", "ingly"))
_STEP2 = _longest_first(
    (
        ("ization", "ize"),
        ("ational", "ate"),
        ("fulness", "ful"),
        ("ousness", "ous"),
        ("iveness", "ive"),
        ("tional", "tion"),
        ("biliti", "ble"),
        ("lessli", "less"),
        ("entli", "ent"),
        ("ation", "ate"),
        ("alism", "al"),
        ("aliti", "al"),
        ("ousli", "ous"),
        ("iviti", "ive"),
        ("fulli", "ful"),
        ("enci", "ence"),
        ("anci", "ance"),
        ("abli", "able"),
        ("izer", "ize"),
        ("ator", "ate"),
        ("alli", "al"),
        ("bli", "ble"),
        ("ogi", "og"),
        ("li", ""),
    )
)
_STEP3 = _longest_first(
    (
        ("ational", "ate"),
        ("tional", "tion"),
        ("alize", "al"),
        ("icate", "ic"),
        ("iciti", "ic"),
        ("ative", ""),
        ("ical", "ic"),
        ("ness", ""),
        ("ful", ""),
    )
)
_STEP4 = _longest_first(
    (
        "ement",
        "ance",
        "ence",
        "able",
        "ible",
        "ment",
        "ant",
        "ent",
        "ism",
        "ate",
        "iti",
        "ous",
        "ive",
        "ize",
        "ion",
        "al",
        "er",
        "ic",
    )
)


def _mark_consonant_y(word: str) -> str:
    """Write a y that acts as a consonant (initial, or after a vowel) as Y, which is not a vowel."""
    letters = list(word)
    for index, letter in enumerate(letters):
        if letter == "y" and (index == 0 or letters[index - 1] in _VOWELS):
            letters[index] = "Y"
    return "".join(letters)


def _is_vowel(word: str, index: int) -> bool:
    return word[index] in _VOWELS


def _region_start(word: str, start: int) -> int:
    """Index after the first non-vowel that follows a vowel, searching from `start`."""
    for index in range(start + 1, len(word)):
        if not _is_vowel(word, index) and _is_vowel(word, index - 1):
            return index + 1
    return len(word)


def _regions(word: str) -> tuple[int, int]:
    r1 = next((len(p) for p in _R1_PREFIXES if word.startswith(p)), None)
    if r1 is None:
        r1 = _region_start(word, 0)
    return r1, _region_start(word, r1)


def _ends_with_short_syllable(word: str) -> bool:
    if len(word) == 2:
        return _is_vowel(word, 0) and not _is_vowel(word, 1)
    return (
        len(word) >= 3
        and not _is_vowel(word, -3)
        and _is_vowel(word, -2)
        and not _is_vowel(word, -1)
        and word[-1] not in "wxY"
    )


def _longest_suffix(word: str, suffixes: tuple[str, ...]) -> str | None:
    """The longest of `suffixes` (ordered longest first) that ends `word`; Porter2 never falls back."""
    return next((suffix for suffix in suffixes if word.endswith(suffix)), None)


def _longest_suffix_rule(word: str, rules: tuple[tuple[str, str], ...]) -> tuple[str, str] | None:
    return next((rule for rule in rules if word.endswith(rule[0])), None)


def _step1a(word: str) -> str:
    if word.endswith("sses"):
        return word[:-2]
    if word.endswith(("ied", "ies")):
        return word[:-2] if len(word) > 4 else word[:-1]
    if word.endswith(("us", "ss")):
        return word
    if word.endswith("s") and any(c in _VOWELS for c in word[:-2]):
        return word[:-1]
    return word


def _step1b(word: str, r1: int) -> str:
    suffix = _longest_suffix(word, _STEP1B)
    if suffix is None:
        return word
    stem_part = word[: -len(suffix)]
    if suffix in ("eed", "eedly"):
        return stem_part + "ee" if len(stem_part) >= r1 else word
    if not any(c in _VOWELS for c in stem_part):
        return word
    if stem_part.endswith(("at", "bl", "iz")):
        return stem_part + "e"
    if stem_part.endswith(_DOUBLES):
        return stem_part[:-1]
    if r1 >= len(stem_part) and _ends_with_short_syllable(stem_part):
        return stem_part + "e"
    return stem_part


def _step1c(word: str) -> str:
    if len(word) > 2 and word[-1] in "yY" and not _is_vowel(word, -2):
        return word[:-1] + "i"
    return word


def _step2(word: str, r1: int) -> str:
    suffix = _longest_suffix_rule(word, _STEP2)
    if suffix is None:
        return word
    ending, replacement = suffix
    start = len(word) - len(ending)
    if start < r1:
        return word
    if ending == "ogi" and not word[:start].endswith("l"):
        return word
    if ending == "li" and (start == 0 or word[start - 1] not in _LI_ENDINGS):
        return word
    return word[:start] + replacement


def _step3(word: str, r1: int, r2: int) -> str:
    suffix = _longest_suffix_rule(word, _STEP3)
    if suffix is None:
        return word
    ending, replacement = suffix
    start = len(word) - len(ending)
    if start < r1 or (ending == "ative" and start < r2):
        return word
    return word[:start] + replacement


def _step4(word: str, r2: int) -> str:
    ending = _longest_suffix(word, _STEP4)
    if ending is None:
        return word
    start = len(word) - len(ending)
    if start < r2:
        return word
    if ending == "ion" and (start == 0 or word[start - 1] not in "st"):
        return word
    return word[:start]


def _step5(word: str, r1: int, r2: int) -> str:
    start = len(word) - 1
    if word.endswith("e"):
        if start >= r2 or (start >= r1 and not _ends_with_short_syllable(word[:start])):
            return word[:start]
    elif word.endswith("ll") and start >= r2:
        return word[:start]
    return word


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    """Snowball English (Porter2) stem of a lowercase word."""
    if len(word) <= 2:
        return word
    if word in _EXCEPTIONS:
        return _EXCEPTIONS[word]
    word = word.removeprefix("'")
    word = _mark_consonant_y(word)
    r1, r2 = _regions(word)
    for apostrophe_suffix in ("'s'", "'s", "'"):
        if word.endswith(apostrophe_suffix):
            word = word[: -len(apostrophe_suffix)]
            break
    word = _step1a(word)
    if word not in _INVARIANT_AFTER_1A:
        word = _step1b(word, r1)
        word = _step1c(word)
        word = _step2(word, r1)
        word = _step3(word, r1, r2)
        word = _step4(word, r2)
        word = _step5(word, r1, r2)
    return word.replace("Y", "y")
