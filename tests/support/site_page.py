"""Pages of the built test site in chromium, shared by the browser tests: a watched page (any request off
the machine, console error or page error is recorded for the test to fail on), the viewports screenshots
are taken at, and a held dense directory that keeps semantic search from coming up until released.
"""

import os
import re
import time
from pathlib import Path
from urllib.parse import urlsplit

from support.chromium import wait_for

BASE = "/sub/path/"  # the browser tests' site is served under a sub-path, as a project page is
LOOPBACK = {"127.0.0.1", "localhost"}
LOAD_TIMEOUT_MS = 90_000
DOC2QUERY = "1904.08375"
KEYWORD_QUESTION = "How many predicted queries does doc2query append"


class Watched:
    """A fresh page with every request host, console error and page error recorded."""

    def __init__(self, browser):
        self.context = browser.new_context()
        self.page = self.context.new_page()
        self.page.set_default_timeout(LOAD_TIMEOUT_MS)
        self.foreign: list[str] = []
        self.errors: list[str] = []
        self.page.on("request", self._request)
        self.page.on(
            "console",
            lambda m: (
                m.type == "error" and self.errors.append(f"console: {m.text} ({m.location.get('url')})")
            ),
        )
        self.page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))

    def _request(self, request):
        host = urlsplit(request.url).hostname
        if urlsplit(request.url).scheme not in ("data", "blob") and host not in LOOPBACK:
            self.foreign.append(request.url)

    def open(self, url: str) -> None:
        self.page.goto(url)
        self.page.evaluate("window.readingRoom.ready")

    def search(self, query: str) -> None:
        """Type a query and submit it, then wait for that query's results (or its 'no passages')."""
        self.page.fill("#q", query)
        self.page.press("#q", "Enter")
        wait_for(self.page, "document.querySelector('#results').getAttribute('aria-busy') === 'false'")
        self.page.wait_for_selector("#results .message")

    def hits(self) -> list[tuple[str, int]]:
        return [
            (hit.get_attribute("data-arxiv-id"), int(hit.get_attribute("data-page")))
            for hit in self.page.query_selector_all("#results .hit")
        ]


DESKTOP = {"width": 1366, "height": 768}
PHONE = {"width": 390, "height": 844}
# The dense directory: semantic search comes up once it is read (its lists and rows are read by range)
VECTORS = re.compile(r".*/data/dense\.[0-9a-f]+\.json(\.gz)?$")


def release(page, held: list) -> None:
    """Let the held dense directory through, once the worker has asked for it (after keyword search's files)."""
    wait_until_held(page, held)
    for route in held:
        route.continue_()


def wait_until_held(page, held: list) -> None:
    deadline = time.monotonic() + 60
    while not held and time.monotonic() < deadline:
        page.evaluate("1")  # playwright hands routes over while it talks to the page
    assert held, "the dense directory was never requested"


def shoot(page, name: str) -> None:
    folder = os.environ.get("READINGROOM_SHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"{name}.png"))
