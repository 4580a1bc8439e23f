"""PDFs from a folder (`--pdfs DIR`) are checked before they enter the cache (issue 59, items 1-4).

Each hostile file below is a real bad file. It ends as one failure line naming it and what to do; the
other paper is still fetched; no `.part` file is left; nothing is downloaded in its place; and the
cache holds only what passed, so a later build cannot take the bad copy from there.
"""

import gzip
import io
import logging
import tarfile
from collections.abc import Callable
from pathlib import Path

import pymupdf
import pytest
from support import corpus, pdfgen
from support.arxiv_server import FakeArxiv, make_pdf
from support.builds import write_corpus

from builder.cli import main
from builder.models import PaperRef, ParseLimits
from builder.stages.fetch import FetchOptions, fetch_papers
from builder.stages.parse.identity import inspect_pdf

DOC2QUERY, DISTILLATION, GQA, _ = corpus.PAPERS
HOSTILE = DISTILLATION  # the paper whose file is bad (one version: v1)
GOOD = GQA  # always a good loose file beside it


def name(arxiv_id: str) -> str:
    return f"{arxiv_id}v{corpus.TOPIC_BY_ID[arxiv_id].versions}"


def pdf(arxiv_id: str) -> bytes:
    return corpus.generated(arxiv_id).latest


PDF, GZ = f"{name(HOSTILE)}.pdf", f"{name(HOSTILE)}.pdf.gz"


def flipped(data: bytes, start: int, count: int = 64) -> bytes:
    """`data` with `count` bytes inverted from `start` on."""
    assert -len(data) <= start and start + count <= len(data)
    return data[:start] + bytes(b ^ 0xFF for b in data[start : start + count]) + data[start + count :]


def flipped_at(data: bytes, fraction: float) -> bytes:
    """`data` with 64 bytes inverted from `fraction` of its length on."""
    return flipped(data, int(len(data) * fraction))


def packed(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


def tar_bytes(members: list[tuple[str, bytes]], mode: str = "w") -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode=mode) as archive:
        for member, data in members:
            info = tarfile.TarInfo(member)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def bad_second_header() -> bytes:
    """A plain tar: the paper, then a header whose checksum is wrong (where tarfile stops, silently)."""
    whole = tar_bytes([(f"2412/{PDF}", pdf(HOSTILE)), ("2412/later.pdf", b"%PDF-1.4\n")])
    second = 512 + (len(pdf(HOSTILE)) + 511) // 512 * 512
    return flipped(whole, second, 100)


def written(write: Callable[[Path], Path]) -> Callable[[Path], bytes]:
    """The bytes of a file that a pdfgen writer makes in `scratch`."""
    return lambda scratch: write(scratch / "made.pdf").read_bytes()


def unreadable(pages: int) -> Callable[[Path], bytes]:
    return written(lambda path: pdfgen.write_unreadable_pages(path, pages))


def fixed(data: Callable[[], bytes]) -> Callable[[Path], bytes]:
    return lambda _scratch: data()


