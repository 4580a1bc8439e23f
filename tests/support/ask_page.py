"""Ask mode's page in chromium, shared by the Ask browser tests: the key, the question, where each API's
settings point at the mock provider, and a page whose requests, dialogs and errors are recorded.
"""

from urllib.parse import urlsplit

from support.chromium import wait_for
from support.mock_llm import MockLLM
from support.site_page import KEYWORD_QUESTION

KEY = "test-key"
QUESTION = KEYWORD_QUESTION + "?"
TIMEOUT_MS = 90_000
# The base URL each API's settings take for the mock (the OpenAI-compatible one ends in /v1, as OpenAI's does);
# ollama stands for a provider that needs no key, so the page sends a request without one.
PROVIDERS = {"custom": "/v1", "ollama": "/v1", "anthropic": "", "gemini": ""}


def origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


class AskPage:
    """A fresh page: requests (with their headers), dialogs, console and page errors recorded."""

    def __init__(self, chromium, url: str, llm: MockLLM):
        self.context = chromium.new_context()
        self.context.grant_permissions(["clipboard-read", "clipboard-write"])
        self.page = self.context.new_page()
        self.page.set_default_timeout(TIMEOUT_MS)
        self.site_url, self.llm = url, llm
        self.requests: list[tuple[str, str, dict]] = []  # (method, url, headers)
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.context.on("request", lambda r: self.requests.append((r.method, r.url, r.all_headers())))
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda e: self.errors.append(f"pageerror: {e}"))

    def _console(self, message) -> None:
        if message.type != "error":
            return
        failed_provider_call = message.text.startswith("Failed to load resource") and message.location.get(
            "url", ""
        ).startswith(self.llm.base_url)
        if not failed_provider_call:
            self.errors.append(f"console: {message.text}")

    def open(self, query: str = "") -> None:
        self.page.goto(self.site_url + query)
        self.page.evaluate("window.readingRoom.ready")

    def configure(
        self,
        provider: str = "custom",
        model: str = "mock-grounded",
        key: str | None = KEY,
        base_url: str = "",
    ) -> None:
        """Choose the provider, pointed at the mock (or at base_url); key None leaves the key field as shown."""
        page = self.page
        if page.get_attribute("#mode-ask", "aria-pressed") != "true":
            page.click("#mode-ask")
        if not page.evaluate("document.getElementById('llm-settings').open"):
            page.click("#llm-settings summary")
        page.select_option("#llm-provider", provider)
        page.fill("#llm-base-url", base_url or self.llm.base_url + PROVIDERS[provider])
        page.fill("#llm-model", model)
        if key is not None:
            page.fill("#llm-key", key)

    def ask(self, question: str = QUESTION, until: str = "done failed no-key") -> dict:
        """Ask through the form; wait for the newest turn to reach one of the `until` states."""
        count = self.page.locator(".turn").count()
        self.page.fill("#ask-q", question)
        self.page.click("#ask-submit")
        states = until.split()
        wait_for(
            self.page,
            f"""() => {{
              const turns = document.querySelectorAll('.turn');
              return turns.length > {count} && {states!r}.includes(turns[turns.length - 1].dataset.state);
            }}""",
            TIMEOUT_MS,
        )
        return self.turn()

    def turn(self, which: int = -1) -> dict:
        """What the newest turn shows."""
        return self.page.evaluate(
            """(which) => {
              const turns = [...document.querySelectorAll('.turn')];
              const turn = turns.at(which);
              const text = (selector) => turn.querySelector(selector)?.textContent ?? null;
              const error = turn.querySelector('.answer-error');
              return {
                state: turn.dataset.state,
                question: text('.turn-question'),
                sources: [...turn.querySelectorAll('.source-card')].map((card) => ({
                  id: card.id, arxiv_id: card.dataset.arxivId, page: Number(card.dataset.page),
                  text: card.querySelector('.source-text').textContent,
                  marks: [...card.querySelectorAll('.source-text mark')].map((m) => m.textContent),
                })),
                answer: text('.answer-body'),
                verified: [...turn.querySelectorAll('.cite.verified')].map((c) => ({
                  source: c.querySelector('.cite-source').getAttribute('href'),
                  pdf: c.querySelector('.cite-pdf').getAttribute('href'), text: c.textContent,
                })),
                unverified: [...turn.querySelectorAll('.cite.unverified')].map((c) => ({
                  text: c.textContent, title: c.getAttribute('title'), links: c.querySelectorAll('a').length,
                })),
                uncited: turn.querySelectorAll('.uncited-mark').length,
                summary: text('.citation-summary'),
                error: error.hidden ? null : error.textContent,
                sources_before_answer: Boolean(
                  turn.querySelector('.sources').compareDocumentPosition(turn.querySelector('.answer'))
                  & Node.DOCUMENT_POSITION_FOLLOWING),
              };
            }""",
            which,
        )

    def check_requests(self) -> None:
        """Only the site's and the provider's origins were contacted; the key only to the provider, in a header."""
        site, provider = origin(self.site_url), origin(self.llm.base_url)
        origins = {origin(url) for _, url, _ in self.requests if urlsplit(url).scheme in ("http", "https")}
        assert origins <= {site, provider}, origins
        for method, url, headers in self.requests:
            assert KEY not in url
            carries_key = any(KEY in value for value in headers.values())
            if carries_key:
                assert origin(url) == provider and method == "POST", url
        assert not any(KEY in r.path for r in self.llm.requests)

    def close(self) -> None:
        self.context.close()
        assert self.errors == []
        assert self.dialogs == []
