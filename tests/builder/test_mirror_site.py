"""The build, query and eval on real arXiv papers from ../shared/arxiv-mirror and the dev questions.

The rest of the suite builds the generated papers (tests/support/corpus.py), so a clone without the
mirror runs every end-to-end test; these check the same things on four real PDFs (two-column layouts,
ligatures, real reference lists) and skip when the mirror is absent.
"""

import json

import pytest
from support.builds import MIRROR_PAPERS
from support.built_chunks import assert_evidence_on_gold_pages, site_chunks

from builder.cli import main
from builder.paths import DEV_QUESTIONS

pytestmark = pytest.mark.mirror

PAPERS = set(MIRROR_PAPERS)


def run_json(capsys, *args):
    capsys.readouterr()
    assert main(list(args)) == 0
    return json.loads(capsys.readouterr().out)


def test_dev_question_evidence_lands_on_its_page(mirror_site):
    assert assert_evidence_on_gold_pages(site_chunks(mirror_site), DEV_QUESTIONS, PAPERS) >= 3


def test_stats_count_the_real_pages(mirror_site, capsys):
    stats = run_json(capsys, "stats", "--out", str(mirror_site), "--json")
    assert stats["papers"] == 4 and stats["failures"] == []
    assert stats["pages"] == 7 + 7 + 7 + 8 and stats["chunks"] > 60 and stats["tokens"] > 8_000
    lock = json.loads((mirror_site.parent / "readingroom.lock").read_text())["papers"]
    assert lock["1904.08375"]["version"] == "v2" and len(lock["1904.08375"]["pdf_sha256"]) == 64


def test_a_factual_question_finds_its_page(mirror_site, capsys):
    query = "How many predicted queries does doc2query append to each document?"
    hits = run_json(capsys, "query", query, "--site", str(mirror_site), "--json")
    assert hits[0]["arxiv_id"] == "1904.08375"
    assert any(h["arxiv_id"] == "1904.08375" and h["page_start"] <= 2 <= h["page_end"] for h in hits[:3])


def test_eval_on_the_dev_questions_of_these_papers(mirror_site, tmp_path, capsys):
    lines = [
        line
        for line in DEV_QUESTIONS.read_text().splitlines()
        if not json.loads(line)["relevant"] or json.loads(line)["relevant"][0]["arxiv_id"] in PAPERS
    ]
    questions = tmp_path / "questions.jsonl"
    questions.write_text("\n".join(lines) + "\n")
    summary = run_json(capsys, "eval", "--site", str(mirror_site), "--questions", str(questions), "--json")
    assert summary["questions"] == 4
    assert summary["paper"]["hybrid"]["recall@5"] == 1.0  # four papers, each question names one
    assert summary["page"]["hybrid"]["recall@20"] >= 0.5
    assert summary["negatives"]["hybrid"]["count"] == 3


def test_onnx_query_vectors_retrieve_as_well_as_sentence_transformers(mirror_site, model_dir):
    """The browser's quantized encoder must not cost retrieval quality (issue 3: >= 99% of nDCG@10).

    On real papers: the generated corpus's templated sentences make near-ties that a 1e-3 change in a
    query vector reorders, which measures the corpus, not the encoder."""
    from builder.embedding import encode, load_model
    from builder.evaluation.evaluate import Question, evaluate, load_questions
    from builder.query_encoder import OnnxQueryEncoder
    from readingroom_core.browser import open_folder

    site = mirror_site
    opened = open_folder(site)
    manifest, engine = opened.manifest, opened.engine
    questions = [q for q in load_questions(DEV_QUESTIONS) if q.gold_pages and q.gold_papers <= PAPERS]
    for paper in engine.papers:
        chunks = [engine.chunk(doc_id) for doc_id in paper.doc_ids]
        for offset in range(0, len(chunks), 4):  # a sentence of every 4th chunk, asked back
            longest = max(chunks[offset].text.split(". "), key=len)[:300]
            page = engine.chunks.page_start[paper.first_chunk + offset]
            questions.append(Question(f"{paper.id}-{offset}", longest, frozenset({(paper.id, page)})))
    assert len(questions) > 20
    model = load_model(model_dir)
    onnx = evaluate(engine, OnnxQueryEncoder.from_site(site, manifest).encode, questions)
    reference = evaluate(engine, lambda texts: encode(model, texts).tolist(), questions)
    assert onnx["page"]["dense"]["ndcg@10"] >= 0.99 * reference["page"]["dense"]["ndcg@10"]
    assert onnx["page"]["hybrid"]["ndcg@10"] >= 0.99 * reference["page"]["hybrid"]["ndcg@10"]
