"""Ask mode in Debian chromium: the built test site on one loopback origin, the mock LLM provider
(tests/support/mock_llm.py, real SSE in each API's wire format) on another.

Every request the page and its worker make is recorded: only the site's origin and the provider's are
ever contacted, and the key travels only to the provider, in a header, never in a URL. Console errors
and page errors fail a test, except the browser's own "Failed to load resource" line for a provider
response that the test asked to fail (401, 429, a dropped body).
"""

import re
import time
from urllib.parse import urlencode

import pytest
from support import corpus
from support.ask_page import KEY, QUESTION, AskPage
from support.chromium import CHROMIUM, CHROMIUM_ARGS, wait_for
from support.mock_llm import INVENTED_ID, UNCITED, MockLLM, write_answer
from support.site_page import DOC2QUERY

pytestmark = pytest.mark.browser

OTHER_KEY = "other-key"


def _words(text: str) -> str:
    return " ".join(text.split())


def _expected_pages(label: str) -> int:
    return int(label.split(".")[1].split("-")[0])


@pytest.mark.parametrize("provider", ["custom", "anthropic", "gemini"])
def test_a_grounded_answer_streams_after_its_sources_and_every_citation_verifies(asking, llm, provider):
    asking.open()
    asking.configure(provider)
    turn = asking.ask()
    assert turn["state"] == "done", turn
    assert turn["question"] == QUESTION and turn["sources_before_answer"]
    assert turn["sources"] and turn["sources"][0]["arxiv_id"] == DOC2QUERY
    expected = llm.answers[-1].expected
    assert expected and all(status == "verified" for *_, status in expected)
    assert turn["summary"] == f"{len(expected)} of {len(expected)} citations verified"
    assert len(turn["verified"]) == len(expected) and turn["unverified"] == []
    cards = {card["id"]: card for card in turn["sources"]}
    for cite, (arxiv_id, label, quote, _) in zip(turn["verified"], expected, strict=True):
        card = cards[cite["source"].removeprefix("#")]  # links to its source card...
        assert card["arxiv_id"] == arxiv_id
        assert _words(quote) in _words(" ".join(card["marks"]))  # ...where the quote is highlighted
        version = {topic.arxiv_id: f"v{topic.versions}" for topic in corpus.TOPICS}[arxiv_id]
        assert cite["pdf"] == f"https://arxiv.org/pdf/{arxiv_id}{version}#page={_expected_pages(label)}"
    api_request = llm.requests[-1]
    if provider == "anthropic":
        assert api_request.headers["x-api-key"] == KEY
        assert api_request.headers["anthropic-dangerous-direct-browser-access"] == "true"
    if provider == "gemini":
        assert api_request.headers["x-goog-api-key"] == KEY and "key=" not in api_request.path
    if provider == "custom":
        assert api_request.headers["authorization"] == f"Bearer {KEY}"


def test_fabricated_citations_are_flagged_and_hostile_markup_is_inert(asking, llm):
    asking.open()
    asking.configure("anthropic", model="mock-mixed")
    turn = asking.ask()
    assert turn["state"] == "done", turn
    expected = llm.answers[-1].expected
    good = [e for e in expected if e[3] == "verified"]
    bad = [e for e in expected if e[3] != "verified"]
    assert len(turn["verified"]) == len(good) and len(turn["unverified"]) == len(bad) == 3
    assert turn["summary"] == f"{len(good)} of {len(expected)} citations verified"
    invented = next(c for c in turn["unverified"] if INVENTED_ID in c["text"])
    assert "not verified" in invented["text"] and invented["title"].startswith("Not verified")
    assert all(c["links"] == 0 for c in turn["unverified"])  # never linked like a verified one
    assert turn["uncited"] >= 1 and UNCITED in turn["answer"]
    page = asking.page
    assert page.evaluate("window.__pwned") is None
    body = ".turn .answer-body"
    assert (
        page.locator(f"{body} img, {body} script, {body} [onerror], {body} style, {body} iframe").count() == 0
    )
    # The one same-site link is the page's own "in context" beside a verified citation (the reading view).
    own = ":not(.in-context[href^='?read='])"
    assert (
        page.locator(
            f"{body} a[href^='javascript'], {body} a:not([href^='http']):not([href^='#']){own}"
        ).count()
        == 0
    )
    assert page.locator(f"{body} a.in-context").count() == page.locator(f"{body} .cite.verified").count() > 0
    assert "<script>" in turn["answer"]  # shown as text


