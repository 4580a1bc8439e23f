"""Ask's sources sized to the model and split by a question's parts, on the built test site: the source
count follows the prompt budget (the default budget keeps today's 16 candidates), a comparison of two
papers reaches both, hosted presets' model families carry a context window that the prompt fits, and
`ask --prompt-only --json` prints the evidence object the site's worker gets.
"""

import json
import re
from pathlib import Path

import pytest

from builder.cli import main
from builder.paths import REPO_ROOT
from builder.query_encoder import OnnxQueryEncoder
from readingroom_core import answers, sourcing
from readingroom_core.browser import open_folder
from readingroom_core.querysyntax import embedding_text
from readingroom_core.tokens import FIT_MARGIN
from readingroom_core.windows import family_window, known_window

DOC2QUERY, GQA = "1904.08375", "2305.13245"
COMPARISON = "How do doc2query and grouped-query attention differ?"
PROVIDERS_JS = REPO_ROOT / "wasm" / "runtime" / "providers.js"


@pytest.fixture(scope="module")
def site(built_sites) -> Path:
    return built_sites.second


@pytest.fixture(scope="module")
def engine(site):
    return open_folder(site).engine


@pytest.fixture(scope="module")
def encode(site):
    encoder = OnnxQueryEncoder.from_site(site, open_folder(site).manifest)
    return lambda text: [float(x) for x in encoder.encode([embedding_text(text)])[0]]


def test_the_candidate_count_follows_the_budget_from_todays_sixteen():
    counts = [sourcing.candidates_for_budget(b) for b in (500, 2000, 4500, 8000, 16000, 64000, 10**6)]
    assert counts[:3] == [16, 16, 16] and answers.CANDIDATES == 16
    assert counts == sorted(counts) and counts[3] == 16 * 8000 // 4500
    assert counts[-3:] == [sourcing.MAX_CANDIDATES] * 3
    assert sourcing.per_paper_for(16) == 4 and sourcing.per_paper_for(sourcing.MAX_CANDIDATES) > 4
    default = answers.evidence_options()
    assert (default.k, default.per_paper, default.candidates) == (16, 4, 100)  # the 8k model's, as before


def test_more_budget_gives_more_sources_and_the_default_keeps_todays(engine, encode):
    question = "How are the predicted queries decoded, and how many are appended to each document?"
    vector = encode(question)
    small = answers.select_evidence(engine, question, vector, budget=4500)
    today = engine.search(question, vector, answers.evidence_options(16))  # what 16 candidates retrieve
    chosen = {s.chunk_id for s in small.sources}
    assert chosen and [s.chunk_id for s in small.sources] == [
        h.chunk_id for h in today if h.chunk_id in chosen
    ]
    large = answers.select_evidence(engine, question, vector, budget=64000)
    assert len(large.sources) > len(small.sources) and large.left_out == 0
    assert large.prompt_tokens <= 64000
    per_paper = max(sum(s.arxiv_id == p.id for s in large.sources) for p in engine.papers)
    assert 4 < per_paper <= sourcing.per_paper_for(sourcing.candidates_for_budget(64000))
    pages = [(s.arxiv_id, p) for s in large.sources for p in range(s.page_start, s.page_end + 1)]
    assert len(pages) == len(set(pages))  # still one passage per page


@pytest.mark.parametrize(
    ("question", "parts"),
    [
        ("RAG vs RETRO: which freezes the encoder?", ["RAG: which freezes the encoder?", "RETRO: which freezes the encoder?"]),
        ("How do LoRA and prefix tuning differ?", ["How do LoRA differ?", "How do prefix tuning differ?"]),
        ("Compare DPR and BM25 on Natural Questions", ["Compare DPR on Natural Questions", "Compare BM25 on Natural Questions"]),
        ("What is the difference between FiD and RAG?", ["What is the difference between FiD?", "What is the difference between RAG?"]),
        ("Why do RAG and RETRO keep the encoder frozen?", ["Why do RAG keep the encoder frozen?", "Why do RETRO keep the encoder frozen?"]),
        ("What do GPT-3 and T5 both use?", ["What do GPT-3 both use?", "What do T5 both use?"]),
        ("How do precision and recall differ?", []),  # no side names anything
        ("What are the strengths and weaknesses of BM25?", []),
        ("Why do retrieval and ranking matter?", []),
        ("How does LoRA compare with full fine-tuning of the model?", []),
        ("In the model that couples a seq2seq writer and a retriever, how do its two variants differ?", []),
        ("What learning rate did InstructGPT use for supervised fine-tuning?", []),
    ],
)  # fmt: skip
def test_parts_are_found_only_in_comparisons_and_joins_of_named_things(question, parts):
    assert sourcing.question_parts(question) == parts


