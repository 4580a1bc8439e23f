"""Ask where no answer can come: without a key, the turn's message and its actions (Copy prompt, Check
an answer) are in view at once, above the sources, on a desktop and a phone; and a model server on this
computer that cannot be reached is described as it is: nothing listening on that port, or a server
there that turns the page's call away (the Local Network Access refusal is test_ask_local_browser's).
"""

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import SimpleNamespace

import pytest
from support.ask_page import AskPage
from support.site_page import PHONE, shoot

pytestmark = pytest.mark.browser

DESKTOP = {"width": 1366, "height": 900}


def _in_view(page, selector: str) -> bool:
    return page.evaluate(
        """(selector) => { const box = document.querySelector(selector).getBoundingClientRect();
             return box.width > 0 && box.top >= 0 && box.bottom <= innerHeight; }""",
        selector,
    )


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_without_a_key_the_message_and_its_actions_are_in_view_above_the_sources(asking, llm, viewport):
    page = asking.page
    page.set_viewport_size(viewport)
    asking.open("?ask=")  # Ask mode, no provider chosen, no key
    turn = asking.ask(until="no-key")
    assert turn["sources"] and llm.requests == []
    assert not turn["sources_before_answer"]  # the answer's box (message, tools) comes first
    assert "No API key set" in turn["summary"]
    for selector in (
        ".turn .turn-question",
        ".turn .citation-summary",
        ".turn .copy-prompt",
        ".turn .check-answer",
    ):
        assert _in_view(page, selector), selector
    assert page.evaluate("scrollY") >= 0
    shoot(page, f"ask-no-key-{'phone' if viewport['width'] < 500 else 'desktop'}")
    page.click(".turn .check-answer")
    assert _in_view(page, ".turn .check-form textarea")


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _local_turn(browser, site_url: str, origin: str) -> dict:
    """A turn asked of the Ollama preset pointed at `origin`, which stands for the provider."""
    asking = AskPage(browser, site_url, SimpleNamespace(base_url=origin, requests=[]))
    asking.open()
    asking.configure("ollama", model="llama3.1", key=None, base_url=f"{origin}/v1")
    turn = asking.ask()
    # the browser's own lines for the calls that failed, which the test made fail
    asking.errors = [e for e in asking.errors if "Failed to load resource" not in e and "CORS" not in e]
    asking.close()
    asking.check_requests()
    return turn


def test_nothing_listening_on_the_local_port_says_so_and_blames_no_permission(browser, site_url):
    port = _closed_port()
    turn = _local_turn(browser, site_url, f"http://127.0.0.1:{port}")
    assert turn["state"] == "failed", turn
    assert f"Nothing is listening at http://127.0.0.1:{port}" in turn["error"]
    assert f"port {port} of this computer" in turn["error"]
    assert "Local network access" not in turn["error"] and "permission" not in turn["error"].lower()


class _NoCors(BaseHTTPRequestHandler):
    """A server that answers every request without CORS headers, as Ollama does for an origin it was not
    told to allow."""

    def _answer(self) -> None:
        self.send_response(403)
        self.send_header("content-length", "0")
        self.end_headers()

    do_GET = do_POST = do_OPTIONS = _answer

    def log_message(self, *args) -> None:
        pass


def test_a_local_server_that_refuses_the_page_is_not_called_absent(browser, site_url):
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NoCors)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        port = server.server_address[1]
        turn = _local_turn(browser, site_url, f"http://127.0.0.1:{port}")
    finally:
        server.shutdown()
        server.server_close()
    assert turn["state"] == "failed", turn
    assert f"A server answers at http://127.0.0.1:{port} but turned this page's call away" in turn["error"]
    assert "OLLAMA_ORIGINS" in turn["error"] and "Nothing is listening" not in turn["error"]
