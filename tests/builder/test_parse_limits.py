"""One paper over its parse time or memory limit fails alone, with one line naming the limit."""

import time
from pathlib import Path

import pytest
from support import pdfgen

from builder.models import Failure, FetchedPaper, PaperMeta, ParsedPaper
from builder.stages.parse import parse_papers
from builder.stages.parse.bounded import ParseLimits


def fetched(arxiv_id: str, pdf: Path) -> FetchedPaper:
    meta = PaperMeta(arxiv_id, "v1", "A title", [], "", [], "cs.CL", "", "")
    return FetchedPaper(meta=meta, pdf_path=str(pdf), pdf_sha256=arxiv_id, source="cache")


@pytest.fixture(scope="module")
def papers(tmp_path_factory) -> list[FetchedPaper]:
    folder = tmp_path_factory.mktemp("limits")
    return [
        fetched("2001.00001", pdfgen.write_paper(folder / "good.pdf")),
        fetched("2001.00002", pdfgen.write_inflating(folder / "inflating.pdf")),
        fetched("2001.00003", pdfgen.write_paper(folder / "good-too.pdf")),
    ]


def test_a_paper_over_the_time_limit_fails_alone_and_is_ended_at_once(papers, tmp_path):
    started = time.monotonic()
    good, hostile, good_too = parse_papers(
        papers, tmp_path, jobs=2, progress=False, limits=ParseLimits(seconds=1)
    )
    assert time.monotonic() - started < 10  # unbounded, the hostile paper alone takes several seconds
    assert isinstance(good, ParsedPaper) and isinstance(good_too, ParsedPaper)
    assert isinstance(hostile, Failure) and hostile.stage == "parse"
    assert "inflating.pdf took longer than the parse time limit (1 s, --parse-timeout)" in hostile.reason
    assert "raised" in hostile.hint
    assert not list(tmp_path.glob("parsed/*/2001.00002.json")), "a paper over its limit is not cached"


def test_a_paper_over_the_memory_limit_fails_alone(papers, tmp_path, capfd):
    good, hostile, good_too = parse_papers(
        papers, tmp_path, jobs=1, progress=False, limits=ParseLimits(memory_mb=100)
    )
    assert isinstance(good, ParsedPaper) and isinstance(good_too, ParsedPaper)
    assert isinstance(hostile, Failure)
    assert "inflating.pdf needed more than the parse memory limit (100 MB, --parse-memory)" in hostile.reason
    assert "Traceback" not in capfd.readouterr().err


def test_the_limits_are_build_options_with_measured_defaults(capsys):
    from builder.cli import make_parser

    args = make_parser().parse_args(["build", "--parse-timeout", "2.5", "--parse-memory", "300"])
    assert (args.parse_timeout, args.parse_memory) == (2.5, 300)
    with pytest.raises(SystemExit):
        make_parser().parse_args(["build", "--parse-timeout", "0"])
    assert "must be more than 0" in capsys.readouterr().err
