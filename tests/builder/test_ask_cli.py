"""`python -m builder ask` end to end against the loopback mock provider, in each API's wire format:
true citations verify, fabricated ones are flagged, each failure gives its message, and the key goes
only to the provider, in the API's own header."""

import json
import socket

import pytest
from support.ask_cli import KEY, PROVIDERS, QUESTION, base_url
from support.mock_llm import MockLLM

from builder.cli import main

KEY_HEADERS = {"openai": ("authorization", f"Bearer {KEY}"), "anthropic": ("x-api-key", KEY),
               "gemini": ("x-goog-api-key", KEY)}  # fmt: skip


@pytest.fixture
def llm(monkeypatch):
    for variable in ("READINGROOM_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("READINGROOM_API_KEY", KEY)
    with MockLLM(api_key=KEY) as server:
        yield server


def ask(built_sites, llm, provider, model, *extra):
    args = ["ask", QUESTION, "--site", str(built_sites.second), "--provider", provider]
    return main([*args, "--base-url", base_url(llm, provider), "--model", model, *extra])


def assert_key_only_in_its_header(llm: MockLLM, provider: str, *printed: str) -> None:
    # The answer requests; a loopback server is also asked about its context window (Ollama's /api/show).
    posts = [r for r in llm.requests if r.method == "POST" and not r.path.startswith("/api/")]
    assert posts
    name, value = KEY_HEADERS[provider]
    for request in posts:
        assert request.headers[name] == value
        assert KEY not in request.path
        assert KEY not in json.dumps(request.body)
        assert [h for h, v in request.headers.items() if KEY in v] == [name]
    for text in printed:
        assert KEY not in text


@pytest.mark.parametrize("provider", PROVIDERS)
def test_citations_are_checked_and_fabrications_flagged(built_sites, llm, provider, capsys):
    assert ask(built_sites, llm, provider, "mock-mixed") == 0
    out, err = capsys.readouterr()
    (answer,) = llm.answers
    assert answer.text in out  # streamed whole, in order
    verified = sum(status == "verified" for *_, status in answer.expected)
    assert verified >= 3 and len(answer.expected) == verified + 3
    assert f"{verified} of {len(answer.expected)} citations verified" in out
    for label in ("INVENTED", "PAGE NOT FOUND", "QUOTE NOT FOUND", "UNCITED"):
        assert label in out
    sources_block = out.split("\n\n", 1)[0]
    assert sources_block.startswith("1") and "[1] arXiv:1904.08375" in sources_block
    assert_key_only_in_its_header(llm, provider, out, err)
    body = llm.requests[-1].body
    if provider == "anthropic":
        assert body["stream"] is True and "verbatim quote" in body["system"] and body["max_tokens"] > 0
        assert body["messages"][-1]["content"].count("<source ") >= 5
    elif provider == "openai":
        assert body["stream"] is True and body["messages"][0]["role"] == "system"
    else:
        assert "verbatim quote" in body["systemInstruction"]["parts"][0]["text"]
        assert llm.requests[-1].path.endswith(":streamGenerateContent?alt=sse")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_json_output_matches_what_the_mock_meant(built_sites, llm, provider, capsys):
    assert ask(built_sites, llm, provider, "mock-mixed", "--json") == 0
    result = json.loads(capsys.readouterr().out)
    (answer,) = llm.answers
    assert result["answer"] == answer.text
    got = [(c["arxiv_id"], c["status"], c["quote"]) for c in result["citations"]]
    assert got == [(arxiv_id, status, quote) for arxiv_id, _, quote, status in answer.expected]
    assert [u["text"] for u in result["uncited"]] == [f"{claim}." for claim in answer.uncited]
    assert result["prompt_tokens"] <= result["budget"] == 4500
    assert [s["n"] for s in result["sources"]] == list(range(1, len(result["sources"]) + 1))
    assert all(c["source"] for c in result["citations"] if c["status"] == "verified")


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize(
    ("scenario", "message"),
    [
        ("bad_key", "refused the API key"),
        ("forbidden", "may not use this model"),
        ("rate_limit", "rate limit was hit"),
        ("model_not_found", "was not found"),
        ("context_too_long", "lower --budget"),
        ("dropped", "stream broke off"),
        ("empty", "without any answer"),
    ],
)
def test_failures_say_what_to_do(built_sites, llm, provider, scenario, message, capsys):
    assert ask(built_sites, llm, provider, f"mock-{scenario}") == 1
    out, err = capsys.readouterr()
    assert message in err
    assert_key_only_in_its_header(llm, provider, out, err)
    posts = [r for r in llm.requests if r.method == "POST" and not r.path.startswith("/api/")]
    assert len(posts) == (2 if scenario == "rate_limit" else 1)  # Retry-After honoured once


def test_a_rate_limit_is_waited_out_once(built_sites, llm, capsys):
    assert ask(built_sites, llm, "anthropic", "mock-rate_limit_once") == 0
    out, err = capsys.readouterr()
    assert "waiting 1 s" in err and "citations verified" in out
    assert [r.status for r in llm.requests] == [429, 200]


def test_the_key_comes_only_from_the_environment(built_sites, llm, monkeypatch, capsys):
    monkeypatch.delenv("READINGROOM_API_KEY")
    args = ["ask", QUESTION, "--site", str(built_sites.second), "--model", "gpt-4o-mini"]
    assert main([*args, "--base-url", "https://api.example.invalid/v1"]) == 2
    assert "set READINGROOM_API_KEY or OPENAI_API_KEY" in capsys.readouterr().err
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    assert ask(built_sites, llm, "anthropic", "mock-grounded") == 0
    assert llm.requests[-1].headers["x-api-key"] == KEY
    with pytest.raises(SystemExit):
        main(["ask", QUESTION, "--key", KEY])


def test_a_loopback_server_needs_no_key(built_sites, llm, monkeypatch, capsys):
    monkeypatch.delenv("READINGROOM_API_KEY")
    llm.api_key = ""
    assert ask(built_sites, llm, "openai", "mock-grounded") == 0
    assert "authorization" not in llm.requests[-1].headers
    assert "of 4 citations verified" in capsys.readouterr().out


def test_prompt_only_prints_the_prompt_without_a_provider(built_sites, monkeypatch, capsys):
    monkeypatch.delenv("READINGROOM_API_KEY", raising=False)
    assert (
        main(["ask", QUESTION, "--site", str(built_sites.second), "--prompt-only", "--budget", "2000"]) == 0
    )
    out = capsys.readouterr().out
    assert out.startswith("SYSTEM:\n") and "<sources>" in out and f"Question: {QUESTION}" in out


def test_an_unreachable_provider_is_a_network_error(built_sites, llm, capsys):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    args = ["ask", QUESTION, "--site", str(built_sites.second), "--provider", "gemini", "--model", "m"]
    assert main([*args, "--base-url", f"http://127.0.0.1:{closed_port}"]) == 1
    err = capsys.readouterr().err
    assert f"could not reach http://127.0.0.1:{closed_port}/v1beta/models/m:streamGenerateContent" in err
    assert "llama.cpp (llama-server, llama-cpp-python)" in err and "Ollama" in err
    assert "check --base-url and the network" in err and KEY not in err


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("output", ["stream", "--json"])
def test_a_lone_surrogate_in_a_delta_is_replaced_and_the_next_turn_works(
    built_sites, llm, provider, output, capsys
):
    extra = () if output == "stream" else ("--json",)
    assert ask(built_sites, llm, provider, "mock-surrogate", *extra) == 0
    out, err = capsys.readouterr()
    out.encode("utf-8"), err.encode("utf-8")  # what a UTF-8 terminal would be sent
    (answer,) = llm.answers
    assert answer.text.startswith("\ud800")
    kept = "\ufffd" + answer.text[1:]
    if output == "--json":
        result = json.loads(out)
        assert result["answer"] == kept
        assert [c["status"] for c in result["citations"]] == ["verified"] * len(answer.expected)
    else:
        assert kept in out and f"{len(answer.expected)} of {len(answer.expected)} citations verified" in out
    assert ask(built_sites, llm, provider, "mock-grounded", *extra) == 0
    assert "citations verified" in capsys.readouterr().out or output == "--json"
    assert len(llm.answers) == 2
