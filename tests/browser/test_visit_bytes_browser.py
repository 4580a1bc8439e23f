"""What the status line counts: every byte the visit brought over unasked, the index the worker reads
whole after "ready" included; and a browser that asks sites to save data (navigator.connection.saveData,
set through the DevTools protocol) gets no index read whole at all.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from support.chromium import wait_for
from support.served import serving
from support.site_page import LOAD_TIMEOUT_MS

from readingroom_core.browser import open_folder
from readingroom_core.ranges import folder_reader

pytestmark = pytest.mark.browser


def whole_index_files(site: Path) -> list[str]:
    """The ranged files the worker fetches whole once searches pause, less the forward index that
    start-up already fetches whole (the small test site's budget holds them all)."""
    opened = open_folder(site)
    opened.load_semantic()
    manifest = json.loads((site / "manifest.json").read_text())
    postings = json.loads(folder_reader(site)(manifest["files"]["postings"]).decode("utf-8"))
    return [p for p in json.loads(opened.ranged_files()) if p != postings["forward_index"][0]]


def wire_bytes(site: Path, path: str) -> int:
    """The bytes a file travels as: its .gz where only that is stored."""
    stored = site / path
    return stored.stat().st_size if stored.exists() else (site / f"{path}.gz").stat().st_size


def _visit(browser, url: str, save_data: bool):
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(LOAD_TIMEOUT_MS)
    errors: list[str] = []
    unranged: list[str] = []
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on(
        "response",
        lambda r: r.request.headers.get("range") is None and unranged.append(urlsplit(r.url).path),
    )
    if save_data:
        context.new_cdp_session(page).send("Emulation.setDataSaverOverride", {"dataSaverEnabled": True})
    page.goto(url)
    page.evaluate("window.readingRoom.semanticReady")
    return context, page, errors, unranged


def _status_megabytes(page) -> float:
    line = page.text_content("#status") or ""
    found = re.search(r"\((\d+\.\d) MB loaded\)", line)
    assert found, line
    return float(found[1])


def test_the_status_line_counts_the_index_read_whole_after_ready(browser, built_sites):
    site = built_sites.first
    files = whole_index_files(site)
    with serving(site) as url:
        context, page, errors, unranged = _visit(browser, url, save_data=False)
        try:
            before = page.evaluate("readingRoom.status()")
            wait_for(page, "readingRoom.status().timeline.index_read_whole !== undefined")
            wait_for(
                page, f"readingRoom.status().kinds.index_whole >= {sum(wire_bytes(site, f) for f in files)}"
            )
            after = page.evaluate("readingRoom.status()")
            shown = _status_megabytes(page)
        finally:
            context.close()
    assert errors == []
    whole = sum(wire_bytes(site, path) for path in files)
    assert after["kinds"]["index_whole"] == whole  # each file once, as it travelled
    assert after["bytes"] == before["bytes"] + whole - before["kinds"].get("index_whole", 0)
    assert after["bytes"] == sum(after["kinds"].values())
    assert shown == round(after["bytes"] / 1e6, 1)
    assert after["loading"] is None  # the index read whole is not "loading" again
    assert {p.lstrip("/") for p in unranged} >= set(files)


def test_a_browser_asking_to_save_data_gets_no_index_read_whole(browser, built_sites):
    site = built_sites.first
    files = whole_index_files(site)
    with serving(site) as url:
        context, page, errors, unranged = _visit(browser, url, save_data=True)
        try:
            wait_for(page, "readingRoom.status().timeline.index_whole_skipped !== undefined")
            hits = page.evaluate("readingRoom.search('dense retrieval', {k: 5})")
            status = page.evaluate("readingRoom.status()")
            shown = _status_megabytes(page)
        finally:
            context.close()
    assert errors == [] and hits
    assert "index_read_whole" not in status["timeline"] and "index_whole" not in status["kinds"]
    assert not {p.lstrip("/") for p in unranged} & set(files)  # read by range only
    assert shown == round(status["bytes"] / 1e6, 1)