@pytest.mark.parametrize(
    ("scenario", "message"),
    [
        ("bad_key", "refused the key (HTTP 401)"),
        ("rate_limit", "Rate limited by the provider (HTTP 429)"),
        ("dropped", "connection dropped before the answer was finished"),
        ("model_not_found", "does not know the model"),
        ("context_too_long", "prompt is too long"),
        ("empty", "ended the stream without any answer"),
    ],
)
def test_provider_failures_say_what_to_do_and_keep_the_question_and_sources(asking, llm, scenario, message):
    asking.open()
    asking.configure("custom", model=f"mock-{scenario}")
    turn = asking.ask()
    assert turn["state"] == "failed", turn
    assert message in turn["error"]
    assert turn["question"] == QUESTION and turn["sources"]
    if scenario == "dropped":
        assert turn["answer"].strip()  # the partial answer stays
        assert llm.answers[-1].text.startswith(turn["answer"].strip()[:20])
    if scenario == "rate_limit":  # Retry-After: 1 was honoured with one retry, then reported
        assert [r.status for r in llm.requests if r.method == "POST"] == [429, 429]
    retriable = scenario in ("rate_limit", "dropped")  # the others need a change of settings
    assert asking.page.locator(".turn .retry").count() == int(retriable)
    too_long = scenario in ("context_too_long", "empty")  # offered again with a smaller budget
    assert asking.page.locator(".turn .retry-smaller").count() == int(too_long)


def test_a_short_rate_limit_is_retried_once_by_itself(asking, llm):
    asking.open()
    asking.configure("custom", model="mock-rate_limit_once")
    turn = asking.ask()
    assert turn["state"] == "done" and turn["error"] is None
    assert [r.status for r in llm.requests if r.method == "POST"] == [429, 200]


def test_stop_aborts_the_stream_and_keeps_the_partial_answer(asking, llm):
    asking.open()
    asking.configure("custom", model="mock-slow")
    asking.page.fill("#ask-q", QUESTION)
    asking.page.click("#ask-submit")
    asking.page.wait_for_selector(".turn .source-card")
    wait_for(asking.page, "() => document.querySelector('.turn .answer-body').textContent.length > 20")
    asking.page.click("#ask-stop")
    wait_for(asking.page, "() => document.querySelector('.turn').dataset.state === 'failed'")
    turn = asking.turn()
    assert "Stopped" in turn["error"] and turn["answer"].strip() and turn["sources"]
    assert len(turn["answer"]) < len(llm.answers[-1].text)
    assert asking.page.is_hidden("#ask-stop")


def test_a_5_mb_answer_keeps_the_page_responsive_and_stop_works(asking, llm):
    asking.open()
    asking.configure("custom", model="mock-huge")
    page = asking.page
    page.fill("#ask-q", QUESTION)
    page.click("#ask-submit")
    wait_for(page, "() => document.querySelector('.turn .answer-body').textContent.length > 50000")
    delays = []
    for _ in range(5):  # the page answers a script of its own promptly while the stream pours in
        started = time.perf_counter()
        page.evaluate("() => document.querySelector('.turn').dataset.state")
        delays.append(time.perf_counter() - started)
        time.sleep(0.2)
    assert max(delays) < 1.0, delays
    started = time.perf_counter()
    page.click("#ask-stop", timeout=2000)
    wait_for(page, "() => document.getElementById('ask-stop').hidden", 2000)
    assert time.perf_counter() - started < 2.0
    wait_for(page, "() => document.querySelector('.turn').dataset.state === 'failed'")
    turn = asking.turn()
    assert "Stopped" in turn["error"] and turn["verified"]
    shown = len(turn["answer"]) - turn["uncited"] * len("(no citation)")  # each filler sentence is marked
    assert shown < 201_000 and "Answer cut to its first 200,000 of" in turn["answer"]


