"""The corpus page's table in chromium and its folding rule under Node: the filter folds accents by the
core's own table (wasm/runtime/fold.js against `analysis.fold`), so "oguz" finds Oğuz as `author:oguz`
does (the sort by citations is test_graph_site's, on a list whose papers cite each other).
"""

from __future__ import annotations

import pytest
from support.page_modules import node_script
from support.site_page import PHONE, shoot

from builder.site.folding import page_fold_table
from readingroom_core.analysis import fold
from readingroom_core.filters import author_key

pytestmark = pytest.mark.browser

DESKTOP = {"width": 1366, "height": 900}
NAMES = [
    "Oğuz",
    "Baptiste Rozière",
    "Łukasz Kaiser",
    "Straße",
    "Øystein",
    "Dvořák",
    "Nguyễn Thị",
    "ﬁne",
    "β-VAE",
    "Æsir",
]
FOLD_SCRIPT = """
import { foldWith } from "./fold.js";
const { table, texts } = JSON.parse(process.argv[2]);
console.log(JSON.stringify(texts.map((text) => foldWith(table, text))));
"""


def test_the_page_folds_as_the_core_does(tmp_path):
    table = page_fold_table()
    run = node_script(tmp_path, "fold_check.mjs", FOLD_SCRIPT)
    texts = [*NAMES, *table]  # every character the table folds, one at a time
    folded = run({"table": table, "texts": texts})
    assert folded == [fold(text).lower() for text in texts]
    assert folded[: len(NAMES)] == [author_key(name) for name in NAMES]  # what author: compares


def _shown(page) -> list[str]:
    return page.eval_on_selector_all(
        "#corpus-table tbody tr:not([hidden])", "rows => rows.map((row) => row.dataset.arxivId)"
    )


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_the_corpus_filter_folds_accents(site_url, watched, viewport):
    page = watched.page
    page.set_viewport_size(viewport)
    page.goto(f"{site_url}corpus/")
    first = page.get_attribute("#corpus-table tbody tr", "data-arxiv-id")
    # The generated list's authors are unaccented: give one row an accented author, as arXiv spells one.
    page.eval_on_selector(
        "#corpus-table tbody tr", "row => { row.dataset.authors = row.dataset.authors + ' ahmet oğuz'; }"
    )
    for typed in ("oguz", "OĞUZ", "Oguz"):
        page.fill("#corpus-text", typed)
        assert _shown(page) == [first], typed
    assert page.inner_text("#corpus-shown") == "1 shown"
    page.fill("#corpus-text", "oguz")
    shoot(page, f"corpus-filter-{'phone' if viewport['width'] < 500 else 'desktop'}")
