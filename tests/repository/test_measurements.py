"""docs/measurements.md is exactly what its records render to, and a bench's record renders as tables.

The measured figures are written down once, by the benches (`--record`), and the page is generated from
them; a hand edit to the page, or a record committed without re-rendering, fails here.
"""

import json
import sys

import pytest

from builder.paths import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "scripts"))
import measurements  # noqa: E402


def test_the_document_is_what_its_records_render():
    expected = measurements.render(measurements.load_records())
    assert measurements.DOCUMENT.read_text(encoding="utf-8") == expected, (
        "docs/measurements.md is stale: python scripts/measurements.py render"
    )


def test_every_record_names_its_command_commit_and_machine():
    for record in measurements.load_records():
        assert record["command"].startswith("python scripts/"), record["command"]
        assert str(REPO_ROOT.parent) not in record["command"], "paths beside the repository are relative"
        assert record["commit"] and record["date"]
        assert {"cores", "python", "system", "load_1min_at_start"} <= set(record["machine"])


def test_a_recorded_run_renders_as_tables(tmp_path):
    dataset = REPO_ROOT.parent / "shared" / "beir-scifact"
    bench_run = measurements.begin("beir", ["--data", str(dataset), "--record"])
    assert bench_run.command.endswith("--data ../shared/beir-scifact --record")
    assert bench_run.machine["cores"] >= 1
    results = [
        {
            "dataset": "scifact",
            "queries": 300,
            "scores": {"bm25": {"ndcg@10": 0.68}, "hybrid": {"ndcg@10": 0.7}},
        },
        {
            "dataset": "nfcorpus",
            "queries": 323,
            "scores": {"bm25": {"ndcg@10": 0.32}, "hybrid": {"ndcg@10": 0.35}},
        },
    ]
    path = bench_run.save(results, folder=tmp_path)
    assert json.loads(path.read_text())["results"] == results
    text = measurements.render(measurements.load_records(tmp_path))
    assert "## BEIR" in text
    assert f"    {bench_run.command}" in text
    # rows with the same columns share one table, whichever dataset they come from
    assert "| | ndcg@10 |\n|---|---|\n| scifact · scores · bm25 | 0.68 |" in text
    assert "| nfcorpus · scores · hybrid | 0.35 |" in text
    assert "| scifact | 300 |\n| nfcorpus | 323 |" in text


def test_cells_are_read_as_written():
    assert [measurements.cell(v) for v in (None, True, 30912345, 0.123456, 2.0, "a|b")] == [
        "–",
        "yes",
        "30,912,345",
        "0.1235",
        "2",
        "a\\|b",
    ]
    # near a whole number, the digits that tell it apart (a min cosine of 0.999998 is not 1)
    assert [measurements.cell(v) for v in (0.999998, 0.99986, 1.00003, 0.00004, -0.99999)] == [
        "0.999998",
        "0.9999",
        "1.00003",
        "0.00004",
        "-0.99999",
    ]


def test_an_unknown_bench_is_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown bench"):
        measurements.begin("no-such-bench", [])
    (tmp_path / "other.json").write_text(json.dumps({"bench": "other"}), encoding="utf-8")
    with pytest.raises(ValueError, match="unknown benches"):
        measurements.load_records(tmp_path)
