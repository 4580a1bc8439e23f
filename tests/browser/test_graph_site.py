"""The citation graph and the map on a built site: the generated citing list (support/citing.py) built
for real, its pages' citation links resolving, the map deterministic and its colours legible, and in
chromium the map, a paper's "cited by", its citation buttons and search results sorted and lit up."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pytest
from support import citing
from support.builds import run_build
from support.chromium import wait_for
from support.served import require_browser, serving
from support.site_page import PHONE, Watched, shoot

from builder.paper_map import MapData, map_layout, paper_map, tsne
from builder.site.runtime import RUNTIME_SOURCES
from readingroom_core.formats.manifest import read_manifest
from readingroom_core.formats.papers import read_papers
from readingroom_core.ranges import folder_reader

IDS = (citing.A, citing.B, citing.C, citing.D)
DESKTOP = {"width": 1366, "height": 900}


@pytest.fixture(scope="module")
def citing_site(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("citing-site")
    mirror = citing.write_citing_mirror(root / "mirror")
    corpus = root / "readingroom.toml"
    tags = ["retrieval", "models", "models", ""]
    corpus.write_text(
        '[site]\ntitle = "Citing list"\n\n'
        + "".join(
            f'[[paper]]\nid = "{i}"\ntags = {json.dumps([t] if t else [])}\n\n'
            for i, t in zip(IDS, tags, strict=True)
        )
    )
    assert run_build(corpus, root / "site", root / "cache", mirror) == 0
    return root / "site"


class Links(HTMLParser):
    """The links inside the element with id `inside` (every link when None)."""

    def __init__(self, inside: str | None = None):
        super().__init__()
        self.inside, self.depth, self.links = inside, 0 if inside else 1, []

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if self.depth:
            self.depth += 1
        elif attributes.get("id") == self.inside:
            self.depth = 1
        if self.depth and tag == "a":
            self.links.append(attributes["href"])

    def handle_endtag(self, tag):
        if self.depth and self.inside:
            self.depth -= 1


def links(page: Path, inside: str) -> list[str]:
    parser = Links(inside)
    parser.feed(page.read_text(encoding="utf-8"))
    return parser.links


def paper_page(site: Path, arxiv_id: str) -> Path:
    return site / "papers" / arxiv_id / "index.html"


def test_paper_pages_list_the_graph_and_its_links_resolve(citing_site):
    assert [
        link for link in links(paper_page(citing_site, citing.A), "cited-by") if not link.startswith("https:")
    ] == [
        f"/papers/{citing.B}/",
        f"/papers/{citing.C}/",
    ]
    # B cites A on a known page of B: the link opens B's indexed version there
    assert f"https://arxiv.org/pdf/{citing.B}v1#page={citing.citing_page(citing.B)}" in links(
        paper_page(citing_site, citing.A), "cited-by"
    )
    assert sorted(
        link for link in links(paper_page(citing_site, citing.B), "cites") if link.startswith("/")
    ) == [
        f"/papers/{citing.A}/",
        f"/papers/{citing.C}/",
    ]
    html = paper_page(citing_site, citing.D).read_text(encoding="utf-8")
    assert "Cites 0 papers in this list" in html and "Cited by 0 papers in this list" in html
    for arxiv_id in IDS:
        page = paper_page(citing_site, arxiv_id)
        for link in links(page, "cites") + links(page, "cited-by"):
            if link.startswith("/"):
                assert (citing_site / link.strip("/") / "index.html").is_file(), link
        text = page.read_text(encoding="utf-8")
        assert f'href="https://arxiv.org/pdf/{arxiv_id}v1"' in text  # the PDF link names the version indexed


def test_corpus_page_counts_citations_and_holds_a_deterministic_map(citing_site):
    html = (citing_site / "corpus" / "index.html").read_text(encoding="utf-8")
    cited = dict(re.findall(r'data-arxiv-id="([^"]+)"[^>]*data-cited="(\d+)"', html, re.DOTALL))
    assert cited == {citing.A: "2", citing.B: "2", citing.C: "1", citing.D: "0"}
    drawn = json.loads(re.search(r'id="map-data">(.*?)</script>', html, re.DOTALL)[1])
    manifest = read_manifest((citing_site / "manifest.json").read_bytes())
    papers = read_papers(folder_reader(citing_site)(manifest.files.papers))
    edges = [(a, b) for a, b, _, _ in citing.expected()]
    again = [paper_map(papers, sorted(edges)) for _ in range(2)]
    assert isinstance(again[0], MapData) and again[0] == again[1]
    assert drawn["xy"] == again[0].to_json()["xy"] and drawn["ids"] == list(IDS)
    assert all(0 <= value <= 1000 for value in drawn["xy"]) and len(drawn["edges"]) == 2 * 5
    assert drawn["tags"] == ["models", "retrieval", "none"] and len(json.dumps(drawn)) < 1000


def test_past_the_sample_t_sne_places_a_sample_and_the_rest_lands_beside_its_likes():
    rng = np.random.default_rng(3)
    centres = rng.normal(size=(6, 48))
    topic = np.arange(600) % 6
    units = centres[topic] + 0.35 * rng.normal(size=(600, 48))
    units /= np.linalg.norm(units, axis=1, keepdims=True)
    layout = map_layout(units, sample=150)
    assert np.array_equal(layout, map_layout(units, sample=150))  # deterministic
    sampled = np.linspace(0, 599, 150).round().astype(int)
    assert np.array_equal(layout[sampled], tsne(units[sampled]))
    # every paper lies nearer its own topic's sampled papers than any other topic's
    means = np.array([layout[sampled][topic[sampled] == t].mean(axis=0) for t in range(6)])
    nearest_topic = np.argmin(((layout[:, None, :] - means[None]) ** 2).sum(axis=2), axis=1)
    assert np.mean(nearest_topic == topic) > 0.95
    assert np.array_equal(map_layout(units[:150], sample=150), tsne(units[:150]))  # small lists: exact


def luminance(colour: str) -> float:
    def channel(value: int) -> float:
        c = value / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
    return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b)


def test_map_colours_pass_contrast_in_both_themes():
    css = (RUNTIME_SOURCES / "style.css").read_text(encoding="utf-8")
    backgrounds = re.findall(r"--bg: (#[0-9a-f]{6})", css)
    colours = re.findall(r'\[data-group="\d"\] \{ --map-c: (#[0-9a-f]{6}); \}', css)
    assert len(backgrounds) == 2 and len(colours) == 8
    for background in backgrounds:
        for colour in colours:
            light, dark = sorted((luminance(colour), luminance(background)), reverse=True)
            assert (light + 0.05) / (dark + 0.05) >= 3.0, (colour, background)  # WCAG non-text contrast


@pytest.fixture(scope="module")
def citing_url(citing_site):
    require_browser()
    with serving(citing_site) as url:
        yield url


@pytest.fixture
def watched(browser):
    view = Watched(browser)
    yield view
    view.context.close()
    assert view.foreign == [] and view.errors == []


pytestmark = pytest.mark.browser


def test_the_map_opens_a_paper_by_keyboard_and_its_cited_by_list(citing_url, watched):
    page = watched.page
    page.goto(f"{citing_url}corpus/")
    points = page.locator("#map .map-point")
    assert points.count() == 4
    assert page.locator("#map svg a[tabindex='0']").count() == 1  # one tab stop; arrows move
    labels = sorted(points.nth(i).get_attribute("aria-label") for i in range(4))
    assert labels == sorted(topic.title for topic in citing.topics().values())
    points.first.focus()
    named = page.inner_text("#map-label")
    assert named == points.first.get_attribute("aria-label")
    page.select_option("#corpus-tag", "retrieval")
    assert page.locator("#map .map-point.dimmed").count() == 3
    page.check("#map-edges")
    title_of_a = citing.topics()[citing.A].title
    page.locator(f"#map .map-point[aria-label='{title_of_a}']").focus()
    # the focused paper's citations alone, each an arrow from the citing paper to the cited one
    touching = [(a, b) for a, b, _, _ in citing.expected() if citing.A in (a, b)]
    arrows = page.eval_on_selector_all(
        "#map .map-edges line",
        "lines => lines.map((l) => [l.getAttribute('class'), l.getAttribute('marker-end')])",
    )
    assert sorted(kind for kind, _ in arrows) == sorted(
        "cites" if a == citing.A else "cited-by" for a, _ in touching
    )
    assert all(marker == "url(#map-arrow)" for _, marker in arrows) and len(arrows) < 5
    cites = sum(a == citing.A for a, _ in touching)
    assert (
        page.inner_text("#map-label")
        == f"{title_of_a}: cites {cites} {'paper' if cites == 1 else 'papers'} of the list, cited by {len(touching) - cites}"
    )
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/papers/{citing.A}/")
    assert page.inner_text("#cited-by-heading") == "Cited by 2 papers in this list"
    page.locator("#cited-by a").first.click()
    page.wait_for_url(f"**/papers/{citing.B}/")
    assert page.inner_text("h1") == citing.topics()[citing.B].title
    assert page.inner_text("#cite-actions") == "Copy citation BibTeX Add to my list"


def test_results_sort_by_citations_and_light_up_the_map(citing_url, watched):
    page = watched.page
    watched.open(citing_url + "?mode=bm25")
    watched.search("model training results")
    page.select_option("#sort", "cited")
    page.wait_for_url("**sort=cited**")
    order = [
        group.get_attribute("data-arxiv-id") for group in page.query_selector_all("#results .paper-group")
    ]
    counts = {citing.A: 2, citing.B: 2, citing.C: 1, citing.D: 0}
    assert len(order) > 2 and [counts[i] for i in order] == sorted((counts[i] for i in order), reverse=True)
    page.click("#results .map-link")
    page.wait_for_url("**/corpus/?on=**")
    wait_for(page, "document.querySelectorAll('#map .map-point.lit').length > 0")
    lit = page.eval_on_selector_all("#map .map-point.lit", "points => points.length")
    assert lit == len(order) and page.inner_text("#map-label").startswith(f"{len(order)} papers")


def test_most_cited_sorts_the_most_cited_first_on_the_first_click(citing_url, watched):
    page = watched.page
    page.goto(f"{citing_url}corpus/")
    cited = "rows => rows.map((row) => Number(row.dataset.cited))"
    counts = page.eval_on_selector_all("#corpus-table tbody tr", cited)
    assert len(set(counts)) > 1  # the list's papers are cited unequally, so an order shows
    page.click("button[data-sort=cited]")
    assert page.eval_on_selector_all("#corpus-table tbody tr", cited) == sorted(counts, reverse=True)
    assert page.get_attribute("th:has(button[data-sort=cited])", "aria-sort") == "descending"
    page.click("button[data-sort=cited]")
    assert page.eval_on_selector_all("#corpus-table tbody tr", cited) == sorted(counts)
    page.click("button[data-sort=title]")  # text still starts A to Z
    titles = page.eval_on_selector_all(
        "#corpus-table tbody tr", "rows => rows.map((row) => row.dataset.title)"
    )
    assert titles == sorted(titles)


def _box(page, selector: str) -> dict:
    return page.eval_on_selector(
        selector,
        "e => { const b = e.getBoundingClientRect(); return {x: b.x, y: b.y, right: b.right, bottom: b.bottom}; }",
    )


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_the_map_key_and_label_are_in_view_beside_the_map(citing_url, watched, viewport):
    page = watched.page
    page.set_viewport_size(viewport)
    page.goto(f"{citing_url}corpus/")
    page.locator("#map-heading").scroll_into_view_if_needed()
    page.evaluate("document.getElementById('map-heading').scrollIntoView({block: 'start'})")
    page.locator("#map .map-point").first.focus()
    canvas, legend, label = (_box(page, s) for s in ("#map-canvas", "#map-legend", "#map-label"))
    height, width = viewport["height"], viewport["width"]
    for box in (legend, label):
        assert 0 <= box["y"] and box["bottom"] <= height and box["right"] <= width, box
    if width > 1000:  # beside the map, the whole map in view with them
        assert legend["x"] >= canvas["right"] and label["x"] >= canvas["right"]
        assert canvas["bottom"] <= height
    else:  # on a phone the key comes first and the map below it, as wide as the screen
        assert legend["bottom"] <= canvas["y"] and canvas["right"] <= width
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    page.check("#map-edges")
    page.locator("#map .map-point").first.focus()
    shoot(page, f"corpus-map-{'phone' if width < 500 else 'desktop'}")
