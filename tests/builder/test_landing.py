"""The search page's landing state (builder/landing.py, site_templates/landing.html) on a real build:
every example it shows returns passages through the core's own search, a question brings up the paper it
names, the papers it lists are the list's last added and its most cited, and the same site renders the
same landing twice. Escaping of its titles is test_render's hostile site (its papers reach the landing)."""

import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
from support.builds import ADDED_PAPER, SMALL_PAPERS
from support.pyodide import missing_runtime

from builder.citation_graph import read_graph
from builder.landing import QUESTION_TRIES, Example, example_questions, landing
from builder.models import Settings
from builder.report import BuildReport
from builder.site.manifest import read_manifest
from builder.site.pages import render_site
from readingroom_core.browser import open_folder
from readingroom_core.formats.papers import PaperRecord
from readingroom_core.options import SearchOptions

GQA = SMALL_PAPERS[2]  # "Grouped-Query Attention: Sharing Key-Value Heads for Fast Decoding"


class LandingParser(HTMLParser):
    """The #landing section's example queries (data-query), paper links and headings, in page order."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0
        self.examples: list[str] = []
        self.papers: dict[str, list[str]] = {}
        self.heading = ""
        self._in_h3 = False

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "section" and attributes.get("id") == "landing":
            self.depth = 1
        elif self.depth and tag == "section":
            self.depth += 1
        if not self.depth:
            return
        if tag == "a" and "example" in (attributes.get("class") or "").split():
            self.examples.append(attributes["data-query"])
        if tag == "a" and "/papers/" in (attributes.get("href") or ""):
            self.papers.setdefault(self.heading, []).append(
                attributes["href"].split("/papers/")[1].strip("/")
            )
        self._in_h3 = tag == "h3"

    def handle_endtag(self, tag):
        if self.depth and tag == "section":
            self.depth -= 1
        if tag == "h3":
            self._in_h3 = False

    def handle_data(self, data):
        if self._in_h3:
            self.heading = data.strip()


def parsed(site: Path) -> LandingParser:
    parser = LandingParser()
    parser.feed((site / "index.html").read_text(encoding="utf-8"))
    return parser


def keyword(site: Path):
    opened = open_folder(site)
    options = SearchOptions(k=10, mode="bm25")
    return lambda query: opened.engine.search(query, None, options)


def test_every_example_on_the_landing_returns_passages(built_sites):
    site = built_sites.second
    shown = parsed(site)
    search = keyword(site)
    assert "tag:t0" in shown.examples and "tag:t1" in shown.examples  # write_corpus tags papers t0/t1
    # The one title of the list with a short "Name: subtitle" head gives the question, checked to find it.
    question = "How does Grouped-Query Attention work?"
    assert question in shown.examples
    assert GQA in [hit.arxiv_id for hit in search(question)]
    assert any(query.startswith('"') for query in shown.examples)  # a phrase the titles hold
    assert any(query.startswith("author:") for query in shown.examples)
    for query in shown.examples:
        assert search(query), f"the landing shows {query!r}, which returns nothing"


def test_the_landing_lists_the_last_added_and_the_most_cited(built_sites):
    site = built_sites.second
    shown = parsed(site).papers
    listed = [*SMALL_PAPERS, ADDED_PAPER]
    assert shown["Recently added"] == list(reversed(listed))  # `add` appends: the list's end is newest
    manifest = read_manifest(site)
    cited = read_graph((site / manifest.files.graph).read_bytes(), manifest.files.graph).cited_counts()
    ranked = sorted(
        (paper for paper in listed if cited.get(paper)), key=lambda p: (-cited[p], listed.index(p))
    )
    assert shown.get("Most cited in this list", []) == ranked[:5]


def test_a_question_is_kept_only_where_it_brings_up_its_paper():
    """Two papers with short names; the search finds only the second's: only its question is shown."""
    papers = [
        PaperRecord(id="1111.00001", title="A", first_chunk=0, chunk_count=1, short_names=("ALPHA",)),
        PaperRecord(id="2222.00002", title="B", first_chunk=1, chunk_count=1, short_names=("BETA",)),
    ]

    class Found:
        def __init__(self, arxiv_id):
            self.arxiv_id = arxiv_id

    asked: list[str] = []

    def search(query):
        asked.append(query)
        return [Found("2222.00002")]  # whatever is asked, the search brings up only the second paper

    assert example_questions(papers, search) == [
        Example("How does BETA work?", "about BETA (arXiv:2222.00002)")
    ]
    assert asked == ["How does ALPHA work?", "How does BETA work?"]


def test_the_same_site_renders_the_same_landing(built_sites, tmp_path):
    if missing_runtime():
        pytest.skip(missing_runtime())
    site = tmp_path / "site"
    shutil.copytree(built_sites.second, site)
    before = (site / "index.html").read_text(encoding="utf-8")
    manifest = read_manifest(site)
    render_site(site, manifest, Settings(title=manifest.title), BuildReport())
    after = (site / "index.html").read_text(encoding="utf-8")
    section = lambda html: html[html.index('<section id="landing"') : html.index('<section id="reader"')]  # noqa: E731
    assert section(after) == section(before)
    papers = open_folder(site).engine.papers
    search = keyword(site)
    assert landing(papers, {}, search) == landing(papers, {}, search)


def test_questions_stop_after_their_tries_on_a_long_list():
    papers = [
        PaperRecord(id=f"2401.{n:05d}", title="T", first_chunk=n, chunk_count=1, short_names=(f"NAME{n}",))
        for n in range(100)
    ]
    asked: list[str] = []
    assert example_questions(papers, lambda query: asked.append(query) or []) == []
    assert len(asked) == QUESTION_TRIES
