"""Spelling suggestions ("did you mean"): a query's words the corpus never uses, replaced by the closest
words it does.

"transfomer attention" -> "transformer attention". Candidates are indexed terms within a small edit
distance, the most frequent winning; the word shown is the commonest spelling of that term in a passage
that holds it, so the suggestion reads as text, not as a stem.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

from readingroom_core.analysis import analyze
from readingroom_core.querysyntax import field_spans
from readingroom_core.termindex import TermIndex

_WORD_RE = re.compile(r"[A-Za-z]{5,}")  # shorter words are too easily another real word
SPELLED_CANDIDATES = 3  # nearest stems spelt out (each may read up to five paper text files)
MAX_ENDING = 4  # letters a stem may leave off its word: "adapt|ation" has 5, most endings are shorter


@lru_cache(maxsize=1 << 15)
def _analysed(word: str) -> tuple[str, ...]:
    """Cached: passages repeat their words, so spelling out suggestions analyses the same words often."""
    return tuple(analyze(word))


class Speller:
    """Suggestions for one site: its postings say which words exist, its passages how they are spelt."""

    def __init__(self, bm25: TermIndex, chunk_text: Callable[[int], str]) -> None:
        self._bm25 = bm25
        self._chunk_text = chunk_text
        # (term, typed word) -> suggestion: a visitor refining a query types the same word again
        self.corrections: dict[tuple[str, str], str | None] = {}

    def suggest(self, query: str) -> str | None:
        """`query` with each word the corpus never uses replaced by the closest word it does, or None."""
        filters = field_spans(query)
        changed, pieces, at = False, [], 0
        for match in _WORD_RE.finditer(query):
            if any(start <= match.start() < end for start, end in filters):
                continue
            terms = analyze(match.group())
            if len(terms) != 1 or self._bm25.doc_freq(terms[0]):
                continue
            key = (terms[0], match.group())
            if key not in self.corrections:
                self.corrections[key] = self._correction(*key)
            better = self.corrections[key]
            if better is None:
                continue
            pieces += [query[at : match.start()], better]
            at, changed = match.end(), True
        return "".join([*pieces, query[at:]]) if changed else None

    def _correction(self, term: str, typed: str) -> str | None:
        """A word of the corpus within a small edit distance of `typed`, or None.

        Indexed terms are stems, so each is compared with a prefix of the typed word ("adaptaion" is
        "adapt" + an ending); the nearest few stems are then spelt out from passages that hold them
        and the nearest real word wins, so the suggestion reads as text.
        """
        lower = typed.lower()
        allowed = 1 if len(lower) <= 5 else 2
        letters = set(lower)
        candidates = []
        for known in self._bm25.terms_near(term, max(4, len(lower) - MAX_ENDING), len(lower) + allowed):
            # each letter of `known` the typed word lacks costs an edit: most terms fail here, cheaply
            if known.isalpha() and len(set(known).difference(letters)) <= allowed:
                distance, ending = stem_distance(known, lower, allowed)
                if distance <= allowed:
                    candidates.append((distance, ending, -self._bm25.doc_freq(known), known))
        for *_, known in sorted(candidates)[:SPELLED_CANDIDATES]:
            spelt = [(edit_distance(lower, word, allowed), word) for word in self._spellings(known)]
            distance, word = min(spelt, default=(allowed + 1, ""))
            if distance <= allowed:
                return word.capitalize() if typed[:1].isupper() else word
        return None

    def _spellings(self, term: str) -> set[str]:
        """Words that analyse to `term` in up to five passages holding it, spread over the corpus."""
        doc_ids = self._bm25.doc_ids(term)
        if not doc_ids:
            return set()
        words: set[str] = set()
        for doc_id in dict.fromkeys(doc_ids[(len(doc_ids) - 1) * step // 4] for step in range(5)):
            words.update(
                w.lower() for w in _WORD_RE.findall(self._chunk_text(doc_id)) if _analysed(w) == (term,)
            )
        return words


def stem_distance(stem: str, word: str, limit: int) -> tuple[int, int]:
    """(edit distance of `stem` to the closest prefix of `word`, letters of `word` after that prefix),
    counting only prefixes that leave at most MAX_ENDING letters; distances over `limit` as limit + 1.

    Every indexed term with the typed word's initial and a near length meets this, so it is the cost
    of "did you mean": Hyyrö's bit-parallel form of the (adjacent-transposition) edit distance keeps a
    column of the table in a few integers and reads the distance to each prefix of `word` off it, one
    step per letter of `word` (about ten times fewer Python operations than the table row by row),
    stopping once the letters left could not bring the distance within `limit`.
    """
    over = limit + 1
    first_end = max(1, len(word) - MAX_ENDING)
    if not stem:
        best = min(((j, len(word) - j) for j in range(first_end, len(word) + 1)), default=(over, 0))
        return best if best[0] <= limit else (over, 0)
    mask = (1 << len(stem)) - 1
    last_row = 1 << (len(stem) - 1)
    positions: dict[str, int] = {}  # letter -> bits of its positions in `stem`
    for i, char in enumerate(stem):
        positions[char] = positions.get(char, 0) | (1 << i)
    plus, minus, diagonal, previous_match = mask, 0, 0, 0  # vertical +1/-1 deltas, zero diagonals
    distance = len(stem)  # to the empty prefix
    best = (over, 0)
    for j, char in enumerate(word, start=1):
        match = positions.get(char, 0)
        transposed = (((~diagonal) & match) << 1) & previous_match
        diagonal = ((((match & plus) + plus) ^ plus) | match | minus | transposed) & mask
        horizontal_plus = (minus | ~(diagonal | plus)) & mask
        horizontal_minus = plus & diagonal
        if horizontal_plus & last_row:
            distance += 1
        elif horizontal_minus & last_row:
            distance -= 1
        horizontal_plus = ((horizontal_plus << 1) | 1) & mask
        horizontal_minus = (horizontal_minus << 1) & mask
        plus = (horizontal_minus | ~(diagonal | horizontal_plus)) & mask
        minus = horizontal_plus & diagonal
        previous_match = match
        if j >= first_end and distance <= limit:
            best = min(best, (distance, len(word) - j))
        elif distance - (len(word) - j) > limit:
            return best  # each letter left can lower the distance by one at most: none will do
    return best


def edit_distance(a: str, b: str, limit: int) -> int:
    """Levenshtein distance with adjacent transpositions; anything over `limit` is reported as limit + 1."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, start=1):
        current = [i] + [0] * len(b)
        for j, char_b in enumerate(b, start=1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char_a != char_b))
            if i > 1 and j > 1 and char_a == b[j - 2] and a[i - 2] == char_b:
                current[j] = min(current[j], previous2[j - 2] + 1)
        if min(current) > limit:
            return limit + 1
        previous2, previous = previous, current
    return min(previous[-1], limit + 1)