def test_exports_give_the_answer_with_references_and_bibtex_of_the_cited_papers(asking, llm):
    asking.open()
    asking.configure(model="mock-mixed")
    turn = asking.ask()
    page = asking.page
    with page.expect_download() as markdown_download:
        page.click(".turn .export-md")
    markdown = open(markdown_download.value.path(), encoding="utf-8").read()
    with page.expect_download() as bibtex_download:
        page.click(".turn .export-bib")
    bibtex = open(bibtex_download.value.path(), encoding="utf-8").read()
    assert markdown.startswith(f"# {QUESTION}\n") and llm.answers[-1].text.strip() in markdown
    assert "## References" in markdown and f"https://arxiv.org/abs/{DOC2QUERY}" in markdown
    assert f"arXiv:{INVENTED_ID}" in markdown.split("## References")[1]  # listed, marked unverified
    assert turn["summary"] in markdown
    cited = {arxiv_id for arxiv_id, *_ in llm.answers[-1].expected} - {INVENTED_ID}
    counts = [len(re.findall(rf"eprint = {{{re.escape(arxiv_id)}v\d+}}", bibtex)) for arxiv_id in cited]
    assert counts == [1] * len(cited)  # each once, with the version the site indexed
    assert INVENTED_ID not in bibtex and bibtex.count("@misc{") == len(cited)
    # The very entries every other place gives (the build's references file), whole.
    references = page.evaluate(
        """async () => (await (await fetch(JSON.parse(document.getElementById('app-config').textContent)
                                 .references)).json()).papers"""
    )
    assert bibtex == "\n\n".join(r["bibtex"] for r in references if r["arxiv_id"] in cited) + "\n"


def test_follow_up_keeps_the_thread_and_retrieves_again(asking, llm):
    asking.open()
    asking.configure()
    first = asking.ask()
    second = asking.ask("What does grouped-query attention trade off?")
    assert first["state"] == second["state"] == "done"
    assert asking.page.locator(".turn").count() == 2
    assert second["sources"] != first["sources"]
    sent = llm.requests[-1].body["messages"]
    assert len(sent) >= 3 and sent[-1]["role"] == "user"  # the previous turn rides along, shortened


def test_the_js_api_returns_what_the_page_shows(asking, llm):
    asking.open()
    result = asking.page.evaluate(
        """([question, base, key]) => readingRoom.ask(question,
             {provider: "openai", base_url: base + "/v1", model: "mock-mixed", key})""",
        [QUESTION, llm.base_url, KEY],
    )
    assert set(result) >= {"answer", "citations", "sources"}
    assert result["answer"] == llm.answers[-1].text
    for citation in result["citations"]:
        assert set(citation) == {"arxiv_id", "version", "page", "quote", "verified", "reason"}
        assert not citation["verified"] or citation["version"].startswith("v")  # the version the site indexed
    statuses = [c["verified"] for c in result["citations"]]
    assert statuses == [status == "verified" for *_, status in llm.answers[-1].expected]
    for source in result["sources"]:
        assert {"arxiv_id", "page_start", "page_end", "chunk_id", "title", "text"} <= set(source)
    turn = asking.turn()
    assert len(turn["verified"]) == sum(statuses) and len(turn["sources"]) == len(result["sources"])
    assert [s["arxiv_id"] for s in turn["sources"]] == [s["arxiv_id"] for s in result["sources"]]


def test_without_a_key_copy_the_prompt_and_check_a_pasted_answer(asking, llm):
    asking.open(f"?ask={QUESTION}")
    wait_for(asking.page, "() => document.querySelector('.turn')?.dataset.state === 'no-key'")
    turn = asking.turn()
    assert turn["sources"] and turn["answer"] == ""
    assert llm.requests == []  # no key: nothing sent anywhere
    asking.page.click(".turn .copy-prompt")
    wait_for(
        asking.page, "() => document.querySelector('.turn .copy-prompt').textContent === 'Prompt copied'"
    )
    prompt = asking.page.evaluate("navigator.clipboard.readText()")
    assert QUESTION in prompt and f'cite="arXiv:{DOC2QUERY}' in prompt
    pasted = write_answer(prompt, "mixed")  # what a chat would answer, from the copied prompt alone
    asking.page.click(".turn .check-answer")
    asking.page.fill(".turn .check-form textarea", pasted.text)
    asking.page.click(".turn .check-form button[type=submit]")
    wait_for(asking.page, "() => document.querySelector('.turn').dataset.state === 'checked'")
    turn = asking.turn()
    good = sum(status == "verified" for *_, status in pasted.expected)
    assert turn["summary"] == f"{good} of {len(pasted.expected)} citations verified"
    assert len(turn["unverified"]) == len(pasted.expected) - good


