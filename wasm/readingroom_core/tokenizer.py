"""BERT-uncased WordPiece in the standard library, giving the same ids as the Rust `tokenizers`.

Character behaviour is not taken from `unicodedata`: the Rust tokenizer uses older category tables
(and Python's differ between 3.11 and Pyodide's 3.14), so the build probes the Rust tokenizer over
every code point and ships the answers as a char-class table (`builder.query_encoder.char_classes.build_char_classes`).
Normalisation is char by char (clean text, CJK spacing, NFD + drop nonspacing marks, lowercase), so
one `str.translate` does all of it plus the punctuation split.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from typing import Any

CHAR_CLASSES_FORMAT = "readingroom-char-classes/1"

_HANGUL_FIRST, _HANGUL_LAST = 0xAC00, 0xD7A3
_WORD_CACHE_LIMIT = 200_000


def _decompose_hangul(code_point: int) -> str:
    """Canonical (NFD) decomposition of a precomposed Hangul syllable; it is arithmetic, not a table."""
    index = code_point - _HANGUL_FIRST
    lead, rest = divmod(index, 21 * 28)
    vowel, trail = divmod(rest, 28)
    jamo = chr(0x1100 + lead) + chr(0x1161 + vowel)
    return jamo + chr(0x11A7 + trail) if trail else jamo


class _RangeSet:
    """Membership in sorted inclusive [first, last] code point ranges."""

    def __init__(self, ranges: list[list[int]]):
        self._firsts = [first for first, _ in ranges]
        self._lasts = [last for _, last in ranges]

    def __contains__(self, code_point: int) -> bool:
        at = bisect_right(self._firsts, code_point) - 1
        return at >= 0 and code_point <= self._lasts[at]


class _SplitTable(dict[int, str]):
    """`str.translate` table filled on first sight of each character.

    Maps a character to its normalised text with word boundaries made explicit: whitespace becomes
    " ", punctuation and CJK characters get a space on each side, dropped characters vanish.
    """

    def __init__(self, char_classes: dict[str, Any]):
        super().__init__()
        normalizer = char_classes["normalizer"]
        pre_tokenizer = char_classes["pre_tokenizer"]
        self._dropped = _RangeSet(normalizer["dropped"])
        self._to_space = _RangeSet(normalizer["whitespace"])
        self._spaced = _RangeSet(normalizer["cjk"])
        self._mapped: dict[int, str] = {int(key): value for key, value in normalizer["mapped"].items()}
        first, last = normalizer["hangul_syllables"]
        self._hangul = range(first, last + 1)
        self._split_on = _RangeSet(pre_tokenizer["whitespace"])
        self._isolated = _RangeSet(pre_tokenizer["punctuation"])

    def __missing__(self, code_point: int) -> str:
        value = "".join(map(self._boundaries, self._normalize(code_point)))
        self[code_point] = value
        return value

    def _normalize(self, code_point: int) -> str:
        if code_point in self._mapped:
            return self._mapped[code_point]
        if code_point in self._dropped:
            return ""
        if code_point in self._to_space:
            return " "
        if code_point in self._spaced:
            return f" {chr(code_point)} "
        if code_point in self._hangul:
            return _decompose_hangul(code_point)
        return chr(code_point)

    def _boundaries(self, char: str) -> str:
        code_point = ord(char)
        if code_point in self._split_on:
            return " "
        if code_point in self._isolated:
            return f" {char} "
        return char


class WordPieceTokenizer:
    """Greedy longest-match WordPiece over a BertNormalizer + BertPreTokenizer front end."""

    def __init__(self, vocab: dict[str, int], char_classes: dict[str, Any], *, max_length: int = 256):
        if char_classes.get("format") != CHAR_CLASSES_FORMAT:
            raise ValueError(
                f"char-class table has format {char_classes.get('format')!r}, expected "
                f"{CHAR_CLASSES_FORMAT!r}; regenerate it with builder.query_encoder.char_classes.build_char_classes"
            )
        wordpiece = char_classes["wordpiece"]
        missing = [
            t
            for t in (wordpiece["unk_token"], wordpiece["cls_token"], wordpiece["sep_token"])
            if t not in vocab
        ]
        missing += [t for t in wordpiece["special_tokens"] if t not in vocab]
        if missing:
            raise ValueError(
                f"vocabulary lacks the special tokens {missing}; vocab and char classes "
                "must come from the same model"
            )
        _check_max_length(max_length)
        self.vocab = vocab
        self.max_length = max_length
        self._prefix = wordpiece["continuing_subword_prefix"]
        self._max_word_chars = wordpiece["max_input_chars_per_word"]
        self._unk_id = vocab[wordpiece["unk_token"]]
        self._cls_id = vocab[wordpiece["cls_token"]]
        self._sep_id = vocab[wordpiece["sep_token"]]
        self._longest_piece = max(map(len, vocab))
        self._table = _SplitTable(char_classes)
        specials = sorted(wordpiece["special_tokens"], key=len, reverse=True)
        self._specials = {token: vocab[token] for token in specials}
        self._special_split = re.compile("(" + "|".join(map(re.escape, specials)) + ")") if specials else None
        self._word_cache: dict[str, tuple[int, ...]] = {}
        self._id_to_token = {i: token for token, i in vocab.items()}

    @classmethod
    def from_data(
        cls, vocab_text: str, char_classes: dict[str, Any], *, max_length: int = 256
    ) -> WordPieceTokenizer:
        """Build from vocab.txt's text (one token per line, id = line number) and the char-class table."""
        lines = vocab_text.split("\n")  # not splitlines(): some tokens are characters it would split on
        if lines and lines[-1] == "":
            lines.pop()
        if not lines:
            raise ValueError("vocab text is empty; pass the contents of the model's vocab.txt")
        vocab = {token.removesuffix("\r"): token_id for token_id, token in enumerate(lines)}
        return cls(vocab, char_classes, max_length=max_length)

    def encode(self, text: str, max_length: int | None = None) -> list[int]:
        """Ids with [CLS] ... [SEP], cut to `max_length` in all (as sentence-transformers truncates)."""
        limit = self.max_length if max_length is None else max_length
        _check_max_length(limit)
        return [self._cls_id, *self._piece_ids(text)[: limit - 2], self._sep_id]

    def tokenize(self, text: str) -> list[str]:
        """Word pieces without special tokens and without truncation."""
        return [self._id_to_token[i] for i in self._piece_ids(text)]

    def count(self, text: str) -> int:
        """Number of word pieces in `text` (no specials, no truncation)."""
        total = 0
        for segment, special_id in self._segments(text):
            if special_id is not None:
                total += 1
                continue
            for word in segment.translate(self._table).split(" "):
                if word:
                    total += len(self._word_ids(word))
        return total

    def _piece_ids(self, text: str) -> list[int]:
        ids: list[int] = []
        for segment, special_id in self._segments(text):
            if special_id is not None:
                ids.append(special_id)
                continue
            for word in segment.translate(self._table).split(" "):
                if word:
                    ids.extend(self._word_ids(word))
        return ids

    def _segments(self, text: str) -> list[tuple[str, int | None]]:
        """Literal special tokens in the raw text (case-sensitive) are kept whole, as the Rust code does."""
        if self._special_split is None:
            return [(text, None)]
        parts = self._special_split.split(text)
        return [(part, self._specials[part] if index % 2 else None) for index, part in enumerate(parts)]

    def _word_ids(self, word: str) -> tuple[int, ...]:
        cached = self._word_cache.get(word)
        if cached is None:
            if len(self._word_cache) >= _WORD_CACHE_LIMIT:
                self._word_cache.clear()
            cached = self._word_cache[word] = self._wordpiece(word)
        return cached

    def _wordpiece(self, word: str) -> tuple[int, ...]:
        if len(word) > self._max_word_chars:
            return (self._unk_id,)
        ids = []
        start = 0
        while start < len(word):
            end = min(len(word), start + self._longest_piece)
            while end > start:
                piece = word[start:end] if start == 0 else self._prefix + word[start:end]
                piece_id = self.vocab.get(piece)
                if piece_id is not None:
                    break
                end -= 1
            else:
                return (self._unk_id,)
            ids.append(piece_id)
            start = end
        return tuple(ids)


def _check_max_length(max_length: int) -> None:
    if max_length < 2:
        raise ValueError(f"max_length={max_length} leaves no room for [CLS] and [SEP]; use at least 2")
