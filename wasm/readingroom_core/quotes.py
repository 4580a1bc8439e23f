"""How a quote matches page text: the one rule, `canonical`, and the search that uses it.

Matching follows one rule, `canonical`: what PDFs and typing change freely (case, ligatures, accents,
quote and dash styles, whitespace, spacing around punctuation, line-end hyphenation) is ignored; what
carries meaning (every letter and digit, word boundaries, decimal points, signs, percent and comparison
signs) must match exactly, and a quote starts and ends on word boundaries of the page.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

MIN_QUOTE_WORDS = 3
MIN_QUOTE_LETTERS = 12
PAGE_MARK_RE = re.compile(r"\s*\u27e6p\.\d+\u27e7\s*")  # ⟦p.8⟧, where the prompt shows a page break


# Characters that carry a number's or a comparison's meaning: kept, and glued to their neighbours so that
# spacing around them ("49 %", "< 5") does not matter while dropping or adding one does.
_SYMBOLS = frozenset("+-\u00b1%<>\u2264\u2265\u2260\u226a\u226b=~\u2248\u00d7^_")
_DASHES = frozenset("-\u00ad\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe58\ufe63\uff0d")
_NUMBER_MARKS = frozenset(".,/:\u2044")  # kept between two digits: 1.4, 1,000, 3/4, 1:2
_SPACE, _DROP = " ", ""


def _pieces(text: str) -> list[tuple[str, int]]:
    """(character, offset) after NFKD, case folding and accent dropping; whitespace and punctuation that
    carries no meaning become one " ", superscripts and subscripts a "^" or "_" before their digits."""
    pieces: list[tuple[str, int]] = []
    for index, char in enumerate(text):
        if char.isascii():
            if char.isalnum():
                pieces.append((char.lower(), index))
            elif char in _SYMBOLS or char in _NUMBER_MARKS:
                pieces.append((char, index))
            else:
                pieces.append((_SPACE, index))
            continue
        if char in _DASHES:
            pieces.append(("-", index))
            continue
        if char in _SYMBOLS:
            pieces.append((char, index))
            continue
        tag = unicodedata.decomposition(char)
        if tag.startswith(("<super>", "<sub>")):
            pieces.append(("^" if tag.startswith("<super>") else "_", index))
        for part in unicodedata.normalize("NFKD", char).casefold():
            if part.isalnum() or part in _SYMBOLS or part in _NUMBER_MARKS:
                pieces.append((part, index))
            elif unicodedata.category(part) in ("Mn", "Cf"):
                continue  # accents and invisible format characters (soft hyphens are dashes above)
            else:
                pieces.append((_SPACE, index))
    return pieces


def _resolve(pieces: list[tuple[str, int]]) -> list[str]:
    """What each piece becomes: a dash before a number is a sign or a range ("-4.9", "10 - 20"); a dash
    right after a letter and before a letter, with or without a line break between, joins them
    ("re-\\ntriever", "first-stage" and "firststage" are one word, as PDFs and the parser's
    de-hyphenation write it either way); any other dash separates words; number marks
    count only between two digits; runs of separators shrink to one space between words and vanish
    next to symbols."""
    chars = [char for char, _ in pieces]
    count = len(chars)
    next_solid = [count] * (count + 1)  # index of the next piece that is not a separator
    for i in range(count - 1, -1, -1):
        next_solid[i] = i if chars[i] != _SPACE else next_solid[i + 1]
    out = chars[:]
    for i, char in enumerate(chars):
        after = chars[next_solid[i + 1]] if next_solid[i + 1] < count else ""
        if char == "-":
            if after.isdigit():
                out[i] = "-"
            elif i > 0 and chars[i - 1].isalpha() and after.isalpha():
                out[i] = _DROP
                for j in range(i + 1, next_solid[i + 1]):
                    out[j] = _DROP
            else:
                out[i] = _SPACE
        elif char in _NUMBER_MARKS:
            joins_digits = 0 < i < count - 1 and chars[i - 1].isdigit() and chars[i + 1].isdigit()
            out[i] = char if joins_digits else _SPACE
    return out


def canonical(text: str) -> tuple[str, tuple[int, ...]]:
    """The one rule by which a quote matches page text, and each kept character's offset in `text`.

    Equal after this: case (case folding), ligatures and other compatibility forms (NFKD), accents,
    quote styles, dash styles (‐‑‒–—− are all "-" as signs), runs of whitespace and punctuation that
    carries no meaning, spacing around symbols, and hyphens inside a word ("re-\\ntriever" = "retriever").
    Kept exactly: every letter and digit, each word boundary (one space), decimal points and commas
    between digits, signs (+ - ± as signs or ranges), % and comparison signs (< > ≤ ≥ = ≠ ~ ≈ ×),
    superscripts."""
    pieces = _pieces(text)
    resolved = _resolve(pieces)
    chars: list[str] = []
    offsets: list[int] = []
    for (_, offset), char in zip(pieces, resolved, strict=True):
        if char == _DROP:
            continue
        if char == _SPACE:
            if chars and chars[-1] != _SPACE and chars[-1] not in _SYMBOLS:
                chars.append(_SPACE)
                offsets.append(offset)
            continue
        if char in _SYMBOLS and chars and chars[-1] == _SPACE:
            chars.pop()
            offsets.pop()
        chars.append(char)
        offsets.append(offset)
    if chars and chars[-1] == _SPACE:
        chars.pop()
        offsets.pop()
    return "".join(chars), tuple(offsets)


@lru_cache(maxsize=256)
def _page_canonical(text: str) -> tuple[str, tuple[int, ...]]:
    """`canonical` of a page or source text, cached apart from quotes: one answer checks the same pages
    many times, and its many quotes must not push them out."""
    return canonical(text)


@lru_cache(maxsize=64)
def _quote_canonical(quote: str) -> str:
    return canonical(PAGE_MARK_RE.sub(" ", quote))[0]


def quote_is_checkable(quote: str) -> bool:
    return (
        len(quote.split()) >= MIN_QUOTE_WORDS
        and sum(c.isalnum() for c in _quote_canonical(quote)) >= MIN_QUOTE_LETTERS
    )


def _at_boundary(text: str, at: int) -> bool:
    """Whether a match may start or end at `at` of a canonical text: at either end, next to a space, or
    between a letter and a symbol; never inside a word or number, nor between a number and its sign,
    percent or comparison ("4.9" is not in "-4.9%")."""
    if at <= 0 or at >= len(text) or _SPACE in (text[at - 1], text[at]):
        return True
    left, right = text[at - 1], text[at]
    return (left.isalpha() and right in _SYMBOLS) or (left in _SYMBOLS and right.isalpha())


def find_quote(quote: str, text: str) -> tuple[int, int] | None:
    """[start, end) of `quote` in `text` under `canonical`'s rule, starting and ending on word
    boundaries of `text`, or None."""
    wanted = _quote_canonical(quote)
    if not wanted:
        return None
    letters, offsets = _page_canonical(text)
    at = letters.find(wanted)
    while at >= 0:
        end = at + len(wanted)
        if _at_boundary(letters, at) and _at_boundary(letters, end):
            return offsets[at], offsets[end - 1] + 1
        at = letters.find(wanted, at + 1)
    return None


def longest_matching_words(quote: str, text: str) -> int:
    """The longest run of the quote's words that occurs in `text` (for reasons). A run that occurs
    keeps occurring when shortened, so one sliding window finds it with a linear number of searches."""
    words = [canonical(word)[0] for word in quote.split()]
    letters = _page_canonical(text)[0]
    best = end = 0
    for start in range(len(words)):
        end = max(end, start)
        while end < len(words) and " ".join(words[start : end + 1]) in letters:
            end += 1
        best = max(best, end - start)
    return best
