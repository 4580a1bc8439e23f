"""Ask's sources in chromium: with the prompt budget left empty they follow the model's context window,
and they are the sources `ask --prompt-only --json` gives the CLI for the same window, at 4,500 tokens
and at a 128k window alike; at desktop and phone sizes the settings say the window was used.

The page embeds the query with ONNX Runtime Web and the CLI with ONNX Runtime, whose vectors differ in
the last bits, so far down a long list a near tie may swap: there the leading sources and the count are
held equal, and nearly all of the rest (tests/builder/test_answers.py holds the core itself equal in
Pyodide and CPython, given one vector).
"""

import json
import os

import pytest
from support.ask_page import KEY, QUESTION, AskPage
from support.site_page import DESKTOP, PHONE

from builder.cli import main
from readingroom_core.sourcing import BASE_CANDIDATES

pytestmark = pytest.mark.browser

WINDOW = 128_000
LEADING = 10  # sources held in the same order; below them near ties may swap


def _spans(sources: list[dict]) -> list[tuple]:
    return [(s["arxiv_id"], s["page_start"], s["page_end"], s["chunk_id"]) for s in sources]


def cli_sources(site, capsys, *extra: str) -> list[tuple]:
    assert main(["ask", QUESTION, "--site", str(site), "--prompt-only", "--json", *extra]) == 0
    return _spans(json.loads(capsys.readouterr().out)["sources"])


def test_the_browsers_sources_follow_the_window_and_equal_the_clis(asking, llm, served_site, capsys):
    asking.open()
    ask = """([question, base, key, extra]) => readingRoom.ask(question,
               {provider: "openai-compatible", base_url: base + "/v1", model: "mock-grounded", key, ...extra})"""
    default = asking.page.evaluate(ask, [QUESTION, llm.base_url, KEY, {}])
    wide = asking.page.evaluate(ask, [QUESTION, llm.base_url, KEY, {"context": WINDOW}])
    assert len(default["sources"]) <= BASE_CANDIDATES < len(wide["sources"])
    site = served_site[0]
    assert _spans(default["sources"]) == cli_sources(site, capsys)
    cli_wide = cli_sources(site, capsys, "--context", str(WINDOW))
    browser_wide = _spans(wide["sources"])
    assert len(browser_wide) == len(cli_wide) and browser_wide[:LEADING] == cli_wide[:LEADING]
    assert len(set(browser_wide) & set(cli_wide)) >= 0.9 * len(cli_wide)
    typed = asking.page.evaluate(ask, [QUESTION, llm.base_url, KEY, {"context": WINDOW, "budget": 2000}])
    assert len(typed["sources"]) < len(default["sources"])  # a budget the visitor sets is kept when smaller


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_an_empty_budget_fits_the_window_typed_in_the_settings(browser, site_url, llm, viewport, tmp_path):
    view = AskPage(browser, site_url, llm)
    try:
        view.page.set_viewport_size(viewport)
        view.open()
        view.configure()
        assert view.page.input_value("#llm-budget") == ""
        assert view.page.get_attribute("#llm-budget", "placeholder") == "fit the model"
        narrow = view.ask()
        view.page.fill("#llm-context", str(WINDOW))
        wide = view.ask()
        assert narrow["state"] == wide["state"] == "done"
        assert len(narrow["sources"]) <= BASE_CANDIDATES < len(wide["sources"])
        status = view.page.locator(".turn").last.locator(".turn-status").first.text_content()
        assert f"Fitted to a context window of {WINDOW} tokens (from the settings)" in status
        view.page.locator(".turn").last.scroll_into_view_if_needed()
        shot = tmp_path / f"ask-sources-{viewport['width']}.png"
        view.page.screenshot(path=str(shot))
        if os.environ.get("READINGROOM_KEEP_SCREENSHOTS"):
            view.page.screenshot(path=os.environ["READINGROOM_KEEP_SCREENSHOTS"] + shot.name)
    finally:
        view.close()
    view.check_requests()
