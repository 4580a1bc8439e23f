"""Spelling suggestions ("did you mean"): a query's words the corpus never uses, replaced by the closest
words it does.

"transfomer attention" -> "transformer attention". Candidates are indexed terms within a small edit
distance (one edit for short words, two for long ones), spelt as the passages that hold them spell them;
the fewest edits win, then the word that shares the most passages with the query's other words, then the
commonest. A rare word is never offered, and no suggestion is better than a wrong one.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import lru_cache

from readingroom_core.analysis import analyze
from readingroom_core.querysyntax import field_spans
from readingroom_core.readers.postings import TermIndex

_WORD_RE = re.compile(r"[A-Za-z]{5,}")  # shorter words are too easily another real word
SPELLED_CANDIDATES = 4  # nearest stems spelt out (each may read up to five passages' texts)
MAX_ENDING = 4  # letters a stem may leave off its word: "adapt|ation" has 5, most endings are shorter
# Edits a correction may make: one in a word of five to eight letters, two from nine. Two edits in a
# short word reach too many other words ("qwerty" -> "qbert", "smoothie" -> "smooth").
TWO_EDITS_FROM = 9
# A correction must be a word of at least this many passages: a rarer one is a name, a symbol or an
# extraction artefact, and a worse suggestion than none; unless it is one edit from a long word
# ("encycolpedia" -> "encyclopedia"), which few words are.
MIN_PASSAGES = 2
# A word in this few passages may be a misprint of the papers ("lenght", "knowlege"): it is corrected
# when a word this many times commoner is within the allowed edits.
MISPRINTS, MISPRINT_RATIO = 5, 50
# A context word in more passages than this is left out of agreement: its postings (8 bytes each, read by
# range) would be the largest read of the query, and a word that common agrees with nearly everything.
AGREEMENT_MOST_PASSAGES = 20_000


@lru_cache(maxsize=1 << 15)
def _analysed(word: str) -> tuple[str, ...]:
    """Cached: passages repeat their words, so spelling out suggestions analyses the same words often."""
    return tuple(analyze(word))


@dataclass(frozen=True)
class Candidate:
    """A corpus word that the typed word may be a misspelling of."""

    word: str  # as the corpus spells it
    term: str  # its indexed term
    distance: int  # edits from the typed word
    passages: int  # how many passages hold the term


class Speller:
    """Suggestions for one site: its postings say which words exist, its passages how they are spelt."""

    def __init__(
        self,
        bm25: TermIndex,
        chunk_text: Callable[[int], str],
        read_texts: Callable[[Iterable[int]], None],
    ) -> None:
        """`read_texts` reads the passages named in one batch, so that `chunk_text` then finds them."""
        self._bm25 = bm25
        self._chunk_text = chunk_text
        self._read_texts = read_texts
        # (term, typed word) -> its candidates: a visitor refining a query types the same word again
        self.corrections: dict[tuple[str, str], tuple[Candidate, ...]] = {}

    def suggest(self, query: str) -> str | None:
        """`query` with each word the corpus never uses replaced by the likeliest word it does, or None.

        Likeliest: fewest edits, then the most passages shared with the query's other words (the
        "agreement" that makes "rotery position" read "rotary position"), then the commonest.
        """
        filters = field_spans(query)
        words = [m for m in _WORD_RE.finditer(query) if not any(a <= m.start() < b for a, b in filters)]
        # Each step reads what every word needs in one batch: in the browser a batch is a round trip.
        self._bm25.read_entries(term for match in words for term in analyze(match.group())[:1])
        rare = []  # (where, (term, typed word), passages)
        for match in words:
            terms = analyze(match.group())
            passages = self._bm25.doc_freq(terms[0]) if len(terms) == 1 else MISPRINTS + 1
            if passages <= MISPRINTS:
                rare.append((match.start(), (terms[0], match.group()), passages))
        new = list(dict.fromkeys(key for _, key, _ in rare if key not in self.corrections))
        self._bm25.read_near(term for term, _ in new)
        nearest = {key: self._nearest(*key) for key in new}
        self._bm25.read_postings(known for stems in nearest.values() for *_, known in stems)
        self._read_texts(
            doc_id for stems in nearest.values() for *_, known in stems for doc_id in self._spelt_from(known)
        )
        for key in new:
            self.corrections[key] = self._spelt(*key, nearest[key])
        unknown = {}
        for start, key, passages in rare:
            # a word a few passages misprint ("lenght") still has a far commoner right spelling
            unknown[start] = tuple(
                c for c in self.corrections[key] if c.passages >= MISPRINT_RATIO * passages
            )
        if not any(unknown.values()):
            return None
        context = [term for term in analyze(query) if self._bm25.doc_freq(term)]
        agreeing = [term for term in context if self._bm25.doc_freq(term) <= AGREEMENT_MOST_PASSAGES]
        self._bm25.read_postings([c.term for found in unknown.values() for c in found] + agreeing)
        pieces, at = [], 0
        for match in words:
            candidates = unknown.get(match.start())
            if candidates:
                best = min(
                    candidates, key=lambda c: (c.distance, -self._agreement(c.term, context), -c.passages)
                )
                typed = match.group()
                pieces += [
                    query[at : match.start()],
                    best.word.capitalize() if typed[:1].isupper() else best.word,
                ]
                at = match.end()
        return "".join([*pieces, query[at:]])

    def _agreement(self, term: str, context: list[str]) -> int:
        """Passages holding `term` and any of the query's known terms.

        Words in over AGREEMENT_MOST_PASSAGES passages are left out (see there).
        """
        docs = set(self._bm25.doc_ids(term))
        if not docs:
            return 0
        shared: set[int] = set()
        for other in context:
            if self._bm25.doc_freq(other) <= AGREEMENT_MOST_PASSAGES:
                shared.update(docs.intersection(self._bm25.doc_ids(other)))
        return len(shared)

    def _nearest(self, term: str, typed: str) -> list[tuple[int, int, int, str]]:
        """The SPELLED_CANDIDATES stems nearest `typed` as (edits, ending, -passages, stem), none of them
        rare (MIN_PASSAGES).

        Indexed terms are stems, so each is compared with a prefix of the typed word ("adaptaion" is
        "adapt" + an ending).
        """
        lower = typed.lower()
        allowed = _allowed_edits(lower)
        # against the typed word and against its stem: "rotery" is "roteri" as "rotary" is "rotari"
        forms = [(form, set(form)) for form in dict.fromkeys((lower, term))]
        letters = set(lower).union(term)
        near = []
        for known in self._bm25.terms_near(term, max(4, len(lower) - MAX_ENDING), len(lower) + allowed):
            # each letter of `known` the typed word lacks costs an edit: most terms fail here, cheaply
            if not known.isalpha() or len(set(known).difference(letters)) > allowed:
                continue
            distance, ending = allowed + 1, 0
            for form, form_letters in forms:
                if len(set(known).difference(form_letters)) <= allowed:
                    distance, ending = min((distance, ending), stem_distance(known, form, allowed))
            if distance <= allowed:
                passages = self._bm25.doc_freq(known)
                if passages >= MIN_PASSAGES or distance < allowed:
                    near.append((distance, ending, -passages, known))
        return sorted(near)[:SPELLED_CANDIDATES]

    def _spelt(
        self, term: str, typed: str, nearest: list[tuple[int, int, int, str]]
    ) -> tuple[Candidate, ...]:
        """The `_nearest` stems spelt out from passages that hold them, each in its spelling nearest the
        typed word, so the suggestion reads as text."""
        lower = typed.lower()
        allowed = _allowed_edits(lower)
        found: list[Candidate] = []
        for stem_edits, _, minus_passages, known in nearest:
            if found and stem_edits > min(candidate.distance for candidate in found):
                break  # the rest are farther (a stem's edits rarely exceed its nearest word's)
            spelt = [
                (edit_distance(lower, word, allowed), -count, word)
                for word, count in self._spellings(known).items()
            ]
            distance, _, word = min(spelt, default=(allowed + 1, 0, ""))
            if distance <= allowed and known != term:
                found.append(Candidate(word, known, distance, -minus_passages))
        return tuple(found)

    def _spellings(self, term: str) -> Counter[str]:
        """Words that analyse to `term` in up to five passages holding it, spread over the corpus, with
        how often each occurs there (of two spellings as near, the commoner is shown)."""
        words: Counter[str] = Counter()
        for doc_id in self._spelt_from(term):
            words.update(
                w.lower() for w in _WORD_RE.findall(self._chunk_text(doc_id)) if _analysed(w) == (term,)
            )
        return words

    def _spelt_from(self, term: str) -> list[int]:
        """The up to five passages holding `term` whose words `_spellings` reads, spread over the corpus."""
        doc_ids = self._bm25.doc_ids(term)
        if not doc_ids:
            return []
        return list(dict.fromkeys(doc_ids[(len(doc_ids) - 1) * step // 4] for step in range(5)))


def _allowed_edits(lower: str) -> int:
    return 2 if len(lower) >= TWO_EDITS_FROM else 1


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
