"""`--pdfs DIR --offline`: a site built from a folder of PDFs with no arXiv API, metadata from a file
beside the PDFs (the mirror's format) or as page 1 prints it; and every bad thing such a folder can
hold ends in one failure line naming it, with the cache left holding only what passed."""

import gzip
import hashlib
import io
import json
import shutil
import tarfile
from pathlib import Path

import pymupdf
import pytest
from support import pdfgen
from support.builds import write_corpus

from builder.cli import main, make_parser
from builder.models import PaperRef, ParseLimits
from builder.stages.fetch import FetchOptions, fetch_papers
from readingroom_core.ranges import folder_reader
from readingroom_core.readers.papers import read_paper_table

STAMP = "arXiv:{}  [cs.DL]  3 Jan 2024"
AUTHORS = ["Ada Lovelace", "Charles Babbage", "Grace Brewster Hopper", "Jean-Luc van der Berg"]


def titled(
    path: Path, versioned: str | None, title: str = "Offline Builds from Folders of PDFs", **kw
) -> Path:
    """A generated paper whose page 1 prints `title`, the authors and (unless None) arXiv's stamp."""
    path.parent.mkdir(parents=True, exist_ok=True)
    stamp = STAMP.format(versioned) if versioned else None
    return pdfgen.write_titled_paper(path, title, kw.pop("authors", AUTHORS), stamp, **kw)


