"""The stdlib WordPiece tokenizer gives exactly the Rust tokenizer's ids (sentence-transformers' setup)."""

from __future__ import annotations

import ast
import random
import re
import sys
from pathlib import Path

import pytest
from tokenizers import Tokenizer

import readingroom_core.tokenizer as tokenizer_module
from builder.query_encoder.char_classes import build_char_classes, probed_char_classes
from readingroom_core.tokenizer import WordPieceTokenizer

CODE_POINTS = [cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF]
MAX_LENGTH = 256


@pytest.fixture(scope="module")
def char_classes(model_dir):
    return build_char_classes(model_dir / "tokenizer.json")


@pytest.fixture(scope="module")
def ours(model_dir, char_classes):
    return WordPieceTokenizer.from_data((model_dir / "vocab.txt").read_text(encoding="utf-8"), char_classes)


def rust_tokenizer(model_dir: Path, max_length: int | None) -> Tokenizer:
    """As sentence-transformers runs it: no padding, truncation at its max_seq_length (not the json's 128)."""
    rust = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    rust.no_padding()
    if max_length is None:
        rust.no_truncation()
    else:
        rust.enable_truncation(max_length)
    return rust


@pytest.fixture(scope="module")
def rust(model_dir):
    return rust_tokenizer(model_dir, MAX_LENGTH)


def mismatches(texts: list[str], rust: Tokenizer, encode) -> list[tuple[str, list[int], list[int]]]:
    expected = [encoding.ids for encoding in rust.encode_batch(texts)]
    return [
        (text, want, got) for text, want in zip(texts, expected, strict=True) if (got := encode(text)) != want
    ]


def test_every_code_point_alone_and_inside_words(ours, model_dir):
    """Each code point alone, mid-word, and beside a combining mark and punctuation.

    Many code points share one string (each between spaces, which the pre-tokeniser keeps independent)
    so 1.1M x 3 cases fit in the time budget; a failing block is then narrowed to its code points.
    """
    unlimited = rust_tokenizer(model_dir, None)

    def cases(cp: int) -> str:
        char = chr(cp)
        return f"{char} ab{char}cd \u00e9{char}\u0301."

    blocks = [CODE_POINTS[start : start + 4096] for start in range(0, len(CODE_POINTS), 4096)]
    texts = [" ".join(map(cases, block)) for block in blocks]
    expected = [encoding.ids for encoding in unlimited.encode_batch(texts, add_special_tokens=False)]
    bad_blocks = [
        block
        for block, text, want in zip(blocks, texts, expected, strict=True)
        if ours.encode(text, max_length=10**9)[1:-1] != want
    ]
    culprits = [
        hex(cp)
        for block in bad_blocks[:1]
        for cp in block
        if ours.encode(cases(cp)) != unlimited.encode(cases(cp)).ids
    ]
    assert not bad_blocks, f"{len(bad_blocks)} blocks differ; in the first, code points {culprits[:20]}"


def test_single_character_strings(ours, rust):
    """Truly alone (no surrounding space) for a stride of code points plus every ASCII/Latin-1 one."""
    chars = [chr(cp) for cp in CODE_POINTS if cp < 0x100 or cp % 97 == 0]
    bad = mismatches(chars, rust, ours.encode)
    assert not bad, f"{len(bad)} code points differ, first: {bad[:3]}"


def mirror_lines(mirror_dir: Path, pdf_count: int = 8) -> list[str]:
    import pymupdf

    lines = []
    for pdf in sorted((mirror_dir / "pdf").glob("*.pdf"))[::14][:pdf_count]:
        with pymupdf.open(pdf) as doc:
            for page in list(doc)[:4]:
                lines += [line for line in page.get_text().splitlines() if line.strip()]
    return lines


ODD_PIECES = [
    "∑_{i=1}^{n} x_i² ≤ ∞",
    "∀ε>0 ∃δ",
    "f: ℝⁿ → ℝ",
    "½ ⅓ ¼",
    "x′′ ∂L/∂θ",
    "𝔼[𝐱] 𝒪(n log n)",
    "±√2",
    "naïve café façade",
    "Ångström Øresund",
    "Straße ß ẞ",
    "İstanbul ıi",
    "ΟΔΥΣΣΕΥΣ ΣΊΣΥΦΟΣ ς",
    "Ⅻ ⅻ",
    "ﬁnding ﬂow",
    "Ｆｕｌｌｗｉｄｔｈ １２３",
    "ｶﾀｶﾅ",
    "中文分词测试",
    "日本語のテキスト",
    "한국어 문장입니다",
    "ไทย",
    "עברית",
    "العربية",
    "हिन्दी",
    "ᄀᄁ가각",
    "😀👍🏽👨‍👩‍👧🇫🇷",
    "❤️ ☃ ✓",
    "e\u0301 a\u0308 n\u0303",
    "zero\u200bwidth",
    "soft\u00adhyphen",
    "bom\ufeffhere",
    "nul\x00byte",
    "rep\ufffdlace",
    "tab\tnew\nline\r",
    "nbsp\u00a0thin\u2009ideo\u3000",
    "ctrl\x07\x1b\x7f\x85",
    "pua\ue000\U000f0000",
    "unassigned\U000e0080\u0378",
    "https://arxiv.org/abs/1706.03762v5?x=1&y=2#sec",
    "arXiv:2005.11401",
    "hep-th/9901001v2",
    "doi:10.1145/3292500",
    "user@example.com",
    "C++ C# F#",
    "GPT-3.5-turbo",
    "BERT_base",
    "x86_64",
    "3.14159e-10",
    "1,000,000",
    "[CLS]",
    "[SEP] [MASK]",
    "a[MASK]b",
    "[cls] [Mask]",
    "[ MASK ]",
    "[UNK][PAD]",
    "[[CLS]]",
    "##ing",
    "un##able",
    "supercalifragilisticexpialidocious" * 4,
    "a" * 101,
    "ab" * 50,
    "x" * 100,
    "électroencéphalographie" * 5,
    "don't won't ’quoted’ “double” «guillemets» „low“",
    "—–-‐",
    "…",
    "¿¡",
    "§¶†‡",
    "©®™",
    "°C",
    "€$¥£",
]


