"""`query` and `eval` on a built site: the browser's encoder and search core, driven from the CLI."""

import json

import pytest
from conftest import ADDED_PAPER, SMALL_PAPERS

from builder.cli import main
from builder.paths import DEV_QUESTIONS

pytestmark = pytest.mark.mirror


def run_json(capsys, *args):
    capsys.readouterr()
    assert main(list(args)) == 0
    return json.loads(capsys.readouterr().out)


def test_a_factual_question_finds_its_page(built_sites, capsys):
    hits = run_json(
        capsys,
        "query",
        "How many predicted queries does doc2query append to each document?",
        "--site",
        str(built_sites.second),
        "--json",
    )
    assert len(hits) == 10
    assert hits[0]["arxiv_id"] == "1904.08375"
    assert any(h["arxiv_id"] == "1904.08375" and h["page_start"] <= 2 <= h["page_end"] for h in hits[:3])
    assert set(hits[0]["ranks"]) == {"bm25", "dense"}
    assert hits[0]["chunk_id"] and hits[0]["snippet"] and hits[0]["text"]


def test_filters_in_the_query_restrict_results(built_sites, capsys):
    hits = run_json(
        capsys, "query", "distillation loss id:2412.19048", "--site", str(built_sites.second), "--json", "--k", "5"
    )
    assert hits and {h["arxiv_id"] for h in hits} == {"2412.19048"}
    bm25 = run_json(
        capsys, "query", "grouped query attention", "--site", str(built_sites.second), "--mode", "bm25", "--json"
    )
    assert bm25[0]["arxiv_id"] == "2305.13245" and bm25[0]["ranks"]["dense"] is None


def test_ranking_options_override_the_site_defaults(built_sites, capsys):
    args = ("query", "low-rank weights update", "--site", str(built_sites.second), "--json", "--k", "20")
    shipped = run_json(capsys, *args)
    uncapped = run_json(capsys, *args, "--per-page", "0", "--per-paper", "0", "--per-section", "0")

    def pages(hits):
        return [(h["arxiv_id"], page) for h in hits for page in range(h["page_start"], h["page_end"] + 1)]

    assert len(pages(shipped)) == len(set(pages(shipped)))  # one result per page by default
    assert len(pages(uncapped)) > len(set(pages(uncapped)))
    rrf = run_json(capsys, *args, "--fusion", "rrf")
    assert rrf[0]["score"] == pytest.approx(sum(1 / (60 + r) for r in rrf[0]["ranks"].values() if r))


def test_a_bad_filter_is_a_clear_error(built_sites, capsys):
    assert main(["query", "attention year:twenty", "--site", str(built_sites.second)]) == 2
    assert "year" in capsys.readouterr().err


def test_eval_reports_every_metric_per_level_and_mode(built_sites, tmp_path, capsys):
    papers = {*SMALL_PAPERS, ADDED_PAPER}
    lines = [
        line
        for line in DEV_QUESTIONS.read_text().splitlines()
        if not json.loads(line)["relevant"] or json.loads(line)["relevant"][0]["arxiv_id"] in papers
    ]
    questions = tmp_path / "questions.jsonl"
    questions.write_text("\n".join(lines) + "\n")
    summary = run_json(capsys, "eval", "--site", str(built_sites.second), "--questions", str(questions), "--json")
    assert summary["questions"] == 4
    for level in ("page", "paper"):
        for mode in ("hybrid", "bm25", "dense"):
            row = summary[level][mode]
            assert set(row) == {"recall@1", "recall@5", "recall@10", "recall@20", "mrr", "ndcg@10"}
            assert all(0.0 <= value <= 1.0 for value in row.values())
            assert row["recall@1"] <= row["recall@5"] <= row["recall@10"] <= row["recall@20"]
    assert summary["paper"]["hybrid"]["recall@5"] == 1.0  # four papers, each question names one
    assert summary["page"]["hybrid"]["recall@20"] >= 0.5
    assert summary["negatives"]["hybrid"]["count"] == 3


def test_eval_names_a_malformed_questions_file(built_sites, tmp_path, capsys):
    questions = tmp_path / "q.jsonl"
    questions.write_text('{"id": "x", "query": "no relevant key"}\n')
    assert main(["eval", "--site", str(built_sites.second), "--questions", str(questions)]) == 2
    assert "q.jsonl:1: not a question line" in capsys.readouterr().err


def test_onnx_query_vectors_retrieve_as_well_as_sentence_transformers(built_sites, model_dir):
    """The browser's quantized encoder must not cost retrieval quality (issue 3: >= 99% of nDCG@10)."""
    from builder.evaluation.evaluate import Question, evaluate, load_questions
    from builder.stages.embed import encode, load_model
    from builder.stages.encoder import OnnxQueryEncoder
    from readingroom_core.browser import open_folder

    site = built_sites.second
    opened = open_folder(site)
    manifest, engine = opened.manifest, opened.engine
    papers = {*SMALL_PAPERS, ADDED_PAPER}
    questions = [q for q in load_questions(DEV_QUESTIONS) if q.gold_pages and q.gold_papers <= papers]
    table = json.loads((site / manifest["files"]["chunks"]).read_text())
    for paper in json.loads((site / manifest["files"]["papers"]).read_text())["papers"]:
        chunks = json.loads((site / paper["text"]).read_text())["chunks"]
        for offset in range(0, len(chunks), 4):  # a sentence of every 4th chunk, asked back
            longest = max(chunks[offset]["t"].split(". "), key=len)[:300]
            page = table["page_start"][paper["chunks"][0] + offset]
            questions.append(Question(f"{paper['id']}-{offset}", longest, frozenset({(paper["id"], page)})))
    assert len(questions) > 20
    model = load_model(model_dir)
    onnx = evaluate(engine, OnnxQueryEncoder.from_site(site, manifest).encode, questions)
    reference = evaluate(engine, lambda texts: encode(model, texts).tolist(), questions)
    assert onnx["page"]["dense"]["ndcg@10"] >= 0.99 * reference["page"]["dense"]["ndcg@10"]
    assert onnx["page"]["hybrid"]["ndcg@10"] >= 0.99 * reference["page"]["hybrid"]["ndcg@10"]
