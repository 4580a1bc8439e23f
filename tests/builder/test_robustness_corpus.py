"""Hostile corpus files, base_url values, ids, sizes and BibTeX files: one clear error naming the file and the fix, never a traceback."""

import time

import pytest

from builder.cli import main
from builder.commands.bibtex import parse_bibtex
from builder.config import (
    MAX_DESCRIPTION,
    MAX_NOTE,
    MAX_SITE_TITLE,
    MAX_TAG,
    CorpusError,
    check_base_url,
    load_corpus,
    parse_corpus,
    split_arxiv_id,
)
from builder.stages.fetch.sources import MAX_TITLE, meta_from_mirror

SOURCE = "corpus/x.toml"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "paper = [1, 2]\n",
            "'paper' must be a list of [[paper]] tables, each with id = \"…\"; found a list of int",
        ),
        ('paper = "2005.11401"\n', "found a str"),
        ('[paper]\nid = "2005.11401"\n', "[paper] must be written [[paper]] (double brackets)"),
        ("site = 5\n", "'site' must be a table"),
        ('[site]\ntitle = ["a"]\n', "[site] title must be a string in quotes"),
        ('[site]\nwhole_index_mb = "16"\n', "[site] whole_index_mb must be a number of 0 or more"),
        ("[site]\nwhole_index_mb = -1\n", "[site] whole_index_mb must be a number of 0 or more"),
        ("[site]\nwhole_index_mb = true\n", "[site] whole_index_mb must be a number of 0 or more"),
        ("[site]\nwhole_index_mb = inf\n", "[site] whole_index_mb must be a number of 0 or more"),
        ("[site]\nwhole_index_mb = nan\n", "[site] whole_index_mb must be a number of 0 or more"),
        ("[[paper]]\nid = 2005.11401\n", "must be a string in quotes"),
        ('[[paper]]\nid = "2005.11401"\nnote = 3\n', "note must be a string"),
    ],
)
def test_wrong_shapes_are_named(text, message):
    with pytest.raises(CorpusError) as caught:
        parse_corpus(text, SOURCE)
    assert message in str(caught.value)
    assert str(caught.value).startswith(SOURCE)


@pytest.mark.parametrize(
    "base_url",
    [
        "//other.host/",
        "/../../",
        "/a/../",
        "/./",
        "https://other.host/",
        "/a b/",
        "/a?x=1/",
        "/a#b/",
        "relative/",
        "/no-slash",
        "/a//b/",
        "/a\\b/",
        "/%2e%2E/",
        "/a/%2e/",
    ],
)
def test_base_url_must_be_a_path_on_the_own_host(base_url):
    with pytest.raises(CorpusError, match="must be an absolute path on the site's own host"):
        parse_corpus(f'[site]\nbase_url = "{base_url}"\n'.replace("\\", "\\\\"), SOURCE)


@pytest.mark.parametrize("base_url", ["/", "/my-list/", "/a/b-c_d.e~f/", "/reading%20room/"])
def test_ordinary_base_urls_pass(base_url):
    check_base_url(base_url)
    assert parse_corpus(f'[site]\nbase_url = "{base_url}"\n', SOURCE).settings.base_url == base_url


@pytest.mark.parametrize(("value", "parsed"), [("0", 0), ("2.5", 2.5), ("64", 64)])
def test_the_whole_index_bound_takes_any_number_of_megabytes(value, parsed):
    assert parse_corpus(f"[site]\nwhole_index_mb = {value}\n", SOURCE).settings.whole_index_mb == parsed


@pytest.mark.parametrize("raw", ["2005.１１４０１", "２００５.11401", "2005.11401v２", "hep-th/９９01001"])
def test_ids_in_other_digits_are_refused(raw):
    with pytest.raises(CorpusError, match="ASCII"):
        split_arxiv_id(raw)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (f'tags = ["{"t" * (MAX_TAG + 1)}"]', f"has {MAX_TAG + 1} characters; at most {MAX_TAG}"),
        (f'note = "{"n" * (MAX_NOTE + 1)}"', f"note has {MAX_NOTE + 1} characters; at most {MAX_NOTE}"),
    ],
)
def test_tags_and_notes_have_size_limits(entry, message):
    with pytest.raises(CorpusError, match=message):
        parse_corpus(f'[[paper]]\nid = "2005.11401"\n{entry}\n', SOURCE)
    parse_corpus(
        f'[[paper]]\nid = "2005.11401"\ntags = ["{"t" * MAX_TAG}"]\nnote = "{"n" * MAX_NOTE}"\n', SOURCE
    )