def test_a_comparison_of_two_papers_brings_both(engine, encode):
    vector = encode(COMPARISON)
    whole = engine.search(COMPARISON, vector, answers.evidence_options(4))
    assert {hit.arxiv_id for hit in whole} == {GQA}  # searched whole, one side fills the sources
    found = answers.select_evidence(engine, COMPARISON, vector, k=4)
    assert {s.arxiv_id for s in found.sources} == {GQA, DOC2QUERY}
    assert found.sources[0].chunk_id == whole[0].chunk_id  # the whole question's best still leads
    plain = "How does grouped-query attention share key-value heads?"
    assert sourcing.question_parts(plain) == []
    kept = answers.select_evidence(engine, plain, encode(plain), k=4)
    searched = engine.search(plain, encode(plain), answers.evidence_options(4))
    assert [s.chunk_id for s in kept.sources] == [h.chunk_id for h in searched]


def hosted_presets() -> dict[str, str]:
    """providers.js's presets that are not on this computer: {name: default model}."""
    presets = {}
    for line in PROVIDERS_JS.read_text(encoding="utf-8").splitlines():
        found = re.match(
            r'\s+(\w+): \{ label: "[^"]+", api: "\w+", base_url: "https://[^"]+", model: "([^"]+)"', line
        )
        if found:
            presets[found[1]] = found[2]
    return presets


def test_every_hosted_presets_model_has_a_window_and_the_prompt_fits_it(engine, encode):
    presets = hosted_presets()
    assert {"openai", "groq", "mistral", "anthropic", "gemini", "together", "openrouter"} <= set(presets)
    question = "How are the predicted queries decoded?"
    vector = encode(question)
    for name, model in presets.items():
        window = known_window(model)
        assert window, (name, model)
        budget, room = answers.request_budget({"question": question, "model": model})
        assert budget * (1 + FIT_MARGIN) + room <= window, (name, model)
        found = answers.select_evidence(engine, question, vector, budget=budget)
        assert found.prompt_tokens * (1 + FIT_MARGIN) + room <= window
        assert len(found.sources) > 16 or found.left_out == 0
    assert family_window("ollama-only-name") is None and known_window("llama3.1") is None  # a local name
    assert answers.request_budget({"question": "q"}) == (answers.DEFAULT_BUDGET, answers.DEFAULT_MAX_TOKENS)
    assert answers.request_budget({"model": "gpt-4o-mini", "budget": 3000}) == (3000, 1500)
    assert answers.request_budget({"model": "gpt-4o-mini", "context": 2048, "max_tokens": 1500}) == (
        1396,
        512,
    )


def test_prompt_only_json_prints_what_the_worker_gets(site, encode, capsys):
    args = ["ask", COMPARISON, "--site", str(site), "--prompt-only", "--json", "--budget", "16000"]
    assert main(args) == 0
    printed = json.loads(capsys.readouterr().out)
    assert {"question", "retrieval_query", "sources", "pages", "prompt", "prompt_tokens", "budget"} <= set(
        printed
    )
    assert printed["budget"] == 16000 and printed["prompt_tokens"] <= 16000
    assert printed["answer_tokens"] == answers.DEFAULT_MAX_TOKENS
    for source in printed["sources"]:
        assert {
            "n",
            "arxiv_id",
            "page_start",
            "page_end",
            "label",
            "title",
            "text",
            "authors",
            "year",
        } <= set(source)
    assert {s["arxiv_id"] for s in printed["sources"]} >= {GQA, DOC2QUERY}
    worker = json.loads(
        open_folder(site).ask_evidence(
            json.dumps({"question": COMPARISON, "history": [], "budget": 16000, "max_tokens": 1500}),
            encode(answers.retrieval_query(COMPARISON)),
        )
    )
    assert printed == worker
    assert main(["ask", COMPARISON, "--site", str(site), "--prompt-only", "--json", "--budget", "5"]) == 2
    assert "too small" in capsys.readouterr().err
