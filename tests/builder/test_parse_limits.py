"""One paper over its parse time or memory limit fails alone, with one line naming the limit."""

import time
from pathlib import Path

import pytest
from support import pdfgen

from builder.models import Failure, FetchedPaper, PaperMeta, ParsedPaper, ParseLimits
from builder.stages.parse import parse_papers


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


# Under RLIMIT_AS the same paper fails in one of several places, by the limit and the machine's load: a
# MemoryError in Python, MuPDF's "calloc (…) failed" inside text extraction, a SystemError around a
# MemoryError. Each is the memory limit, never a damaged page nor an empty paper. A failed allocation
# costs MuPDF much system time (a loaded 2-core machine took over 60 s for this paper at 100 MB), so
# the time limit here is long enough that only the memory limit can end it.
@pytest.mark.parametrize("memory_mb", [60, 100])
def test_a_paper_over_the_memory_limit_fails_alone(papers, tmp_path, capfd, memory_mb):
    good, hostile, good_too = parse_papers(
        papers, tmp_path, jobs=1, progress=False, limits=ParseLimits(seconds=600, memory_mb=memory_mb)
    )
    assert isinstance(good, ParsedPaper) and isinstance(good_too, ParsedPaper)
    assert isinstance(hostile, Failure)
    expected = f"inflating.pdf needed more than the parse memory limit ({memory_mb} MB, --parse-memory)"
    assert expected in hostile.reason
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.parametrize(
    ("pages", "expected"),
    [
        (1, "unreadable.pdf: its one page could not be read (page 1: code=7: cycle in page tree)"),
        (2, "unreadable.pdf: none of its 2 pages could be read (page 1: code=7: cycle in page tree)"),
        (3, "unreadable.pdf is not a readable PDF (code=7: Invalid number of pages)"),
    ],
)
def test_a_paper_with_no_readable_page_is_a_failure(tmp_path, pages, expected):
    """Every page raising inside MuPDF leaves nothing to search or cite: one failure line, nothing cached."""
    pdf = pdfgen.write_unreadable_pages(tmp_path / "unreadable.pdf", pages)
    [result] = parse_papers([fetched("2001.00004", pdf)], tmp_path, jobs=1, progress=False)
    assert isinstance(result, Failure) and result.stage == "parse"
    assert expected in result.reason
    assert "delete" in result.hint
    assert not list(tmp_path.glob("parsed/*/*.json")), "a paper with no readable page is not cached"


def test_the_limits_are_build_options_with_measured_defaults(capsys):
    from builder.cli import make_parser

    args = make_parser().parse_args(["build", "--parse-timeout", "2.5", "--parse-memory", "300"])
    assert (args.parse_timeout, args.parse_memory) == (2.5, 300)
    with pytest.raises(SystemExit):
        make_parser().parse_args(["build", "--parse-timeout", "0"])
    assert "must be more than 0" in capsys.readouterr().err
