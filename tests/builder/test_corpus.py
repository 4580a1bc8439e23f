import json
import subprocess
import sys

import pytest

from builder import config
from builder.cli import main
from builder.commands.bibtex import arxiv_id_of, parse_bibtex
from builder.paths import REPO_ROOT

CORPUS = """\
# my reading list — comments must survive edits
[site]
title = "Test list"
base_url = "/my-reading-list/"

[[paper]]
id = "2005.11401"
tags = ["rag"]
note = "the RAG paper"

[[paper]]
id = "1706.03762v5"
"""

BIB = r"""
@article{lewis2020rag,
  title = {Retrieval-Augmented Generation for Knowledge-Intensive {NLP} Tasks},
  author = {Lewis, Patrick and others},
  eprint = {2005.11401},
  archivePrefix = {arXiv},
}
@misc{vaswani, title="Attention Is All You Need", journal = "arXiv preprint arXiv:1706.03762"}
@inproceedings{dpr, title = {Dense Passage Retrieval}, url = {https://arxiv.org/abs/2004.04906v3}}
@book{nobody, title = {A Book Without arXiv}, publisher = {Press}}
@comment{ignored}
"""


@pytest.fixture
def corpus_file(tmp_path):
    path = tmp_path / "readingroom.toml"
    path.write_text(CORPUS, encoding="utf-8")
    return path


def test_the_shipped_corpus_lists_the_mirror_reading_list():
    corpus = config.load_corpus(REPO_ROOT / "corpus" / "readingroom.toml")
    assert len(corpus.papers) == 112
    assert corpus.settings.model == "all-MiniLM-L6-v2"
    mirror_list = REPO_ROOT.parent / "shared" / "arxiv-mirror" / "reading-list.txt"
    if mirror_list.exists():
        assert [p.arxiv_id for p in corpus.papers] == mirror_list.read_text().split()
    assert all(p.tags for p in corpus.papers)


def test_corpus_parses_settings_pins_and_tags(corpus_file):
    corpus = config.load_corpus(corpus_file)
    assert corpus.settings.title == "Test list"
    assert corpus.settings.base_url == "/my-reading-list/"
    rag, attention = corpus.papers
    assert (rag.arxiv_id, rag.version, rag.tags, rag.note) == ("2005.11401", None, ("rag",), "the RAG paper")
    assert (attention.arxiv_id, attention.version) == ("1706.03762", "v5")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[[paper]]\nid = "not-an-id"\n', "'not-an-id' is not an arXiv id"),
        ('[[paper]]\nid = "2005.11401"\n[[paper]]\nid = "2005.11401v2"\n', "listed twice"),
        ('[[paper]]\nid = "2005.11401"\ntag = ["x"]\n', "unknown keys ['tag']"),
        ('[site]\nbase_url = "docs"\n', "must start and end with '/'"),
        ("[[paper]\n", "not valid TOML"),
        ('[[paper]]\nversion = "v2"\n', "missing id"),
    ],
)
def test_bad_corpus_files_name_the_problem(tmp_path, text, message):
    path = tmp_path / "c.toml"
    path.write_text(text)
    with pytest.raises(config.CorpusError, match=message.replace("[", r"\[").replace("]", r"\]")) as info:
        config.load_corpus(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("2005.11401", ("2005.11401", None)),
        ("arXiv:2005.11401v4", ("2005.11401", "v4")),
        ("https://arxiv.org/abs/1706.03762v7", ("1706.03762", "v7")),
        ("https://arxiv.org/pdf/2312.10997.pdf", ("2312.10997", None)),
        ("hep-th/9901001v2", ("hep-th/9901001", "v2")),
        ("math.GT/0309136", ("math.GT/0309136", None)),
    ],
)
def test_arxiv_id_forms(raw, expected):
    assert config.split_arxiv_id(raw) == expected


def test_add_and_remove_keep_comments_and_skip_duplicates(corpus_file, capsys):
    assert main(["add", "--corpus", str(corpus_file), "2312.10997v3", "2005.11401", "--tag", "survey"]) == 0
    out = capsys.readouterr().out
    assert "added 2312.10997v3" in out and "already listed: 2005.11401" in out
    text = corpus_file.read_text()
    assert "# my reading list — comments must survive edits" in text
    added = config.load_corpus(corpus_file).papers[-1]
    assert (added.arxiv_id, added.version, added.tags) == ("2312.10997", "v3", ("survey",))

    assert main(["remove", "--corpus", str(corpus_file), "2005.11401"]) == 0
    assert [p.arxiv_id for p in config.load_corpus(corpus_file).papers] == ["1706.03762", "2312.10997"]
    assert "comments must survive" in corpus_file.read_text()
    assert main(["remove", "--corpus", str(corpus_file), "2005.11401"]) == 1
    assert "not on the reading list: 2005.11401" in capsys.readouterr().err


def test_add_rejects_a_bad_id_without_touching_the_file(corpus_file, capsys):
    before = corpus_file.read_text()
    assert main(["add", "--corpus", str(corpus_file), "2005.1140"]) == 2
    assert "is not an arXiv id" in capsys.readouterr().err
    assert corpus_file.read_text() == before


def test_list_json(corpus_file, capsys):
    assert main(["list", "--corpus", str(corpus_file), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[1] == {"id": "1706.03762", "version": "v5", "tags": [], "note": ""}


def test_bibtex_entries_with_arxiv_ids():
    entries = parse_bibtex(BIB)
    assert [e.key for e in entries] == ["lewis2020rag", "vaswani", "dpr", "nobody"]
    assert entries[0].fields["title"] == "Retrieval-Augmented Generation for Knowledge-Intensive {NLP} Tasks"
    assert [arxiv_id_of(e) for e in entries] == [
        ("2005.11401", None),
        ("1706.03762", None),
        ("2004.04906", "v3"),
        None,
    ]


def test_import_bibtex_adds_only_new_arxiv_entries(corpus_file, tmp_path, capsys):
    bib = tmp_path / "refs.bib"
    bib.write_text(BIB)
    assert main(["import-bibtex", "--corpus", str(corpus_file), str(bib), "--tag", "imported"]) == 0
    out, err = capsys.readouterr()
    assert "4 entries, 3 with an arXiv id, 1 added" in out
    assert "skipped nobody" in err
    ids = {p.arxiv_id: p for p in config.load_corpus(corpus_file).papers}
    assert ids["2004.04906"].version == "v3" and ids["2004.04906"].tags == ("imported",)


def test_help_explains_every_command():
    result = subprocess.run(
        [sys.executable, "-m", "builder", "--help"], capture_output=True, text=True, check=True
    )
    for command in ("build", "fetch", "add", "remove", "list", "import-bibtex", "stats"):
        assert command in result.stdout
    build_help = subprocess.run(
        [sys.executable, "-m", "builder", "build", "--help"], capture_output=True, text=True, check=True
    ).stdout
    for option in ("--corpus", "--out", "--offline", "--mirror", "--strict", "READINGROOM_MIRROR"):
        assert option in build_help


def test_missing_corpus_file_is_a_clear_error(tmp_path, capsys):
    assert main(["list", "--corpus", str(tmp_path / "nope.toml")]) == 2
    assert "no such corpus file" in capsys.readouterr().err
