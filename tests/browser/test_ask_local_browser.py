"""Ask mode in chromium against model servers on the visitor's computer, as they behave (the loopback
mock, tests/support/mock_local.py): the window and the model are asked of the server and the prompt fits
them; an overflow says so and a smaller budget works; the answer cap is sent and a cut answer can be
continued; the wait while the model reads the prompt is shown; and a public page denied Local Network
Access says so (chromium told the site is public with --ip-address-space-overrides)."""

import pytest
from support import mock_local
from support.ask_page import TIMEOUT_MS, AskPage
from support.chromium import CHROMIUM, CHROMIUM_ARGS, wait_for
from support.mock_llm import MockLLM

pytestmark = pytest.mark.browser


def chat_requests(server: MockLLM) -> list:
    return [r for r in server.requests if r.method == "POST" and r.path.endswith("/chat/completions")]


@pytest.fixture
def open_local(browser, site_url):  # noqa: F811
    pages = []

    def start(server: MockLLM, preset: str = "llamacpp") -> AskPage:
        view = AskPage(browser, site_url, server)
        pages.append(view)
        view.open()
        view.configure(preset, model="", key=None, base_url=f"{server.base_url}/v1")
        return view

    yield start
    for view in pages:
        view.close()
        view.check_requests()


def test_llama_server_window_and_model_are_read_and_the_prompt_fits(open_local):
    with MockLLM(api_key="", local="llama-server", context_window=2048) as server:
        view = open_local(server)
        turn = view.ask()
        (request,) = chat_requests(server)
    assert turn["state"] == "done" and turn["verified"], turn
    status = view.page.text_content(".turn .turn-status")
    assert "context window of 2048 tokens (from the server's /props)" in status
    assert request.body["model"] == mock_local.MODEL_NAME and request.body["max_tokens"] == 512
    sent = mock_local.model_tokens(mock_local.seen_text("openai", request.body, False))
    assert 0.6 * 2048 < sent + 512 <= 2048


def test_an_overflow_says_so_and_a_smaller_budget_answers(open_local):
    with MockLLM(api_key="", local="llama-cpp-python", context_window=2048) as server:
        view = open_local(server, "llamacpppython")
        turn = view.ask()
        assert turn["state"] == "failed" and "ended the stream without any answer" in turn["error"]
        assert "context window" in turn["error"] and "smaller budget" in turn["error"]
        assert view.page.text_content(".turn .retry-smaller").endswith("(fitted to 2048 tokens)")
        view.page.click(".turn .retry-smaller")
        wait_for(view.page, "() => document.querySelector('.turn').dataset.state === 'done'", TIMEOUT_MS)
        turn = view.turn()
        assert turn["verified"] and not turn["error"]
        first, second = chat_requests(server)
        status = view.page.text_content(".turn .turn-status")
    assert "context window of 2048 tokens (from the retry)" in status
    assert len(second.body["messages"][-1]["content"]) < len(first.body["messages"][-1]["content"]) / 1.5
    assert second.body["max_tokens"] == 512


def test_the_answer_cap_is_sent_and_a_cut_answer_can_be_continued(open_local):
    with MockLLM(api_key="", local="llama-server") as server:
        view = open_local(server)
        view.page.fill("#llm-max-tokens", "60")
        turn = view.ask()
        cut = view.page.text_content(".turn .answer-cut")
        assert turn["state"] == "done" and cut.startswith("Cut off at 60 tokens")
        view.page.click(".turn .continue")
        wait_for(view.page, "() => !document.querySelector('.turn .answer-cut')", TIMEOUT_MS)
        wait_for(view.page, "() => document.querySelector('.turn').dataset.state === 'done'", TIMEOUT_MS)
        first, second = chat_requests(server)
    assert first.body["max_tokens"] == 60
    assistant, user = second.body["messages"][-2:]
    assert assistant == {"role": "assistant", "content": server.answers[0].text}  # the cut answer, raw
    assert user["role"] == "user" and "Continue the answer" in user["content"]
    shown = view.turn()["answer"]
    assert server.answers[1].text[:30] in shown and "Cut off at" not in shown  # appended, no longer cut


def test_the_wait_while_the_model_reads_the_prompt_is_shown(open_local):
    with MockLLM(api_key="", local="llama-server") as server:
        server.reading_seconds = 2.5
        view = open_local(server)
        view.page.fill("#ask-q", "How are the predicted queries decoded?")
        view.page.click("#ask-submit")
        shown = wait_for(
            view.page,
            """() => { const s = document.querySelector('.turn .citation-summary')?.textContent || '';
                       return /Waiting for the model \\(\\d[\\d,]* tokens sent, [12] s\\)/.test(s) && s; }""",
            TIMEOUT_MS,
        )
        wait_for(view.page, "() => document.querySelector('.turn').dataset.state === 'done'", TIMEOUT_MS)
    assert "tokens sent" in shown and "Waiting" not in view.turn()["summary"]


PUBLIC_HOST = "reading-room.example"


@pytest.fixture
def public_site(browser, site_url):  # noqa: F811
    """A second chromium, told that the test site's origin is on the public internet, and (so that the
    page, which reads its address space from its host name, sees it too) under a public name."""
    port = site_url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)[1]
    args = [
        *CHROMIUM_ARGS,
        f"--ip-address-space-overrides=127.0.0.1:{port}=public",
        f"--host-resolver-rules=MAP {PUBLIC_HOST} 127.0.0.1",
        f"--unsafely-treat-insecure-origin-as-secure=http://{PUBLIC_HOST}:{port}",  # as https would be
    ]
    chromium = browser.browser_type.launch(executable_path=str(CHROMIUM), args=args)
    yield chromium, site_url.replace("127.0.0.1", PUBLIC_HOST, 1)
    chromium.close()


def test_a_public_page_denied_local_network_access_says_so(public_site):
    public_site, site_url = public_site
    with MockLLM(api_key="", local="llama-server") as server:
        denied = AskPage(public_site, site_url, server)
        denied.open()
        denied.configure("llamacpp", model=mock_local.MODEL_NAME, key=None, base_url=f"{server.base_url}/v1")
        turn = denied.ask()
        denied.errors = [e for e in denied.errors if "loopback" not in e and "net::ERR_FAILED" not in e]
        retries = denied.page.locator(".turn .retry").count()
        denied.close()
        assert turn["state"] == "failed" and "Local network access" in turn["error"], turn
        # The permission is named first; the CORS advice follows only as the other possible cause.
        assert turn["error"].index("Local network access") < turn["error"].index("OLLAMA_ORIGINS")
        assert retries == 1
        allowed = AskPage(public_site, site_url, server)
        allowed.context.grant_permissions(["local-network-access"])
        allowed.open()
        allowed.configure("llamacpp", model=mock_local.MODEL_NAME, key=None, base_url=f"{server.base_url}/v1")
        turn = allowed.ask()
        allowed.close()
    assert turn["state"] == "done" and turn["verified"]
