"""The search core gives the same answers in Pyodide (Python 3.14 in Node, as on the site) as in CPython.

Query vectors are computed once in CPython and handed to both, so only the core is compared. Needs node
and `wasm/node_modules` (`npm ci --prefix wasm`); skipped with the reason when either is missing.
"""

import json
import random
from pathlib import Path

import pytest
from support import corpus
from support.citation_cases import CASES, EVIDENCE
from support.pyodide import encode_queries, missing_runtime, run_in_cpython, run_in_pyodide

from builder.site.runtime import build_core_wheel

pytestmark = pytest.mark.pyodide

MODES = ["bm25", "dense", "hybrid"]
SCORE_TOLERANCE = 1e-9  # math.sumprod (3.12+) rounds differently from 3.11's sum(map(mul, ...))
KEYWORD_QUERIES = [
    "distillation",
    "knowledge distillation loss",
    "doc2query",
    "grouped-query attention heads",
    '"key-value heads"',
    '"predicted queries" expansion',
    "year:2023 decoding",
    "cat:cs.IR passages",
    "id:2412.19048 inference speed",
    "author:lindqvist queries",
    "Naïve Café résumé",
    "β-VAE α=0.1 GPT-3",
    "xyzzyqq plugh",
    "TriviaQA MS MARCO",
    "",
]


@pytest.fixture(scope="module")
def runtime_ready():
    reason = missing_runtime()
    if reason:
        pytest.skip(reason)


@pytest.fixture(scope="module")
def wheel(runtime_ready, tmp_path_factory) -> Path:
    return build_core_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="module")
def site(runtime_ready, built_sites) -> Path:
    return built_sites.second


def dev_queries() -> list[str]:
    return corpus.queries()


def test_the_wheel_holds_only_the_core(wheel):
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    packages = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert packages == {"readingroom_core"}
    assert "readingroom_core/engine.py" in names and "readingroom_core/readers/hnsw.py" in names


def assert_same_hits(expected: list[dict], got: list[dict], where: str) -> None:
    assert [hit["doc_id"] for hit in got] == [hit["doc_id"] for hit in expected], where
    for want, have in zip(expected, got, strict=True):
        assert have["score"] == pytest.approx(want["score"], abs=SCORE_TOLERANCE, rel=0), where
        exact = {name: value for name, value in want.items() if name != "score"}
        assert {name: have[name] for name in exact} == exact, where


def test_searches_match_cpython_in_every_mode(site, wheel):
    queries = [*dev_queries(), *KEYWORD_QUERIES]
    assert len(queries) >= 30
    vectors = encode_queries(site, queries)
    cases = [{"query": query, "vector": vector} for query, vector in zip(queries, vectors, strict=True)]
    request = {"op": "search", "site": str(site), "cases": cases, "modes": MODES, "k": 10}
    expected = run_in_cpython(request)
    got = run_in_pyodide(request, wheel)
    assert got["python"].startswith("cpython 3.14") and "emscripten" in got["python"]
    assert len(got["results"]) == len(cases)
    for case, want, have in zip(cases, expected["results"], got["results"], strict=True):
        for mode in MODES:
            assert_same_hits(want[mode], have[mode], f"{mode} {case['query']!r}")
    # The comparison must have had something to compare: most queries find hits in every mode.
    found = sum(all(want[mode] for mode in MODES) for want in expected["results"])
    assert found >= 35
    assert any(
        marked for want in expected["results"] for hit in want["bm25"] for _, marked in hit["segments"]
    )


def test_the_browser_boundary_answers_as_in_cpython(site, wheel):
    """What worker.js calls (readingroom_core.browser): token ids, prepared searches and their JSON
    replies, float32 vectors and facet filters included, the same in Pyodide as in CPython."""
    named = ["arXiv:2305.13245v2", "Carvalho et al. 2023"]  # the generated GQA paper, by id and by author
    queries = [
        *dev_queries()[:10],
        *KEYWORD_QUERIES,
        *named,
        "zzqx",
        "grouped query attenton",
        "year:abc attention",
    ]
    vectors = encode_queries(site, queries)
    cases = [
        {"query": query, "k": 10, "mode": MODES[n % 3], "vector": vector, "filters": {}}
        for n, (query, vector) in enumerate(zip(queries, vectors, strict=True))
    ]
    cases.append({"query": "retrieval", "k": 5, "mode": "bm25", "filters": {"categories": ["cs.CL"]}})
    cases.append({"query": "retrieval", "k": 5, "mode": "bm25", "filters": {"tags": ["no-such-tag"]}})
    request = {"op": "browser", "site": str(site), "cases": cases}
    expected = run_in_cpython(request)["replies"]
    got = run_in_pyodide(request, wheel)["replies"]
    for case, want, have in zip(cases, expected, got, strict=True):
        where = f"{case['mode']} {case['query']!r}"
        assert have["ids"] == want["ids"], where
        assert have.get("error") == want.get("error"), where
        assert (have.get("weak"), have.get("suggestion")) == (want.get("weak"), want.get("suggestion")), where
        assert have.get("missing") == want.get("missing"), where
        assert_same_hits(want.get("hits", []), have.get("hits", []), where)
    for query in named:  # navigation: the named paper's opening passage first, in every mode
        first = expected[queries.index(query)]["hits"][0]
        assert (first["arxiv_id"], first["page_start"]) == ("2305.13245", 1), query
    assert expected[-4]["suggestion"] == "grouped query attention"
    assert "is not a year filter" in expected[-3]["error"]
    assert expected[-2]["hits"] and expected[-1] == {
        "ids": expected[-1]["ids"],
        "hits": [],
        "weak": False,
        "suggestion": None,
        "embeds": True,
        "missing": [],
    }
    assert sum(bool(reply.get("hits")) for reply in expected) >= 20


