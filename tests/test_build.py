"""The build through its CLI, on real mirror papers: what lands where, and what failures do."""

import json
import re
import shutil

import pytest
from conftest import ADDED_PAPER, SMALL_PAPERS, run_build, write_corpus

from builder.cli import main
from builder.paths import DEV_QUESTIONS

pytestmark = pytest.mark.mirror


def normalise(text: str) -> str:
    text = text.replace("ﬁ", "fi").replace("ﬂ", "fl").replace("ﬀ", "ff")
    text = re.sub(r"(\w)- (\w)", r"\1\2", text)
    return " ".join(text.split()).lower()


def site_chunks(site):
    """Every chunk of a built site, joined from the chunk table and the per-paper text files."""
    manifest = json.loads((site / "manifest.json").read_text())
    table = json.loads((site / manifest["files"]["chunks"]).read_text())
    rows = []
    for paper in json.loads((site / manifest["files"]["papers"]).read_text())["papers"]:
        text = json.loads((site / paper["text"]).read_text())
        for offset, chunk in enumerate(text["chunks"]):
            doc = text["first"] + offset
            start = table["page_start"][doc]
            rows.append(
                {
                    "arxiv_id": paper["id"],
                    "page_start": start,
                    "page_end": start + table["page_span"][doc],
                    "text": chunk["t"],
                    "section": table["sections"][table["section"][doc]],
                }
            )
    assert len(rows) == table["n"] == manifest["counts"]["chunks"]
    return rows


def test_known_text_lands_on_its_page(built_sites):
    chunks = site_chunks(built_sites.second)
    papers = {*SMALL_PAPERS, ADDED_PAPER}
    checked = 0
    for line in DEV_QUESTIONS.read_text().splitlines():
        question = json.loads(line)
        gold = question["relevant"][0] if question["relevant"] else None
        if not gold or gold["arxiv_id"] not in papers:
            continue
        evidence = normalise(question["evidence"])
        hits = [c for c in chunks if c["arxiv_id"] == gold["arxiv_id"] and evidence in normalise(c["text"])]
        assert hits, f"{question['id']}: evidence not found in any chunk"
        assert any(c["page_start"] <= gold["pages"][0] <= c["page_end"] for c in hits), question["id"]
        checked += 1
    assert checked >= 3


def test_stats_and_lock_file(built_sites, capsys):
    capsys.readouterr()
    assert main(["stats", "--out", str(built_sites.second), "--json"]) == 0
    stats = json.loads(capsys.readouterr().out)
    assert stats["papers"] == 4 and stats["failures"] == []
    assert stats["pages"] == 7 + 7 + 7 + 8 and stats["chunks"] > 60 and stats["tokens"] > 8_000
    lock = json.loads((built_sites.second.parent / "second.lock").read_text())["papers"]
    assert set(lock) == {*SMALL_PAPERS, ADDED_PAPER}
    assert lock["1904.08375"]["version"] == "v2" and len(lock["1904.08375"]["pdf_sha256"]) == 64


def test_a_bad_paper_is_reported_and_the_build_goes_on(tmp_path, built_sites, mirror_dir, capsys):
    mirror = tmp_path / "mirror"
    (mirror / "pdf").mkdir(parents=True)
    (mirror / "meta").mkdir()
    for arxiv_id in ["2412.19048", "1904.08375"]:
        shutil.copy(mirror_dir / "pdf" / f"{arxiv_id}.pdf", mirror / "pdf")
        shutil.copy(mirror_dir / "meta" / f"{arxiv_id}.json", mirror / "meta")
    broken = mirror / "pdf" / "1904.08375.pdf"
    broken.write_bytes(broken.read_bytes()[:4000])  # truncated
    meta = json.loads((mirror / "meta" / "1904.08375.json").read_text())
    meta.pop("pdf_sha256")  # the mirror itself does not know the file is broken
    (mirror / "meta" / "1904.08375.json").write_text(json.dumps(meta))
    corpus = write_corpus(tmp_path / "readingroom.toml", ["2412.19048", "1904.08375", "2401.99999"])

    assert run_build(corpus, tmp_path / "site", built_sites.cache, mirror) == 0
    out = capsys.readouterr().out
    assert "papers   1 of 3 listed" in out
    assert re.search(r"\[(fetch|parse)\] 1904\.08375: .+", out)
    assert re.search(r"\[fetch\] 2401\.99999: .+", out)
    manifest = json.loads((tmp_path / "site" / "manifest.json").read_text())
    assert manifest["counts"]["papers"] == 1 and manifest["counts"]["failures"] == 2

    assert run_build(corpus, tmp_path / "site", built_sites.cache, mirror, "--strict") == 1


def test_a_build_where_every_paper_fails_exits_non_zero(tmp_path, built_sites, mirror_dir, capsys):
    corpus = write_corpus(tmp_path / "readingroom.toml", ["2401.99999"])
    assert run_build(corpus, tmp_path / "site", built_sites.cache, mirror_dir) == 1
    assert "every paper failed" in capsys.readouterr().err
