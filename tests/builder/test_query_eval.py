"""`query` and `eval` on a built site: the browser's encoder and search core, driven from the CLI."""

import json

import pytest
from support import corpus

from builder.cli import main


def run_json(capsys, *args):
    capsys.readouterr()
    assert main(list(args)) == 0
    return json.loads(capsys.readouterr().out)


def test_a_factual_question_finds_its_page(built_sites, capsys):
    question = corpus.questions()[0]
    [gold] = question["relevant"]
    hits = run_json(capsys, "query", question["query"], "--site", str(built_sites.second), "--json")
    assert len(hits) == 10
    assert hits[0]["arxiv_id"] == gold["arxiv_id"] == "1904.08375"
    page = gold["pages"][0]
    assert any(
        h["arxiv_id"] == gold["arxiv_id"] and h["page_start"] <= page <= h["page_end"] for h in hits[:3]
    )
    assert set(hits[0]["ranks"]) == {"bm25", "dense"}
    assert hits[0]["chunk_id"] and hits[0]["snippet"] and hits[0]["segments"]


def test_filters_in_the_query_restrict_results(built_sites, capsys):
    hits = run_json(
        capsys,
        "query",
        "distillation loss id:2412.19048",
        "--site",
        str(built_sites.second),
        "--json",
        "--k",
        "5",
    )
    assert hits and {h["arxiv_id"] for h in hits} == {"2412.19048"}
    bm25 = run_json(
        capsys,
        "query",
        "grouped query attention",
        "--site",
        str(built_sites.second),
        "--mode",
        "bm25",
        "--json",
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


def test_eval_reports_every_metric_per_level_and_mode(built_sites, generated_corpus, capsys):
    questions = generated_corpus.questions
    summary = run_json(
        capsys, "eval", "--site", str(built_sites.second), "--questions", str(questions), "--json"
    )
    assert summary["questions"] == len(corpus.QUESTION_SPECS)
    for level in ("page", "paper"):
        for mode in ("hybrid", "bm25", "dense"):
            row = summary[level][mode]
            assert set(row) == {"recall@1", "recall@5", "recall@10", "recall@20", "mrr", "ndcg@10"}
            assert all(0.0 <= value <= 1.0 for value in row.values())
            assert row["recall@1"] <= row["recall@5"] <= row["recall@10"] <= row["recall@20"]
    assert summary["paper"]["hybrid"]["recall@5"] == 1.0  # four papers, each question names one
    assert summary["page"]["hybrid"]["recall@20"] >= 0.5
    assert summary["negatives"]["hybrid"]["count"] == len(corpus.NEGATIVE_QUESTIONS)


def test_eval_reports_each_kind_of_question_apart(built_sites, tmp_path, capsys):
    rows = [row for row in corpus.questions() if row["relevant"]]
    for number, row in enumerate(rows):
        row["kind"] = "factual" if number % 3 else "paraphrase"
    questions = tmp_path / "kinds.jsonl"
    questions.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    summary = run_json(
        capsys, "eval", "--site", str(built_sites.second), "--questions", str(questions), "--json"
    )
    for mode in ("hybrid", "bm25", "dense"):
        kinds = summary["page_by_kind"][mode]
        assert {kind: row["questions"] for kind, row in kinds.items()} == {
            "factual": sum(1 for n in range(len(rows)) if n % 3),
            "paraphrase": sum(1 for n in range(len(rows)) if not n % 3),
        }
        for metric in ("recall@10", "mrr", "ndcg@10"):  # the kinds' rows add up to the overall row
            weighted = sum(row[metric] * row["questions"] for row in kinds.values()) / len(rows)
            assert weighted == pytest.approx(summary["page"][mode][metric], abs=1e-3)
    assert main(["eval", "--site", str(built_sites.second), "--questions", str(questions)]) == 0
    table = capsys.readouterr().out
    assert "hybrid, page level, by kind" in table
    assert "paraphrase (" in table and "factual (" in table


def test_eval_names_a_malformed_questions_file(built_sites, tmp_path, capsys):
    questions = tmp_path / "q.jsonl"
    questions.write_text('{"id": "x", "query": "no relevant key"}\n')
    assert main(["eval", "--site", str(built_sites.second), "--questions", str(questions)]) == 2
    assert "q.jsonl:1: not a question line" in capsys.readouterr().err