def test_the_key_stays_in_memory_unless_remembered_and_forget_clears_it(asking, llm):
    page = asking.page
    asking.open("?ask=")
    asking.configure()
    page.reload()
    page.evaluate("window.readingRoom.ready")
    page.click("#llm-settings summary")
    assert page.input_value("#llm-key") == ""  # memory only by default
    assert page.input_value("#llm-base-url") == llm.base_url + "/v1"  # the rest is remembered
    page.fill("#llm-key", KEY)
    page.check("input[name=llm-remember][value=local]")
    assert page.is_visible("#llm-remember-warning")
    page.reload()
    page.evaluate("window.readingRoom.ready")
    assert page.input_value("#llm-key") == KEY
    page.click("#llm-settings summary")
    page.click("#llm-forget-key")
    stored = page.evaluate("JSON.stringify([{...localStorage}, {...sessionStorage}])")
    assert KEY not in stored
    page.reload()
    page.evaluate("window.readingRoom.ready")
    assert page.input_value("#llm-key") == ""


def _posts(llm: MockLLM) -> list:
    """The answer requests (a local preset also asks Ollama's /api/show for the context window)."""
    return [r for r in llm.requests if r.method == "POST" and not r.path.startswith("/api/")]


def _sends(request, key: str) -> bool:
    return any(key in value for value in request.headers.values()) or key in request.path


def test_a_key_goes_only_to_the_provider_it_was_typed_for(asking, llm):
    page = asking.page
    asking.open()
    asking.configure("custom")  # key A
    page.select_option("#llm-provider", "groq")
    assert page.input_value("#llm-key") == ""  # another provider: A is not shown, nor kept for it
    asking.configure("ollama", key=None)  # the same mock origin, as another provider
    assert page.input_value("#llm-key") == ""
    assert asking.ask()["state"] == "failed"  # the request goes out, keyless, and the mock accepts A only
    assert len(_posts(llm)) == 1 and not _sends(_posts(llm)[-1], KEY)
    assert "authorization" not in _posts(llm)[-1].headers
    page.fill("#llm-key", OTHER_KEY)  # key B, for the second provider
    assert asking.ask()["state"] == "failed"
    assert _posts(llm)[-1].headers["authorization"] == f"Bearer {OTHER_KEY}"
    asking.configure("custom", key=None)  # back to the first provider
    assert page.input_value("#llm-key") == KEY
    assert asking.ask()["state"] == "done"
    assert _posts(llm)[-1].headers["authorization"] == f"Bearer {KEY}"
    assert not _sends(_posts(llm)[-1], OTHER_KEY)
    assert [_sends(r, KEY) for r in _posts(llm)] == [False, False, True]
    page.click("#llm-forget-key")  # forgets every provider's key
    assert page.input_value("#llm-key") == ""
    asking.configure("ollama", key=None)
    assert page.input_value("#llm-key") == ""


def test_a_key_stays_with_the_base_url_origin_it_was_typed_for(asking, llm):
    page = asking.page
    with MockLLM(api_key=KEY) as elsewhere:
        asking.open()
        asking.configure("custom")
        asking.configure("custom", key=None, base_url=elsewhere.base_url + "/v1")  # another origin
        assert page.input_value("#llm-key") == ""
        assert asking.ask()["state"] == "no-key"
        asking.configure("custom", key=None)
        assert page.input_value("#llm-key") == KEY
        assert asking.ask()["state"] == "done"
    assert elsewhere.requests == [] and len(_posts(llm)) == 1
    to_elsewhere = [headers for _, url, headers in asking.requests if url.startswith(elsewhere.base_url)]
    assert not any(KEY in str(headers) for headers in to_elsewhere)


def test_remembered_keys_are_stored_per_provider(asking, llm):
    page = asking.page
    asking.open("?ask=")
    asking.configure("custom")
    page.check("input[name=llm-remember][value=session]")
    asking.configure("anthropic", key=OTHER_KEY)
    stored = page.evaluate("({...sessionStorage})")
    keys = {name.split(":llm-key:")[1]: value for name, value in stored.items() if ":llm-key:" in name}
    assert keys == {f"custom {llm.base_url}": KEY, f"anthropic {llm.base_url}": OTHER_KEY}
    assert page.evaluate("JSON.stringify({...localStorage})").count(KEY) == 0
    page.reload()
    page.evaluate("window.readingRoom.ready")
    assert page.input_value("#llm-provider") == "anthropic" and page.input_value("#llm-key") == OTHER_KEY
    asking.configure("custom", key=None)
    assert page.input_value("#llm-key") == KEY
    page.click("#llm-forget-key")
    stored = page.evaluate("JSON.stringify([{...localStorage}, {...sessionStorage}])")
    assert KEY not in stored and OTHER_KEY not in stored
    page.reload()
    page.evaluate("window.readingRoom.ready")
    for provider in ("custom", "anthropic"):
        asking.configure(provider, key=None)
        assert page.input_value("#llm-key") == ""