def varied_strings(count: int, seed: int = 7) -> list[str]:
    """Hand-picked hard cases, then random mixes of code points from many scripts and symbol blocks."""
    fixed = [
        "Hello, world!",
        "naïve café résumé façade",
        "Ångström ÅSTRÖM straße ΣΊΣΥΦΟΣ",
        "ﬁnancial ﬂow ﬀ",
        "日本語のテキスト処理",
        "中文分词测试",
        "한국어 형태소 분석",
        "Привет, мир",
        "مرحبا بالعالم",
        "שלום עולם",
        "हिन्दी पाठ",
        "ภาษาไทย",
        "emoji 😀🚀👩‍👩‍👧 flags 🇫🇷 skin 👍🏽",
        "∑ᵢ xᵢ² ≤ ∫₀^∞ e^{-x} dx ≈ π/√2",
        "𝑥 + 𝐖𝐡 = 𝛼 𝟎",
        "α-β γ_δ ε→ζ",
        "[CLS] keep [SEP] [MASK] [cls] [UNK][PAD]",
        "e\u0301 a\u0308 n\u0303",
        "zero\u200bwidth\u200djoiner\ufeffbom",
        "tabs\tand\nnewlines\r\n",
        "\x00\x01control\x7f",
        "GPT-3.5-turbo",
        "arXiv:2005.11401v2",
        "https://example.org/a?b=c&d=e",
        "x" * 150,
        "supercalifragilisticexpialidocious",
        "  ",
        "",
        "ǅungla ǈudevit",
        "İstanbul ıi",
        "ꙮ",
        "\U000e0001tag",
        "\U0010fffd private",
        "⁰¹²³ ½ ¾",
    ]
    blocks = [
        (0x20, 0x7E),
        (0xA0, 0x24F),
        (0x300, 0x36F),
        (0x370, 0x3FF),
        (0x400, 0x4FF),
        (0x590, 0x6FF),
        (0x900, 0x97F),
        (0xE00, 0xE7F),
        (0x1100, 0x11FF),
        (0x2000, 0x206F),
        (0x2190, 0x22FF),
        (0x3000, 0x30FF),
        (0x4E00, 0x4FFF),
        (0xAC00, 0xAD00),
        (0xFB00, 0xFB4F),
        (0xFE00, 0xFE0F),
        (0xFF00, 0xFFEF),
        (0x1D400, 0x1D7FF),
        (0x1F300, 0x1FAFF),
        (0x2FFFE, 0x30010),
        (0xE0000, 0xE007F),
    ]
    rng = random.Random(seed)
    mixed = []
    while len(fixed) + len(mixed) < count:
        pieces = []
        for _ in range(rng.randint(1, 8)):
            first, last = rng.choice(blocks)
            pieces.append("".join(chr(rng.randint(first, last)) for _ in range(rng.randint(1, 12))))
        mixed.append(rng.choice([" ", "", "-", ". "]).join(pieces))
    return fixed + mixed


def test_wordpiece_ids_match_cpython(site, wheel):
    manifest = json.loads((site / "manifest.json").read_text(encoding="utf-8"))
    texts = varied_strings(400)
    request = {
        "op": "tokenize",
        "site": str(site),
        "vocab": manifest["files"]["vocab"],
        "char_classes": manifest["files"]["char_classes"],
        "texts": texts,
    }
    expected = run_in_cpython(request)["ids"]
    got = run_in_pyodide(request, wheel)["ids"]
    mismatches = [text for text, want, have in zip(texts, expected, got, strict=True) if want != have]
    assert not mismatches, f"{len(mismatches)} strings tokenize differently, e.g. {mismatches[:3]!r}"
    assert sum(len(ids) for ids in expected) > 10 * len(texts)


@pytest.mark.pyodide
def test_pyodide_verifies_like_cpython(tmp_path):
    reason = missing_runtime()
    if reason:
        pytest.skip(reason)
    request = {
        "op": "verify",
        "cases": [{"answer": answer, "evidence": EVIDENCE} for _, answer, _, _ in CASES],
    }
    in_pyodide = run_in_pyodide(request, build_core_wheel(tmp_path))
    assert in_pyodide["python"].startswith("cpython 3.14") and "emscripten" in in_pyodide["python"]
    assert in_pyodide["results"] == run_in_cpython(request)["results"]
    assert [[c["status"] for c in r["citations"]] for r in in_pyodide["results"]] == [c[2] for c in CASES]
