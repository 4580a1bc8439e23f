"""A folder of PDFs instead of downloads (`--pdfs DIR`): arXiv bulk-data tar archives (nested, plain
or gzipped) and loose `<id>vN.pdf` files, with metadata from the loopback arXiv API."""

import gzip
import io
import tarfile
from pathlib import Path

import pytest
from support import corpus
from support.arxiv_server import FakeArxiv
from support.builds import write_corpus

from builder.cli import main
from builder.stages.fetch.archive import versioned_id


def add_member(archive: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    archive.addfile(info, io.BytesIO(data))


def latest_name(arxiv_id: str) -> str:
    return f"{arxiv_id}v{corpus.TOPIC_BY_ID[arxiv_id].versions}"


def write_bulk_folder(folder: Path) -> None:
    """Three of the four papers: one in a plain tar laid out as arXiv's bulk data, one gzipped inside a
    .tar.gz, one loose in a subfolder; and an archive that is not one."""
    doc2query, distillation, gqa, _ = corpus.PAPERS
    folder.mkdir()
    with tarfile.open(folder / "arXiv_pdf_1904_001.tar", "w") as archive:
        add_member(archive, "1904/README.txt", b"not a paper")
        add_member(archive, f"1904/{latest_name(doc2query)}.pdf", corpus.generated(doc2query).latest)
    (folder / "2024").mkdir()
    with tarfile.open(folder / "2024" / "arXiv_pdf_2412_007.tar.gz", "w:gz") as archive:
        packed = gzip.compress(corpus.generated(distillation).latest)
        add_member(archive, f"2412/{latest_name(distillation)}.pdf.gz", packed)
    (folder / "loose" / "2305").mkdir(parents=True)
    (folder / "loose" / "2305" / f"{latest_name(gqa)}.pdf").write_bytes(corpus.generated(gqa).latest)
    (folder / "broken.tar").write_bytes(b"this is no tar archive" * 100)


def test_fetch_takes_pdfs_from_the_folder_and_downloads_only_the_rest(tmp_path):
    write_bulk_folder(tmp_path / "bulk")
    listed = write_corpus(tmp_path / "readingroom.toml", corpus.PAPERS)
    cache = tmp_path / "cache"
    with FakeArxiv() as server:
        corpus.serve(server)
        code = main(
            ["fetch", "--corpus", str(listed), "--cache", str(cache), "--pdfs", str(tmp_path / "bulk")]
            + ["--arxiv-api", server.api_url, "--arxiv-delay", "0", "--no-progress"]
        )
        downloaded = [record.path for record in server.pdf_requests()]
    assert code == 0
    assert downloaded == [f"/pdf/{latest_name(corpus.PAPERS[3])}"]  # the one paper the folder lacks
    for arxiv_id in corpus.PAPERS:
        version = f"v{corpus.TOPIC_BY_ID[arxiv_id].versions}"
        stored = cache / "papers" / arxiv_id / version / "paper.pdf"
        assert stored.read_bytes() == corpus.generated(arxiv_id).latest


def test_a_missing_pdf_folder_is_one_line(tmp_path, capsys):
    listed = write_corpus(tmp_path / "readingroom.toml", corpus.PAPERS[:1])
    assert main(["fetch", "--corpus", str(listed), "--pdfs", str(tmp_path / "nowhere"), "--offline"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        f"error: --pdfs {tmp_path / 'nowhere'} is not a folder (of <id>vN.pdf files or tar archives of them)"
    ]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("2101.00001v1.pdf", "2101.00001v1"),
        ("0704.0001v12.pdf.gz", "0704.0001v12"),
        ("hep-th9901001v2.pdf", "hep-th/9901001v2"),  # arXiv's bulk-data spelling
        ("math.GT_0309136v1.pdf", "math.GT/0309136v1"),  # the cache's file_stem spelling
        ("2101.00001.pdf", None),  # no version: which one would it be?
        ("2101.00001v1.ps.gz", None),
        ("notes-v1.pdf", None),
    ],
)
def test_file_names_give_versioned_ids(name, expected):
    assert versioned_id(name) == expected