@pytest.fixture(scope="module")
def varied_texts(mirror_dir) -> list[str]:
    rng = random.Random(7)
    lines = mirror_lines(mirror_dir)
    texts = list(ODD_PIECES) + rng.sample(lines, min(1500, len(lines)))
    for _ in range(1500):
        parts = rng.sample(lines, 2) + rng.sample(ODD_PIECES, 2)
        rng.shuffle(parts)
        texts.append(rng.choice([" ", "", "\n", "·"]).join(parts))
    page = " ".join(lines)
    texts += [page[start : start + size] for start, size in ((0, 1500), (5000, 3000), (20000, 8000))]
    texts += ["Σ" * 300, "[MASK] " * 300, "中" * 600]
    return texts


@pytest.mark.mirror
def test_varied_strings(ours, rust, varied_texts):
    assert len(varied_texts) > 3000
    assert any(len(rust.encode(text).ids) == MAX_LENGTH for text in varied_texts[-6:])  # truncation is hit
    bad = mismatches(varied_texts, rust, ours.encode)
    assert not bad, f"{len(bad)} of {len(varied_texts)} differ, first: {bad[:2]}"


@pytest.mark.mirror
def test_tokenize_and_count_agree_with_rust_without_truncation(ours, model_dir, varied_texts):
    unlimited = rust_tokenizer(model_dir, None)
    for text, encoding in zip(
        varied_texts, unlimited.encode_batch(varied_texts, add_special_tokens=False), strict=True
    ):
        assert ours.tokenize(text) == encoding.tokens, text
        assert ours.count(text) == len(encoding.ids), text


@pytest.mark.parametrize("max_length", [2, 3, 17, 128, 512])
def test_truncation_matches_rust_at_other_lengths(ours, model_dir, max_length):
    text = "Retrieval-augmented generation (RAG) combines ∑ parametric memory " * 40
    assert ours.encode(text, max_length=max_length) == rust_tokenizer(model_dir, max_length).encode(text).ids


def test_vocab_text_matches_tokenizer_json(ours, model_dir):
    import json

    assert ours.vocab == json.loads((model_dir / "tokenizer.json").read_text())["model"]["vocab"]


def test_count_is_fast_enough_for_chunking(ours):
    import time

    text = (
        "Attention is all you need: the Transformer uses multi-head self-attention (Vaswani et al., 2017). "
        * 2000
    )
    started = time.perf_counter()
    count = ours.count(text)
    elapsed = time.perf_counter() - started
    assert count > 40_000
    assert elapsed < 1.0, f"count took {elapsed:.2f} s for {len(text)} characters"


def test_runtime_module_imports_only_the_standard_library():
    tree = ast.parse(Path(tokenizer_module.__file__).read_text())
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    imported |= {
        node.module.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module
    }
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}
    assert "unicodedata" not in imported


def test_bad_inputs_name_the_fix(model_dir, char_classes):
    vocab_text = (model_dir / "vocab.txt").read_text(encoding="utf-8")
    with pytest.raises(ValueError, match="build_char_classes"):
        WordPieceTokenizer.from_data(vocab_text, {**char_classes, "format": "something-else"})
    with pytest.raises(ValueError, match=re.escape("[CLS]")):
        WordPieceTokenizer.from_data("a\nb\n", char_classes)
    with pytest.raises(ValueError, match="vocab.txt"):
        WordPieceTokenizer.from_data("", char_classes)
    tokenizer = WordPieceTokenizer.from_data(vocab_text, char_classes)
    with pytest.raises(ValueError, match="at least 2"):
        tokenizer.encode("hello", max_length=1)


def test_the_char_class_probe_runs_once_a_process_and_hands_out_copies(model_dir, char_classes):
    """Each build with a new cache exports the query encoder, whose char-class table takes seconds of
    probing: a later export of the same tokenizer gets the first table, as a copy nobody can spoil."""
    probes = probed_char_classes.cache_info()
    again = build_char_classes(model_dir / "tokenizer.json")
    assert probed_char_classes.cache_info().hits == probes.hits + 1  # not probed again
    assert again == char_classes and again is not char_classes
    again["normalizer"]["mapped"].clear()
    assert build_char_classes(model_dir / "tokenizer.json") == char_classes
