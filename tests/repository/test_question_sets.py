"""The question sets we tune and report on stay honest: every gold page holds its evidence quote.

A gold page that does not state the answer makes every metric computed on it wrong, silently.
"""

import json
import re
import unicodedata
from pathlib import Path

import pymupdf
import pytest

from builder.paths import DEV_QUESTIONS

DATA = Path(__file__).parents[1] / "data"
QUESTION_FILES = sorted(DATA.glob("questions-*.jsonl"))
KINDS = {"factual", "paraphrase", "keyword", "conceptual", "multi", "short", "negative", "navigational"}


def normalised(text: str) -> str:
    """Both sides as PyMuPDF's text and a reader's copy differ: ligatures, case, line-end hyphens."""
    text = unicodedata.normalize("NFKC", text).lower()
    text = re.sub(r"-\s*\n\s*", "", text)
    text = re.sub(r"(\w)- (\w)", r"\1\2", text)
    return " ".join(text.split())


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_the_tuning_and_report_sets_are_apart_and_balanced():
    tune, report = rows(DATA / "questions-tune.jsonl"), rows(DATA / "questions-report.jsonl")
    assert not {row["id"] for row in tune} & {row["id"] for row in report}
    assert not {row["query"] for row in tune} & {row["query"] for row in report}
    for questions in (tune, report):
        assert sum(row["kind"] == "paraphrase" for row in questions) >= 15
        assert {row["kind"] for row in questions} <= KINDS


@pytest.mark.mirror
@pytest.mark.parametrize("path", [*QUESTION_FILES, DEV_QUESTIONS], ids=lambda path: path.name)
def test_every_evidence_quote_is_on_its_first_gold_page(path, mirror_dir):
    if not path.exists():
        pytest.skip(f"{path} is not present")
    wrong = []
    for row in rows(path):
        assert row["kind"] in KINDS, row["id"]
        if not row["relevant"]:
            continue
        first = row["relevant"][0]
        with pymupdf.open(mirror_dir / "pdf" / f"{first['arxiv_id']}.pdf") as pdf:
            for gold in row["relevant"]:
                if gold["arxiv_id"] == first["arxiv_id"]:
                    assert all(1 <= page <= pdf.page_count for page in gold["pages"]), row["id"]
            page_text = pdf[first["pages"][0] - 1].get_text()
        if normalised(row["evidence"]) not in normalised(page_text):
            wrong.append(f"{row['id']}: {first['arxiv_id']} p.{first['pages'][0]}")
    assert not wrong, f"{path.name}: evidence not on its first gold page: {wrong}"