# case: (the file's name in the folder, its bytes, what the paper's failure line says); the paper is
# HOSTILE, or DOC2QUERY where the file is named for it
CASES = {
    # item 1: damaged gzip data, loose or as a member of a plain tar
    "gz-deflate-broken": (
        GZ,
        fixed(lambda: flipped(packed(pdf(HOSTILE)), 1000)),
        "invalid distance too far back",
    ),
    "gz-64-bytes-flipped": (GZ, fixed(lambda: flipped_at(packed(pdf(HOSTILE)), 0.5)), "CRC check failed"),
    "gz-crc-flipped": (GZ, fixed(lambda: flipped(packed(pdf(HOSTILE)), -8, 4)), "CRC check failed"),
    "gz-cut-short": (GZ, fixed(lambda: packed(pdf(HOSTILE))[:-5000]), "Compressed file ended"),
    "gz-not-gzip": (GZ, fixed(lambda: pdf(HOSTILE)), "Not a gzipped file"),
    "gz-member-flipped-in-a-tar": (
        "arXiv_pdf_2412_001.tar",
        fixed(lambda: tar_bytes([(f"2412/{GZ}", flipped(packed(pdf(HOSTILE)), 1000))])),
        "could not be read: Error -3 while decompressing data",
    ),
    # item 2: archives damaged past the paper's own member
    "tar-gz-64-bytes-flipped": (
        "arXiv_pdf_2412_002.tar.gz",
        fixed(
            lambda: flipped_at(
                tar_bytes([(f"2412/{PDF}", pdf(HOSTILE)), ("1904/x.pdf", pdf(DOC2QUERY))], "w:gz"), 0.75
            )
        ),
        "arXiv_pdf_2412_002.tar.gz is damaged",
    ),
    "tar-gz-crc-flipped": (
        "arXiv_pdf_2412_003.tar.gz",
        fixed(lambda: flipped(tar_bytes([(f"2412/{PDF}", pdf(HOSTILE))], "w:gz"), -8, 4)),
        "CRC check failed",
    ),
    "tar-cut-inside-the-paper": (
        "arXiv_pdf_2412_004.tar",
        fixed(lambda: tar_bytes([(f"2412/{PDF}", pdf(HOSTILE))])[:20_000]),
        "arXiv_pdf_2412_004.tar is damaged (unexpected end of data)",
    ),
    "tar-bad-header-after-the-paper": (
        "arXiv_pdf_2412_005.tar",
        fixed(bad_second_header),
        "no valid tar header",
    ),
    # the file is no usable PDF
    "html-error-page": (
        PDF,
        fixed(lambda: b"<html>503 Service Unavailable</html>\n"),
        "is not a PDF (it begins",
    ),
    "empty-file": (PDF, fixed(lambda: b""), "is not a PDF (it begins b''"),
    "pdf-cut-in-half": (PDF, fixed(lambda: pdf(HOSTILE)[: len(pdf(HOSTILE)) // 2]), "is truncated (no %%EOF"),
    "zero-pages": (PDF, written(pdfgen.write_zero_pages), "has no pages"),
    "no-page-loads": (
        PDF,
        unreadable(2),
        "has 2 pages, and not one can be opened (page 1: code=7: cycle in page tree)",
    ),
    "page-tree-uncountable": (PDF, unreadable(3), "is not a readable PDF (code=7: Invalid number of pages)"),
    "encrypted": (PDF, written(pdfgen.write_encrypted), "is encrypted and needs a password"),
    "noise-between-header-and-eof": (
        PDF,
        fixed(lambda: b"%PDF-1.7\n" + bytes(range(256)) * 40 + b"\n%%EOF\n"),
        "is not a readable PDF",
    ),
    # item 3: the file is another paper's
    "another-papers-pdf": (
        PDF,
        fixed(lambda: pdf(DOC2QUERY)),
        f"is stamped arXiv:{name(DOC2QUERY)} on its first page, not {name(HOSTILE)}",
    ),
    "another-papers-pdf-gzipped-in-a-tar-gz": (
        "bulk/arXiv_pdf_2412_006.tar.gz",
        fixed(lambda: tar_bytes([(f"2412/{GZ}", packed(pdf(DOC2QUERY)))], "w:gz")),
        f"2412/{GZ} in ",
    ),
    "another-versions-pdf": (
        f"{name(DOC2QUERY)}.pdf",  # the paper the corpus lists here is DOC2QUERY: v2, not the v1 it holds
        fixed(lambda: corpus.generated(DOC2QUERY).pdfs[0]),
        f"is stamped arXiv:{DOC2QUERY}v1 on its first page, not {name(DOC2QUERY)}",
    ),
}


@pytest.fixture(scope="module")
def arxiv():
    with FakeArxiv() as server:
        corpus.serve(server)
        yield server


def fetch(tmp_path: Path, folder: Path, server: FakeArxiv, ids=(HOSTILE, GOOD)) -> tuple[int, str, list[str]]:
    """`builder fetch --pdfs folder`: its exit status, stdout and the failure lines it printed."""
    listed = write_corpus(tmp_path / "readingroom.toml", ids)
    args = ["fetch", "--corpus", str(listed), "--cache", str(tmp_path / "cache"), "--pdfs", str(folder)]
    code = main(args + ["--arxiv-api", server.api_url, "--arxiv-delay", "0", "--no-progress"])
    return code, *_printed()


_capture: pytest.CaptureFixture | None = None


def _printed() -> tuple[str, list[str]]:
    assert _capture is not None
    out, err = _capture.readouterr()
    assert "Traceback" not in out + err
    return out, [line.strip() for line in out.splitlines() if line.startswith("  [")]


@pytest.fixture(autouse=True)
def _captured(capsys):
    global _capture
    _capture = capsys
    yield
    _capture = None


def good_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "pdfs"
    (folder / "loose").mkdir(parents=True)
    (folder / "loose" / f"{name(GOOD)}.pdf").write_bytes(pdf(GOOD))
    return folder


def cached(tmp_path: Path, arxiv_id: str) -> list[Path]:
    return sorted((tmp_path / "cache" / "papers" / arxiv_id).glob("*/paper.pdf"))


@pytest.mark.parametrize("case", CASES)
def test_a_bad_pdf_in_the_folder_is_one_failure_line_and_never_cached(case, tmp_path, arxiv):
    file_name, make, expected = CASES[case]
    folder = good_folder(tmp_path)
    hostile = folder / file_name
    hostile.parent.mkdir(parents=True, exist_ok=True)
    hostile.write_bytes(make(tmp_path))
    paper = DOC2QUERY if file_name.startswith(DOC2QUERY) else HOSTILE
    asked = len(arxiv.pdf_requests())

    code, out, failures = fetch(tmp_path, folder, arxiv, (paper, GOOD))

    assert code == 0 and "1 of 2 papers in the cache" in out
    [line] = failures
    assert line.startswith(f"[fetch] {paper}: ") and f"{folder}/" in line and expected in line, line
    assert " — " in line.split(expected, 1)[1], "the line says what to do"
    assert arxiv.pdf_requests()[asked:] == [], "nothing is downloaded in its place"
    assert cached(tmp_path, GOOD)[0].read_bytes() == pdf(GOOD)
    assert cached(tmp_path, paper) == []
    assert list((tmp_path / "cache").rglob("*.part")) == []


def test_a_mended_archive_is_taken_on_the_next_run(tmp_path, arxiv):
    """The issue's case: a damaged .tar.gz was cached as a paper, and mending it later changed nothing."""
    folder = good_folder(tmp_path)
    archive = folder / "arXiv_pdf_2412_002.tar.gz"
    whole = tar_bytes([(f"2412/{PDF}", pdf(HOSTILE)), ("1904/x.pdf", pdf(DOC2QUERY))], "w:gz")
    archive.write_bytes(flipped_at(whole, 0.75))
    assert fetch(tmp_path, folder, arxiv)[2][0].startswith(f"[fetch] {HOSTILE}: 2412/{PDF} in {archive}")
    archive.write_bytes(whole)
    code, out, failures = fetch(tmp_path, folder, arxiv)
    assert (code, failures) == (0, [])
    assert cached(tmp_path, HOSTILE)[0].read_bytes() == pdf(HOSTILE)


BIG = b"%PDF-1.4\n" + bytes(8 << 20)  # 8 MiB: over a 1 MB cap; gzipped, 8 KB
BOMBS = {
    "gz-bomb": (GZ, lambda: packed(BIG), "unpacks to more than 1 MB"),
    "gz-bomb-in-a-tar": (
        "a.tar",
        lambda: tar_bytes([(f"2412/{GZ}", packed(BIG))]),
        "unpacks to more than 1 MB",
    ),
    "large-member-of-a-tar-gz": (
        "b.tar.gz",
        lambda: tar_bytes([(f"2412/{PDF}", BIG)], "w:gz"),
        "holds more than 1 MB",
    ),
    "large-loose-file": (PDF, lambda: BIG, "holds more than 1 MB"),
}


@pytest.mark.parametrize("case", BOMBS)
def test_reading_stops_at_the_size_cap(case, tmp_path, arxiv):
    """Item 4: a gzip bomb (1 MB that unpacked filled 1 GiB of disk) stops at the cap, here set to 1 MB."""
    file_name, make, expected = BOMBS[case]
    folder = good_folder(tmp_path)
    (folder / file_name).write_bytes(make())
    options = FetchOptions(
        cache_dir=tmp_path / "cache", api_url=arxiv.api_url, delay_seconds=0, pdf_folder=folder, max_pdf_mb=1
    )
    result = fetch_papers([PaperRef(HOSTILE), PaperRef(GOOD)], options, progress=False)
    [failure] = result.failures
    assert failure.arxiv_id == HOSTILE and expected in failure.reason and file_name in failure.reason
    assert [paper.meta.arxiv_id for paper in result.papers] == [GOOD]
    assert cached(tmp_path, HOSTILE) == [] and list((tmp_path / "cache").rglob("*.part")) == []


def test_a_pdf_too_hostile_to_check_fails_under_the_limits(tmp_path, arxiv):
    """Reading a first page is MuPDF's work, which a small PDF can make endless: it runs under limits."""
    folder = good_folder(tmp_path)
    pdfgen.write_inflating(folder / PDF, repeats=2_000_000)
    options = FetchOptions(
        cache_dir=tmp_path / "cache",
        api_url=arxiv.api_url,
        delay_seconds=0,
        pdf_folder=folder,
        check_limits=ParseLimits(seconds=5),  # the good paper is checked in well under a second
    )
    result = fetch_papers([PaperRef(HOSTILE), PaperRef(GOOD)], options, progress=False)
    [failure] = result.failures
    assert failure.reason == (
        f"{folder / PDF} could not be checked: reading its first page took longer than the parse time "
        "limit (5 s, --parse-timeout)"
    )
    assert [paper.meta.arxiv_id for paper in result.papers] == [GOOD]
    assert cached(tmp_path, HOSTILE) == []


def test_two_different_files_for_one_version_are_a_warning_naming_both(tmp_path, arxiv, caplog):
    folder = good_folder(tmp_path)
    for sub in "abcd":
        (folder / sub).mkdir()
    (folder / "a" / PDF).write_bytes(pdf(HOSTILE))
    (folder / "b" / "bulk.tar").write_bytes(tar_bytes([(f"2412/{PDF}", make_pdf("another file"))]))
    (folder / "c" / GZ).write_bytes(packed(pdf(HOSTILE)))  # the same bytes: no warning
    (folder / "d" / GZ).write_bytes(packed(pdf(HOSTILE))[:-100])
    with caplog.at_level(logging.WARNING, logger="builder.stages.fetch.archive"):
        code, _, failures = fetch(tmp_path, folder, arxiv)
    assert (code, failures) == (0, [])
    assert cached(tmp_path, HOSTILE)[0].read_bytes() == pdf(HOSTILE)  # the first in path order
    assert [record.getMessage() for record in caplog.records] == [
        f"{name(HOSTILE)}: {folder / 'a' / PDF} and 2412/{PDF} in {folder / 'b' / 'bulk.tar'} are different "
        "files; the first (in path order) is used",
        f"{name(HOSTILE)}: {folder / 'a' / PDF} is used; another file for it, {folder / 'd' / GZ} could not "
        "be read: Compressed file ended before the end-of-stream marker was reached",
    ]


def test_a_pdf_without_a_stamp_is_taken(tmp_path, arxiv):
    """Not every PDF carries arXiv's stamp (older papers, an institution's own copies)."""
    folder = good_folder(tmp_path)
    unstamped = make_pdf("no stamp on this one")
    (folder / PDF).write_bytes(unstamped)
    code, _, failures = fetch(tmp_path, folder, arxiv)
    assert (code, failures) == (0, [])
    assert cached(tmp_path, HOSTILE)[0].read_bytes() == unstamped


@pytest.mark.parametrize(
    ("line", "rotate", "stamped"),
    [
        ("arXiv:2003.06713v1  [cs.IR]  14 Mar 2020", 90, "2003.06713v1"),  # as arXiv prints it
        ("arXiv:hep-th/9901001v2  [hep-th]  3 Feb 1999", 90, "hep-th/9901001v2"),
        ("arXiv:2401.00001v12 [cs.CL] 2024-01-01", 0, "2401.00001v12"),
        ("as arXiv:1706.03762v5 [cs.CL] 6 Dec 2017 shows, attention is enough", 0, ""),  # a citation
        ("arXiv:1706.03762v5", 90, ""),  # no category nor date: not the stamp
    ],
)
def test_the_stamp_is_a_line_of_its_own_on_the_first_page(tmp_path, line, rotate, stamped):
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), "A Title of a Paper", fontsize=18)
    page.insert_text((24, 560) if rotate else (72, 120), line, fontsize=12, rotate=rotate)
    doc.new_page().insert_text((24, 560), "arXiv:2003.06713v2  [cs.IR]  1 Apr 2020", rotate=90)  # page 2
    doc.save(tmp_path / "stamped.pdf")
    assert inspect_pdf(str(tmp_path / "stamped.pdf")).stamped == stamped
