"""The browser layer: the built test site in Debian chromium through playwright, Ask's page against the
mock provider, the page's modules and the search core under Node (Pyodide). Sites come from the suite's
builds (tests/support/builds.py); the pages' helpers are tests/support/site_page.py and ask_page.py."""

import pytest

from builder.offline import load_onnxruntime_first, use_offline_environment

use_offline_environment()
load_onnxruntime_first()  # test modules import usearch at their top
# imported below before pytest_configure registers it as a plugin: rewritten as a plugin's asserts are
pytest.register_assert_rewrite("support.builds")

from support.ask_page import KEY, AskPage  # noqa: E402
from support.builds import ADDED_PAPER, SMALL_PAPERS  # noqa: E402
from support.chromium import CHROMIUM, CHROMIUM_ARGS  # noqa: E402
from support.mock_llm import MockLLM  # noqa: E402
from support.served import build_from_cache, corpus_text, require_browser, serving  # noqa: E402
from support.site_page import BASE, Watched  # noqa: E402


def pytest_configure(config):
    # The builds' fixtures as one plugin, shared with the builder layer (tests/builder/conftest.py).
    config.pluginmanager.import_plugin("support.builds")


@pytest.fixture(scope="module")
def browser():
    """Debian's chromium through playwright, one per test module."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture(scope="module")
def served_site(built_sites, tmp_path_factory, generated_corpus):
    """(site folder, its URL on loopback)."""
    require_browser()
    corpus = corpus_text((*SMALL_PAPERS, ADDED_PAPER), "Browser test", base_url=BASE)
    site = build_from_cache(
        tmp_path_factory.mktemp("browser-site"), corpus, built_sites.cache, generated_corpus
    )
    with serving(site) as url:
        yield site, url


@pytest.fixture(scope="module")
def site_url(served_site):
    return served_site[1]


@pytest.fixture
def watched(browser):
    view = Watched(browser)
    yield view
    view.context.close()
    assert view.foreign == [], f"requests left the machine: {view.foreign}"
    assert view.errors == []


@pytest.fixture
def llm():
    with MockLLM(api_key=KEY) as server:
        yield server


@pytest.fixture
def asking(browser, site_url, llm):
    view = AskPage(browser, site_url, llm)
    yield view
    view.close()
    view.check_requests()
