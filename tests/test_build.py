"""The build through its CLI, on the generated papers from the loopback arXiv: what lands where, and
what failures do (test_mirror_site.py checks the same on real mirror papers)."""

import json
import re

from conftest import ADDED_PAPER, SMALL_PAPERS, run_build, write_corpus
from support import corpus

from builder.cli import main
from readingroom_core.browser import open_folder
from readingroom_core.formats.chunks import read_chunk_table
from readingroom_core.ranges import folder_reader


def normalise(text: str) -> str:
    text = text.replace("ﬁ", "fi").replace("ﬂ", "fl").replace("ﬀ", "ff")
    text = re.sub(r"(\w)- (\w)", r"\1\2", text)
    return " ".join(text.split()).lower()


def site_chunks(site):
    """Every chunk of a built site, joined from the chunk table and the texts file."""
    manifest = json.loads((site / "manifest.json").read_text())
    table = read_chunk_table(folder_reader(site)(manifest["files"]["chunks"]))
    engine = open_folder(site).engine
    rows = []
    for paper in json.loads(folder_reader(site)(manifest["files"]["papers"]).decode("utf-8"))["papers"]:
        first, count = paper["chunks"]
        for doc in range(first, first + count):
            chunk = engine.chunk(doc)
            start = table.page_start[doc]
            rows.append(
                {
                    "arxiv_id": paper["id"],
                    "page_start": start,
                    "page_end": table.page_end(doc),
                    "text": chunk.text,
                    "section": table.section_of(doc),
                }
            )
    assert len(rows) == table.n == manifest["counts"]["chunks"]
    return rows


def assert_evidence_on_gold_pages(chunks, questions_file, papers) -> int:
    """Every answerable question's evidence sentence is in a chunk whose page span covers its gold page."""
    checked = 0
    for line in questions_file.read_text().splitlines():
        question = json.loads(line)
        gold = question["relevant"][0] if question["relevant"] else None
        if not gold or gold["arxiv_id"] not in papers:
            continue
        evidence = normalise(question["evidence"])
        hits = [c for c in chunks if c["arxiv_id"] == gold["arxiv_id"] and evidence in normalise(c["text"])]
        assert hits, f"{question['id']}: evidence not found in any chunk"
        assert any(c["page_start"] <= gold["pages"][0] <= c["page_end"] for c in hits), question["id"]
        checked += 1
    return checked


def test_known_text_lands_on_its_page(built_sites, generated_corpus):
    chunks = site_chunks(built_sites.second)
    checked = assert_evidence_on_gold_pages(chunks, generated_corpus.questions, {*SMALL_PAPERS, ADDED_PAPER})
    assert checked == len(corpus.QUESTION_SPECS)
    added = [c for c in chunks if c["arxiv_id"] == ADDED_PAPER]
    assert {c["section"] for c in added} >= {"2 Variational Renormalization", "4 Ising Model"}
    assert not any("Kadanoff" in c["text"] for c in added)  # the reference list is kept out of the chunks


def test_stats_and_lock_file(built_sites, capsys):
    capsys.readouterr()
    assert main(["stats", "--out", str(built_sites.second), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["papers"] == 4 and stats["failures"] == []
    assert stats["pages"] == sum(paper.page_count() for paper in corpus.papers().values())
    assert stats["chunks"] > 60 and stats["tokens"] > 8_000
    lock = json.loads((built_sites.second.parent / "second.lock").read_text())["papers"]
    assert set(lock) == {*SMALL_PAPERS, ADDED_PAPER}
    assert lock["1904.08375"]["version"] == "v2" and len(lock["1904.08375"]["pdf_sha256"]) == 64


def test_a_bad_paper_is_reported_and_the_build_goes_on(tmp_path, built_sites, capsys):
    mirror = corpus.write_mirror(tmp_path / "mirror", ["2412.19048", "1904.08375"])
    broken = mirror / "pdf" / "1904.08375.pdf"
    broken.write_bytes(broken.read_bytes()[:4000])  # truncated
    meta = json.loads((mirror / "meta" / "1904.08375.json").read_text())
    meta.pop("pdf_sha256")  # the mirror itself does not know the file is broken
    (mirror / "meta" / "1904.08375.json").write_text(json.dumps(meta))
    listed = write_corpus(tmp_path / "readingroom.toml", ["2412.19048", "1904.08375", "2401.99999"])

    assert run_build(listed, tmp_path / "site", built_sites.cache, mirror) == 0
    out = capsys.readouterr().out
    assert "papers   1 of 3 listed" in out
    assert re.search(r"\[(fetch|parse)\] 1904\.08375: .+", out)
    assert re.search(r"\[fetch\] 2401\.99999: .+", out)
    manifest = json.loads((tmp_path / "site" / "manifest.json").read_text())
    assert manifest["counts"]["papers"] == 1 and manifest["counts"]["failures"] == 2

    assert run_build(listed, tmp_path / "site", built_sites.cache, mirror, "--strict") == 1


def test_a_build_where_every_paper_fails_exits_non_zero(tmp_path, built_sites, generated_corpus, capsys):
    listed = write_corpus(tmp_path / "readingroom.toml", ["2401.99999"])
    assert run_build(listed, tmp_path / "site", built_sites.cache, generated_corpus) == 1
    captured = capsys.readouterr()
    assert "every paper failed" in captured.err
    assert "2401.99999 not found on arXiv" in captured.out
