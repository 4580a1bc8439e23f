"""The char-class table: what the model's Rust tokenizer does with every code point (drops, maps, splits
on or isolates it), so the stdlib `WordPieceTokenizer` replays it exactly in the browser."""

from __future__ import annotations

import copy
import functools
import json
import unicodedata
from pathlib import Path

from readingroom_core.tokenizer import CHAR_CLASSES_FORMAT

_HANGUL = (0xAC00, 0xD7A3)
_SURROGATES = range(0xD800, 0xE000)


def build_char_classes(tokenizer_json: Path) -> dict:
    """Probe the Rust tokenizer over every code point; the stdlib tokenizer replays the answers. The probe
    asks about 1.1 million code points twice, so the table is kept for the process, keyed by the file's
    text: every later export of the same tokenizer (a build with a new cache) gets a copy of it."""
    return copy.deepcopy(
        probed_char_classes(Path(tokenizer_json).read_text(encoding="utf-8"), str(tokenizer_json))
    )


@functools.lru_cache(maxsize=2)
def probed_char_classes(tokenizer_text: str, tokenizer_json: str) -> dict:
    from tokenizers import Tokenizer

    spec = json.loads(tokenizer_text)
    _require_bert_wordpiece(spec, tokenizer_json)
    tokenizer = Tokenizer.from_str(tokenizer_text)
    code_points = [cp for cp in range(0x110000) if cp not in _SURROGATES]

    dropped, whitespace, cjk, mapped = [], [], [], {}
    for cp in code_points:
        char = chr(cp)
        out = tokenizer.normalizer.normalize_str(char)
        if out == char:
            continue
        if out == "":
            dropped.append(cp)
        elif out == " ":
            whitespace.append(cp)
        elif out == f" {char} ":
            cjk.append(cp)
        elif not (_HANGUL[0] <= cp <= _HANGUL[1] and out == unicodedata.normalize("NFD", char)):
            mapped[str(cp)] = out
    hangul_left = [cp for cp in range(_HANGUL[0], _HANGUL[1] + 1) if str(cp) in mapped]
    if hangul_left:
        raise ValueError(
            f"{tokenizer_json}: Hangul syllables {hangul_left[:5]} do not normalise to their "
            "arithmetic NFD; the char-class table cannot describe this tokenizer"
        )

    split_on, isolated = [], []
    for cp in code_points:
        words = [word for word, _ in tokenizer.pre_tokenizer.pre_tokenize_str(f"a{chr(cp)}a")]
        if words == ["a", "a"]:
            split_on.append(cp)
        elif words == ["a", chr(cp), "a"]:
            isolated.append(cp)

    model = spec["model"]
    specials = sorted(token["content"] for token in spec["added_tokens"])
    return {
        "format": CHAR_CLASSES_FORMAT,
        "normalizer": {
            "dropped": _ranges(dropped),
            "whitespace": _ranges(whitespace),
            "cjk": _ranges(cjk),
            "hangul_syllables": list(_HANGUL),
            "mapped": mapped,
        },
        "pre_tokenizer": {"whitespace": _ranges(split_on), "punctuation": _ranges(isolated)},
        "wordpiece": {
            "unk_token": model["unk_token"],
            "continuing_subword_prefix": model["continuing_subword_prefix"],
            "max_input_chars_per_word": model["max_input_chars_per_word"],
            "cls_token": spec["post_processor"]["single"][0]["SpecialToken"]["id"],
            "sep_token": spec["post_processor"]["single"][-1]["SpecialToken"]["id"],
            "special_tokens": specials,
        },
    }


def _require_bert_wordpiece(spec: dict, source: str) -> None:
    """The table replays a char-by-char BertNormalizer; other pipelines would be silently wrong."""
    found = (
        (spec.get("normalizer") or {}).get("type"),
        (spec.get("pre_tokenizer") or {}).get("type"),
        spec["model"].get("type"),
        (spec.get("post_processor") or {}).get("type"),
    )
    if found != ("BertNormalizer", "BertPreTokenizer", "WordPiece", "TemplateProcessing"):
        raise ValueError(
            f"{source}: expected BertNormalizer/BertPreTokenizer/WordPiece/TemplateProcessing, "
            f"found {found}; the stdlib tokenizer only reproduces BERT WordPiece models"
        )
    bad = [t["content"] for t in spec["added_tokens"] if t["normalized"] or t["lstrip"] or t["rstrip"]]
    if bad:
        raise ValueError(f"{source}: added tokens {bad} are normalised or strip spaces; unsupported")


def _ranges(code_points: list[int]) -> list[list[int]]:
    """Sorted code points as inclusive [first, last] runs (keeps the JSON small)."""
    runs: list[list[int]] = []
    for cp in code_points:
        if runs and runs[-1][1] == cp - 1:
            runs[-1][1] = cp
        else:
            runs.append([cp, cp])
    return runs