def test_a_long_title_is_cut_with_one_warning(caplog):
    record = {"title": "word " * 1_000, "version": "v1"}
    meta = meta_from_mirror(record, "2005.11401", "meta/2005.11401.json")
    assert len(meta.title) == MAX_TITLE and meta.title.endswith("…")
    assert [r.getMessage() for r in caplog.records] == [
        f"2005.11401: title of 4999 characters cut to {MAX_TITLE}"
    ]


BAD_BIB = """
@comment{ @article{commented, eprint = {2001.00001}} }
@preamble{ "\\newcommand{\\x}{y}" }
@string{ arxiv = "arXiv" }
@article{good, eprint = {2005.11401}, archivePrefix = {arXiv}}
@article{implausible, journal = {arXiv preprint arXiv:2013.12345}}
@article{fullwidth, eprint = {2005.１１４０１}, archivePrefix = {arXiv}}
@misc{plain, title = {No preprint}}
@article{also-good, note = {arXiv:1706.03762v5}}
"""


def test_import_bibtex_skips_bad_entries_one_line_each(tmp_path, capsys):
    corpus = tmp_path / "readingroom.toml"
    corpus.write_text("[site]\ntitle = 'x'\n")
    bib = tmp_path / "refs.bib"
    bib.write_text(BAD_BIB)
    assert main(["import-bibtex", "--corpus", str(corpus), str(bib)]) == 0
    out, err = capsys.readouterr()
    assert "5 entries, 2 with an arXiv id, 2 added" in out
    skipped = err.rstrip().splitlines()
    assert len(skipped) == 3
    assert skipped[0].startswith("  skipped implausible: journal names '2013.12345' is not an arXiv id")
    assert skipped[1].startswith("  skipped fullwidth: eprint names") and "ASCII" in skipped[1]
    assert skipped[2] == "  skipped plain: no arXiv eprint"
    assert [p.arxiv_id for p in load_corpus(corpus).papers] == ["2005.11401", "1706.03762"]


@pytest.mark.parametrize(
    "text", ["@article{k, title = " + "{" * 30_000, "@a{" * 10_000, "@article{k, t=" + "{x}" * 10_000]
)
def test_bibtex_parsing_is_linear(text):
    started = time.perf_counter()
    parse_bibtex(text)
    assert time.perf_counter() - started < 0.5


def test_text_in_any_script_passes_the_character_checks():
    text = (
        '[site]\ntitle = "קריאה \u200f Reading — naïve 読書"\ndescription = "two\\nlines\\tand a tab"\n\n'
        '[[paper]]\nid = "2005.11401"\ntags = ["👩\u200d💻", "ﬁ", "rag"]\nnote = "first line\\nsecond\\tcolumn"\n'
    )
    corpus = parse_corpus(text, SOURCE)
    assert corpus.settings.title == "קריאה \u200f Reading — naïve 読書"
    assert corpus.papers[0].tags == ("👩\u200d💻", "ﬁ", "rag")


@pytest.mark.parametrize(("field", "limit"), [("title", MAX_SITE_TITLE), ("description", MAX_DESCRIPTION)])
def test_site_title_and_description_have_size_limits(field, limit):
    parse_corpus(f'[site]\n{field} = "{"x" * limit}"\n', SOURCE)
    with pytest.raises(CorpusError, match=rf"\[site\] {field} has {limit + 1} characters; at most {limit}"):
        parse_corpus(f'[site]\n{field} = "{"x" * (limit + 1)}"\n', SOURCE)


def test_list_prints_a_notes_line_breaks_and_tabs_escaped(tmp_path, capsys):
    corpus = tmp_path / "readingroom.toml"
    corpus.write_text('[[paper]]\nid = "2005.11401"\nnote = "first line\\nsecond\\tcolumn"\n')
    assert main(["list", "--corpus", str(corpus)]) == 0
    assert capsys.readouterr().out == "2005.11401  first line\\nsecond\\tcolumn\n"


def test_add_with_a_blank_tag_leaves_the_corpus_file_as_it_was(tmp_path, capsys):
    corpus = tmp_path / "readingroom.toml"
    corpus.write_text('# my list\n[[paper]]\nid = "2005.11401"\n')
    before = corpus.read_bytes()
    assert main(["add", "--corpus", str(corpus), "1706.03762", "--tag", " "]) == 2
    assert capsys.readouterr().err == "error: --tag: tag ' ' is blank; give it a word or remove it\n"
    assert corpus.read_bytes() == before
