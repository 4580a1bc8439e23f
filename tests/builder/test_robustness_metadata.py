"""Metadata with wrong types, in a generated mirror and in the cache: one failure line naming the file
and the field, the rest builds, nothing is mangled."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from support.builds import SMALL_PAPERS, run_build, write_corpus
from support.pdfgen import write_paper

from builder.models import PaperRef
from builder.stages.fetch import FetchOptions, cache_paper_dir, fetch_papers

GOOD = {
    "arxiv_id": "",
    "version": "v1",
    "title": "A Synthetic Study of Parsing",
    "authors": ["Alice Smith", "Bob Jones"],
    "abstract": "We parse synthetic papers.",
    "categories": ["cs.CL"],
    "primary_category": "cs.CL",
    "published": "2025-01-02",
    "version_date": "2025-01-02",
}

# id -> (what replaces the good record, the words the failure must hold; None: the paper is fine)
CASES = {
    "2501.00001": ({}, None),
    "2501.00002": (
        {"categories": 5},
        '\'categories\' must be a list of strings such as ["…", "…"], not a number (5)',
    ),
    "2501.00003": ({"categories": None, "abstract": None}, None),  # null optional fields read as empty
    "2501.00004": (
        {"authors": "Alice Smith"},
        '\'authors\' must be a list of strings such as ["…", "…"], not a string ("Alice Smith")',
    ),
    "2501.00005": ({"version": 1}, "'version' must be a string such as \"v1\", not a number (1)"),
    "2501.00006": ({"title": None}, "'title' is missing"),
    "2501.00007": ({"title": ["x"]}, "'title' must be a string, not a list"),
    "2501.00008": ({"authors": ["Alice", 3]}, "'authors' must be a list of strings"),
    "2501.00009": ({"pdf_sha256": 7}, "'pdf_sha256' must be a string, not a number (7)"),
    "2501.00010": ("top-level list", "must hold one JSON object {…}, not a list"),
    "2501.00011": ("not json", "is not valid JSON"),
    "2501.00012": ("latin-1", "is not UTF-8 text"),
}


def write_record(path: Path, arxiv_id: str, change) -> None:
    if change == "top-level list":
        path.write_text(json.dumps([{**GOOD, "arxiv_id": arxiv_id}]))
    elif change == "not json":
        path.write_text('{"title": "cut off')
    elif change == "latin-1":
        path.write_bytes(json.dumps({**GOOD, "title": "Caf\u00e9"}, ensure_ascii=False).encode("latin-1"))
    else:
        record = {**GOOD, "arxiv_id": arxiv_id}
        record.update(change)
        record = {k: v for k, v in record.items() if not (k == "title" and v is None)}
        path.write_text(json.dumps(record))


@pytest.fixture(scope="module")
def hostile_mirror(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("hostile-mirror")
    (root / "pdf").mkdir()
    (root / "meta").mkdir()
    pdf = write_paper(root / "paper.pdf")
    for arxiv_id, (change, _) in CASES.items():
        shutil.copy(pdf, root / "pdf" / f"{arxiv_id}.pdf")
        write_record(root / "meta" / f"{arxiv_id}.json", arxiv_id, change)
    return root


def test_each_bad_mirror_record_is_one_failure_naming_file_and_field(tmp_path, hostile_mirror):
    options = FetchOptions(cache_dir=tmp_path / "cache", mirror=hostile_mirror, offline=True)
    result = fetch_papers([PaperRef(i) for i in CASES], options, progress=False)

    failures = {f.arxiv_id: f for f in result.failures}
    for arxiv_id, (_, expected) in CASES.items():
        if expected is None:
            assert arxiv_id not in failures
            continue
        failure = failures.pop(arxiv_id)
        assert failure.reason.startswith(f"the mirror's meta/{arxiv_id}.json"), failure.reason
        assert expected in failure.reason, failure.reason
        assert "--offline" not in failure.reason and "delete" not in failure.hint
    assert failures == {}
    fine = {p.meta.arxiv_id: p.meta for p in result.papers}
    assert set(fine) == {"2501.00001", "2501.00003"}
    assert fine["2501.00001"].authors == ["Alice Smith", "Bob Jones"]
    assert fine["2501.00001"].versioned_id == "2501.00001v1"
    assert fine["2501.00003"].categories == [] and fine["2501.00003"].abstract == ""


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        (lambda text: "{not json", "is not valid JSON"),
        (lambda text: json.dumps({**json.loads(text), "categories": 5}), "'categories' must be a list"),
        (
            lambda text: json.dumps({**json.loads(text), "withdrawn": "no"}),
            "'withdrawn' must be true or false",
        ),
        (lambda text: json.dumps([json.loads(text)]), "must hold one JSON object"),
    ],
)
def test_a_damaged_cache_record_is_named_offline_and_repaired_from_the_mirror(
    tmp_path, hostile_mirror, damage, expected
):
    cache = tmp_path / "cache"
    ref = PaperRef("2501.00001")
    assert fetch_papers([ref], FetchOptions(cache_dir=cache, mirror=hostile_mirror), progress=False).papers
    # a copy into the cache, as an online fetch leaves it
    folder = cache_paper_dir(cache, "2501.00001", "v1")
    folder.mkdir(parents=True)
    shutil.copy(hostile_mirror / "pdf" / "2501.00001.pdf", folder / "paper.pdf")
    (folder / "meta.json").write_text(json.dumps({**GOOD, "arxiv_id": "2501.00001", "updated": "2025-01-02"}))
    meta = folder / "meta.json"
    meta.write_text(damage(meta.read_text()))

    offline = fetch_papers([ref], FetchOptions(cache_dir=cache, offline=True), progress=False)
    [failure] = offline.failures
    assert failure.reason.startswith("the cached papers/2501.00001/v1/meta.json"), failure.reason
    assert expected in failure.reason and "--offline was given" in failure.reason

    with_mirror = fetch_papers(
        [ref], FetchOptions(cache_dir=cache, mirror=hostile_mirror, offline=True), progress=False
    )
    assert with_mirror.failures == [] and with_mirror.papers[0].source == "mirror"


def test_a_build_with_bad_metadata_builds_the_rest(
    tmp_path, built_sites, generated_mirror, hostile_mirror, capsys
):
    mirror = tmp_path / "mirror"
    shutil.copytree(hostile_mirror, mirror)
    good = SMALL_PAPERS[0]
    shutil.copy(generated_mirror / "pdf" / f"{good}.pdf", mirror / "pdf")
    shutil.copy(generated_mirror / "meta" / f"{good}.json", mirror / "meta")
    bad = ["2501.00002", "2501.00004", "2501.00005", "2501.00010", "2501.00011"]
    corpus = write_corpus(tmp_path / "readingroom.toml", [good, *bad])

    assert run_build(corpus, tmp_path / "site", built_sites.cache, mirror) == 0
    out = capsys.readouterr().out
    assert f"papers   1 of {1 + len(bad)} listed" in out
    for arxiv_id in bad:
        assert re.search(rf"\[fetch\] {re.escape(arxiv_id)}: the mirror's meta/{arxiv_id}\.json", out)
    manifest = json.loads((tmp_path / "site" / "manifest.json").read_text())
    assert manifest["counts"] == {**manifest["counts"], "papers": 1, "failures": len(bad)}