def add_member(archive: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    archive.addfile(info, io.BytesIO(data))


def paper_table(site: Path) -> dict[str, tuple[str, str, list[str]]]:
    manifest = json.loads((site / "manifest.json").read_text())
    rows = read_paper_table(folder_reader(site)(manifest["files"]["paper_table"]))
    return {row.id: (row.version, row.title, list(row.authors)) for row in rows}


def build(corpus: Path, out: Path, cache: Path, pdfs: Path, *extra: str) -> int:
    args = ["build", "--corpus", str(corpus), "--out", str(out), "--cache", str(cache), "--no-progress"]
    return main([*args, "--pdfs", str(pdfs), "--offline", *extra])


def tagged_lines(out: str, tag: str) -> list[str]:
    return [line.strip() for line in out.splitlines() if line.strip().startswith(tag)]


def test_an_offline_build_takes_its_papers_and_their_metadata_from_the_folder(tmp_path, capsys):
    pdfs = tmp_path / "pdfs"
    titled(pdfs / "2401.00001v2.pdf", "2401.00001v2", "Reading Rooms at Scale: Offline Builds from Folders")
    titled(
        pdfs / "own" / "2401.00002.pdf",
        "2401.00002v1",
        "Stamped Copies Without a Version in Their Name",
        authors=["Emmy Noether", "David Hilbert"],
    )
    packed = gzip.compress(
        titled(tmp_path / "c.pdf", "2401.00003v1", "A Paper Inside a Tar Archive").read_bytes()
    )
    with tarfile.open(pdfs / "arXiv_pdf_2401_001.tar.gz", "w:gz") as archive:
        add_member(archive, "2401/2401.00003v1.pdf.gz", packed)
    titled(pdfs / "2401.00004v1.pdf", None, "What the Page Prints Is Not Used Here")
    (pdfs / "meta").mkdir()
    record = {
        "arxiv_id": "2401.00004",
        "version": "v1",
        "title": "The Title the Metadata File Gives",
        "authors": ["Alan Turing"],
        "abstract": "From the file.",
        "categories": ["cs.LO"],
        "primary_category": "cs.LO",
        "published": "2024-01-05",
        "version_date": "2024-01-05",
    }
    (pdfs / "meta" / "2401.00004.json").write_text(json.dumps(record))
    titled(pdfs / "2401.00005v1.pdf", "2401.00001v2")  # another paper's PDF under this name
    listed = write_corpus(tmp_path / "readingroom.toml", [f"2401.0000{n}" for n in range(1, 7)])
    site, cache = tmp_path / "site", tmp_path / "cache"

    assert build(listed, site, cache, pdfs) == 0
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    assert tagged_lines(out, "[pdfs]") == [
        f"[pdfs] 2401.00001v2: PDF {pdfs}/2401.00001v2.pdf; metadata as printed on its page 1 "
        "(title, 4 authors; version and date from arXiv's stamp)",
        f"[pdfs] 2401.00002v1: PDF {pdfs}/own/2401.00002.pdf; metadata as printed on its page 1 "
        "(title, 2 authors; version and date from arXiv's stamp)",
        f"[pdfs] 2401.00003v1: PDF {pdfs}/arXiv_pdf_2401_001.tar.gz (member 2401/2401.00003v1.pdf.gz); "
        "metadata as printed on its page 1 (title, 4 authors; version and date from arXiv's stamp)",
        f"[pdfs] 2401.00004v1: PDF {pdfs}/2401.00004v1.pdf; metadata from {pdfs}/meta/2401.00004.json",
    ]
    assert tagged_lines(out, "[fetch]") == [
        f"[fetch] 2401.00005: {pdfs}/2401.00005v1.pdf carries arXiv's stamp for 2401.00001v2, not "
        f"2401.00005v1 as its name says — put 2401.00005v1's own PDF into {pdfs}",
        f"[fetch] 2401.00006: 2401.00006 is neither in {pdfs} nor in the cache, and --offline was given — "
        f"put 2401.00006vN.pdf into {pdfs}, or run without --offline to download it",
    ]
    assert paper_table(site) == {
        "2401.00001": ("v2", "Reading Rooms at Scale: Offline Builds from Folders", AUTHORS),
        "2401.00002": (
            "v1",
            "Stamped Copies Without a Version in Their Name",
            ["Emmy Noether", "David Hilbert"],
        ),
        "2401.00003": ("v1", "A Paper Inside a Tar Archive", AUTHORS),
        "2401.00004": ("v1", "The Title the Metadata File Gives", ["Alan Turing"]),
    }
    report = json.loads((site / "build-report.json").read_text())
    assert sorted(report["sources"]) == ["2401.00001", "2401.00002", "2401.00003", "2401.00004"]
    # The tar member was unpacked into the cache; nothing found offline is cached as arXiv's metadata.
    assert (cache / "papers" / "2401.00003" / "v1" / "paper.pdf").is_file()
    assert not [*cache.rglob("meta.json"), *cache.rglob("*.part"), *cache.rglob("*.unchecked")]

    # A folder that no longer holds any of them: every paper fails, the site stays as it was.
    before = {p.relative_to(site): p.read_bytes() for p in site.rglob("*") if p.is_file()}
    shutil.rmtree(pdfs)
    pdfs.mkdir()
    assert build(listed, site, cache, pdfs) == 1
    out, err = capsys.readouterr()
    assert len(tagged_lines(out, "[fetch]")) == 6 and "Traceback" not in out + err
    assert {p.relative_to(site): p.read_bytes() for p in site.rglob("*") if p.is_file()} == before


@pytest.mark.mirror
def test_mirror_pdfs_in_a_folder_build_with_and_without_their_metadata_files(tmp_path, mirror_dir, capsys):
    """Real arXiv PDFs: one with the mirror's meta file beside it, one alone, whose title and authors are
    read from page 1 as the mirror's own metadata was."""
    pdfs = tmp_path / "pdfs"
    (pdfs / "pdf").mkdir(parents=True)
    (pdfs / "meta").mkdir()
    with_meta, alone = "2412.19048", "1904.08375"
    for arxiv_id in (with_meta, alone):
        shutil.copy(mirror_dir / "pdf" / f"{arxiv_id}.pdf", pdfs / "pdf")
    shutil.copy(mirror_dir / "meta" / f"{with_meta}.json", pdfs / "meta")
    mirrored = {i: json.loads((mirror_dir / "meta" / f"{i}.json").read_text()) for i in (with_meta, alone)}
    listed = write_corpus(tmp_path / "readingroom.toml", [with_meta, alone])

    assert build(listed, tmp_path / "site", tmp_path / "cache", pdfs) == 0
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and not tagged_lines(out, "[fetch]")
    assert tagged_lines(out, "[pdfs]") == [
        f"[pdfs] {with_meta}v1: PDF {pdfs}/pdf/{with_meta}.pdf; metadata from {pdfs}/meta/{with_meta}.json",
        f"[pdfs] {alone}v2: PDF {pdfs}/pdf/{alone}.pdf; metadata as printed on its page 1 "
        f"(title, {len(mirrored[alone]['authors'])} authors; version and date from arXiv's stamp)",
    ]
    table = paper_table(tmp_path / "site")
    for arxiv_id, meta in mirrored.items():
        assert table[arxiv_id] == (meta["version"], meta["title"], meta["authors"])


def test_help_says_where_pdfs_take_their_metadata_from():
    parser = make_parser()
    commands = next(a for a in parser._actions if a.dest == "command")
    for command in ("build", "fetch"):
        text = " ".join(commands.choices[command].format_help().split())
        assert "Their metadata comes from arXiv's API, which a build without --offline asks" in text
        assert "A paper from --pdfs then takes its metadata from a <id>.json file beside the PDFs" in text
        assert "title and authors as printed on page 1" in text


# ------------------------------------------------------------------------------------ hostile inputs

REPLACE = "replace it with a good copy, or remove it from the folder"
GOOD = "2401.00001"  # a good paper beside each bad input: it must still be fetched
BAD = "2401.00002"


def _flipped(data: bytes) -> bytes:
    middle = len(data) // 2
    return data[:middle] + bytes(b ^ 0xFF for b in data[middle : middle + 64]) + data[middle + 64 :]


def _meta(pdfs: Path, **fields) -> None:
    record = {"version": "v1", "title": "A Title", "authors": ["Ada Lovelace"], **fields}
    (pdfs / f"{BAD}v1.json").write_text(json.dumps(record))


def _blank(path: Path) -> None:
    doc = pymupdf.open()
    doc.new_page()
    doc.save(path)


def _lock(pdfs: Path) -> None:
    lock = {"papers": {BAD: {"version": "v1", "pdf_sha256": "ab" * 32}}}
    (pdfs.parent / "readingroom.lock").write_text(json.dumps(lock))


def _gz(pdfs: Path, data: bytes) -> None:
    (pdfs / f"{BAD}v1.pdf.gz").write_bytes(data)


def _damaged_gz(pdfs: Path) -> None:
    whole = titled(pdfs.parent / "whole.pdf", f"{BAD}v1").read_bytes()
    _gz(pdfs, _flipped(gzip.compress(whole)))


def _tar(pdfs: Path, data: bytes) -> None:
    with tarfile.open(pdfs / "arXiv_pdf_2401_002.tar", "w") as archive:
        add_member(archive, f"2401/{BAD}v1.pdf", data)


def _pdf(pdfs: Path) -> Path:
    return titled(pdfs / f"{BAD}v1.pdf", f"{BAD}v1")


# name -> (what to put into the folder (BAD listed, GOOD present), the failure line's reason, its hint)
HOSTILE = {
    "absent": (
        lambda d: None,
        "{BAD} is neither in {DIR} nor in the cache, and --offline was given",
        "put {BAD}vN.pdf into {DIR}, or run without --offline to download it",
    ),
    "another paper's PDF": (
        lambda d: titled(d / f"{BAD}v1.pdf", "1602.03483v1"),
        "{DIR}/{BAD}v1.pdf carries arXiv's stamp for 1602.03483v1, not {BAD}v1 as its name says",
        "put {BAD}v1's own PDF into {DIR}",
    ),
    "another version's PDF": (
        lambda d: titled(d / f"{BAD}v1.pdf", f"{BAD}v3"),
        "{DIR}/{BAD}v1.pdf carries arXiv's stamp for {BAD}v3, not {BAD}v1 as its name says",
        "put {BAD}v1's own PDF into {DIR}",
    ),
    "unversioned, another paper's stamp": (
        lambda d: titled(d / f"{BAD}.pdf", "1602.03483v1"),
        "{DIR}/{BAD}.pdf carries arXiv's stamp for 1602.03483v1, not {BAD} as its name says",
        "put {BAD}'s own PDF into {DIR}",
    ),
    "unversioned, no stamp, no metadata": (
        lambda d: titled(d / f"{BAD}.pdf", None),
        "{DIR}/{BAD}.pdf has no version in its name, no arXiv stamp on its "
        "page 1 and no metadata file giving one",
        "rename it {BAD}vN.pdf (N: its arXiv version), or put a metadata file "
        '{BAD}.json with its "version" beside it',
    ),
    "not a PDF": (
        lambda d: pdfgen.write_not_a_pdf(d / f"{BAD}v1.pdf"),
        "{DIR}/{BAD}v1.pdf is not a PDF (it starts b'<html>503 Service Un')",
        "replace it with a good copy, or remove it from the folder",
    ),
    "truncated": (
        lambda d: pdfgen.write_truncated(d / f"{BAD}v1.pdf"),
        "{DIR}/{BAD}v1.pdf is truncated (no %%EOF marker at its end)",
        "replace it with a good copy, or remove it from the folder",
    ),
    "encrypted": (
        lambda d: pdfgen.write_encrypted(d / f"{BAD}v1.pdf"),
        "{DIR}/{BAD}v1.pdf is encrypted and needs a password",
        "replace it with a good copy, or remove it from the folder",
    ),
    "no pages": (
        lambda d: pdfgen.write_zero_pages(d / f"{BAD}v1.pdf"),
        "{DIR}/{BAD}v1.pdf has no pages",
        "replace it with a good copy, or remove it from the folder",
    ),
    "nothing printed on page 1": (
        lambda d: _blank(d / f"{BAD}v1.pdf"),
        "no title could be read from page 1 of {DIR}/{BAD}v1.pdf, and {DIR} has no metadata file for {BAD}",
        "put a {BAD}.json (the mirror's meta/<id>.json format) beside the PDFs, or "
        "build without --offline so arXiv's API gives the metadata",
    ),
    "metadata not JSON": (
        lambda d: (_pdf(d), (d / f"{BAD}v1.json").write_text("{not json")),
        "{DIR}/{BAD}v1.json is not valid JSON (Expecting property name enclosed in double "
        "quotes: line 1 column 2 (char 1))",
        "correct {DIR}/{BAD}v1.json, or remove it to use what the PDF prints",
    ),
    "metadata not UTF-8": (
        lambda d: (_pdf(d), (d / f"{BAD}v1.json").write_bytes(b'{"title": "\xff"}')),
        "{DIR}/{BAD}v1.json is not UTF-8 text (invalid start byte at byte 11)",
        "correct {DIR}/{BAD}v1.json, or remove it to use what the PDF prints",
    ),
    "metadata a list": (
        lambda d: (_pdf(d), (d / f"{BAD}v1.json").write_text("[1, 2, 3]")),
        "{DIR}/{BAD}v1.json must hold one JSON object {{…}}, not a list ([1, 2, 3])",
        "correct {DIR}/{BAD}v1.json, or remove it to use what the PDF prints",
    ),
    "metadata authors a string": (
        lambda d: (_pdf(d), _meta(d, authors="Ada Lovelace")),
        "{DIR}/{BAD}v1.json: 'authors' must be a list of strings such as "
        '["…", "…"], not a string ("Ada Lovelace")',
        "correct {DIR}/{BAD}v1.json, or remove it to use what the PDF prints",
    ),
    "metadata title empty": (
        lambda d: (_pdf(d), _meta(d, title="  ")),
        "{DIR}/{BAD}v1.json: 'title' is empty",
        "correct {DIR}/{BAD}v1.json, or remove it to use what the PDF prints",
    ),
    "metadata of another version": (
        lambda d: (_pdf(d), _meta(d, version="v2")),
        "{DIR}/{BAD}v1.json describes {BAD}v2, but the PDF is {BAD}v1",
        "correct 'version' in {DIR}/{BAD}v1.json, or put the PDF of {BAD}v2 beside it",
    ),
    "metadata of another paper": (
        lambda d: (_pdf(d), _meta(d, arxiv_id="1602.03483")),
        "{DIR}/{BAD}v1.json: 'arxiv_id' is '1602.03483', but the file is named for {BAD}",
        "correct {DIR}/{BAD}v1.json, or remove it to use what the PDF prints",
    ),
    "metadata of another file": (
        lambda d: (_pdf(d), _meta(d, pdf_sha256="ab" * 32)),
        "{DIR}/{BAD}v1.pdf has sha256 {SHA}…, but {DIR}/{BAD}v1.json records abababababab…; "
        "the metadata describes another file",
        "correct or remove 'pdf_sha256' in {DIR}/{BAD}v1.json, or restore the PDF it describes",
    ),
    "pinned version absent": (
        lambda d: _pdf(d),
        "{DIR} holds {BAD}v1, not {BAD}v3 as {CORPUS} asks",
        "put {BAD}v3.pdf into {DIR}, or change the version {CORPUS} pins",
    ),
    "lock file's checksum differs": (
        lambda d: (_pdf(d), _lock(d)),
        "{BAD}v1 from {DIR} has sha256 {SHA}…, but {LOCK} recorded abababababab…; the paper is skipped",
        "delete its entry from {LOCK} to accept the new file",
    ),
    "gzipped PDF with 64 bytes flipped": (_damaged_gz, None, None),
    "gzipped file that is not gzip": (lambda d: _gz(d, b"plain bytes, no gzip header" * 50), None, None),
    "tar member holding another paper's PDF": (
        lambda d: _tar(d, titled(d.parent / "other.pdf", "1602.03483v1").read_bytes()),
        "2401/{BAD}v1.pdf in {DIR}/arXiv_pdf_2401_002.tar is stamped arXiv:1602.03483v1 on its first page, "
        "not {BAD}v1: it is another paper's PDF, or another version's",
        "replace it in {DIR} with a good copy, or run without --offline to download it",
    ),
    "tar member that is not a PDF": (
        lambda d: _tar(d, b"<html>not a pdf</html>"),
        "2401/{BAD}v1.pdf in {DIR}/arXiv_pdf_2401_002.tar is not a PDF (it begins b'<html', not %PDF-)",
        "replace it in {DIR} with a good copy, or run without --offline to download it",
    ),
}


@pytest.mark.parametrize("case", HOSTILE, ids=list(HOSTILE))
def test_a_bad_input_in_the_folder_is_one_line_and_the_rest_goes_on(tmp_path, capsys, case):
    make, reason, hint = HOSTILE[case]
    pdfs = tmp_path / "pdfs"
    titled(pdfs / f"{GOOD}v1.pdf", f"{GOOD}v1")
    make(pdfs)
    bad = f"{BAD}v3" if case == "pinned version absent" else BAD
    listed = write_corpus(tmp_path / "readingroom.toml", [GOOD, bad])
    cache = tmp_path / "cache"
    run = [
        "fetch",
        "--corpus",
        str(listed),
        "--cache",
        str(cache),
        "--pdfs",
        str(pdfs),
        "--offline",
        "--no-progress",
    ]

    assert main(run) == 0
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    failures = tagged_lines(out, "[fetch]")
    assert len(failures) == 1, out
    if reason is None:  # a damaged archive: the line names the file and asks for a good copy
        assert failures[0].startswith(f"[fetch] {BAD}: {pdfs}/{BAD}v1.pdf.gz could not be "), failures
        assert failures[0].endswith(
            f" — replace it in {pdfs} with a good copy, or run without --offline to download it"
        ), failures
    else:
        bad_pdf = pdfs / f"{BAD}v1.pdf"
        sha = hashlib.sha256(bad_pdf.read_bytes()).hexdigest()[:12] if bad_pdf.is_file() else ""
        names = {"BAD": BAD, "DIR": pdfs, "CORPUS": listed, "LOCK": listed.with_suffix(".lock"), "SHA": sha}
        assert failures == [f"[fetch] {BAD}: {reason.format(**names)} — {hint.format(**names)}"]
    assert tagged_lines(out, "[pdfs]")[0].startswith(f"[pdfs] {GOOD}v1: PDF {pdfs}/{GOOD}v1.pdf; ")
    # The cache holds only what passed: no half-written file, nothing for the bad paper.
    leftovers = [*cache.rglob("*.part"), *cache.rglob("*.unchecked"), *cache.rglob("meta.json")]
    assert not leftovers
    assert not list(cache.glob(f"papers/{BAD}/*/paper.pdf"))


def test_two_copies_of_one_unversioned_paper_are_a_warning_naming_both(tmp_path, capsys, caplog):
    pdfs = tmp_path / "pdfs"
    first, second = (
        titled(pdfs / "a" / f"{BAD}.pdf", f"{BAD}v1"),
        titled(pdfs / "b" / f"{BAD}.pdf", f"{BAD}v1"),
    )
    listed = write_corpus(tmp_path / "readingroom.toml", [BAD])
    run = ["fetch", "--corpus", str(listed), "--cache", str(tmp_path / "c"), "--pdfs", str(pdfs), "--offline"]
    assert main([*run, "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert f"{BAD}: 2 files named {BAD}.pdf in {pdfs} ({first}, {second}); using the first" in caplog.messages
    assert tagged_lines(out, "[pdfs]")[0].startswith(f"[pdfs] {BAD}v1: PDF {first}; ")


def test_a_page_one_that_takes_too_long_to_read_fails_alone_under_the_parse_time_limit(tmp_path):
    """Page 1 is read in a process of its own, as parsing is: a hostile content stream (one that
    inflates into a million text operators) is ended at the limit and the other paper goes on."""
    pdfs = tmp_path / "pdfs"
    titled(pdfs / f"{GOOD}v1.pdf", f"{GOOD}v1")
    pdfgen.write_inflating(pdfs / f"{BAD}v1.pdf", repeats=1_000_000)
    options = FetchOptions(
        cache_dir=tmp_path / "cache",
        offline=True,
        pdf_folder=pdfs,
        corpus_file=tmp_path / "readingroom.toml",
        check_limits=ParseLimits(seconds=1),
    )
    result = fetch_papers([PaperRef(GOOD), PaperRef(BAD)], options, progress=False)
    assert [paper.meta.arxiv_id for paper in result.papers] == [GOOD]
    assert [failure.line() for failure in result.failures] == [
        f"[fetch] {BAD}: reading page 1 of {pdfs}/{BAD}v1.pdf took longer than the parse time limit (1 s, "
        f"--parse-timeout) — if it is a real paper, raise that limit; else {REPLACE}"
    ]