def test_a_question_from_a_link_waits_for_the_visitor_before_calling_the_provider(asking, llm):
    page = asking.page
    asking.open("?ask=")
    asking.configure()
    page.check("input[name=llm-remember][value=session]")
    asking.open("?" + urlencode({"ask": QUESTION}))
    wait_for(page, "() => document.querySelector('.turn')?.dataset.state === 'ready'")
    assert asking.turn()["sources"] and [r for r in llm.requests if r.method == "POST"] == []
    page.click(".turn .get-answer")
    wait_for(page, "() => document.querySelector('.turn').dataset.state === 'done'")
    assert asking.turn()["verified"] and len([r for r in llm.requests if r.method == "POST"]) == 1


def test_settings_are_reachable_by_keyboard(asking):
    page = asking.page
    asking.open("?ask=")
    page.focus("#ask-q")
    seen = set()
    for _ in range(12):
        page.keyboard.press("Tab")
        seen.add(page.evaluate("document.activeElement.id || document.activeElement.tagName"))
    assert "SUMMARY" in seen
    page.keyboard.press("Shift+Tab")
    while page.evaluate("document.activeElement.tagName") != "SUMMARY":
        page.keyboard.press("Shift+Tab")
    page.keyboard.press("Enter")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.id") == "llm-provider"
    assert page.evaluate("document.querySelector('label[for=llm-key]').textContent") == "API key"
    page.click(".site-footer")
    page.keyboard.press("/")  # in ask mode, / goes to the question box
    assert page.evaluate("document.activeElement.id") == "ask-q"


GONE_HOST = "gone-provider.example"  # a public name, mapped to 127.0.0.1 for the chromium below


class _UnderPublicName:
    """A stopped mock seen under a public host name: the page reads an address space from the name, and
    only for a public one are the failure's causes (CORS, an outage) alike enough to name them all."""

    def __init__(self, llm: MockLLM):
        self.base_url = llm.base_url.replace("http://127.0.0.1", f"https://{GONE_HOST}", 1)  # as public must
        self.requests = llm.requests


@pytest.fixture
def public_provider_browser(browser):  # noqa: F811
    chromium = browser.browser_type.launch(
        executable_path=str(CHROMIUM),
        args=[*CHROMIUM_ARGS, f"--host-resolver-rules=MAP {GONE_HOST} 127.0.0.1"],
    )
    yield chromium
    chromium.close()


def test_an_unreachable_provider_is_explained_with_the_providers_that_allow_browser_calls(
    public_provider_browser,
    site_url,  # noqa: F811
):
    gone = MockLLM(api_key=KEY).start()
    gone.stop()  # its port now refuses connections, as a provider without CORS looks to a page
    view = AskPage(public_provider_browser, site_url, _UnderPublicName(gone))
    view.open()
    view.configure("custom")
    turn = view.ask()
    view.close()
    view.check_requests()
    assert turn["state"] == "failed" and turn["sources"] and turn["question"] == QUESTION
    assert "Could not reach" in turn["error"] and "(CORS)" in turn["error"] and "OpenRouter" in turn["error"]


def test_every_page_carries_the_policy_and_no_inline_script(served_site):  # noqa: F811
    site_dir, _ = served_site
    pages = sorted(site_dir.rglob("*.html"))
    assert len(pages) >= 7  # search, corpus, about and the four papers
    for page in pages:
        html = page.read_text(encoding="utf-8")
        policy = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]+)">', html)
        assert policy, page
        directives = dict(d.strip().split(" ", 1) for d in policy.group(1).split(";"))
        assert directives["script-src"] == "'self' 'wasm-unsafe-eval'"
        assert directives["object-src"] == "'none'" and directives["base-uri"] == "'self'"
        for script in re.findall(r"<script\b[^>]*>", html):
            assert 'src="/' in script or 'type="application/json"' in script, (page, script)
        assert not re.search(r"<[a-z][^>]*\son[a-z]+=", html), page  # no inline event handlers


def test_the_policy_is_enforced_in_the_page(asking):
    asking.open()
    directive = asking.page.evaluate(
        """() => new Promise((resolve) => {
             document.addEventListener('securitypolicyviolation', (e) => resolve(e.effectiveDirective), {once: true});
             const script = document.createElement('script');
             script.textContent = 'window.__inline = 1';
             document.body.append(script);
           })"""
    )
    assert directive.startswith("script-src") and asking.page.evaluate("window.__inline") is None
    asking.errors.clear()  # chromium logs the refusal, as it should
