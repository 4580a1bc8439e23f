"""`python -m builder ask` against model servers on this computer, as they behave (the loopback mock in
tests/support/mock_local.py): the context window is read where the server tells it, or given, and the
sources and the answer's room fitted into it; an overflow says so and names a smaller budget; the answer
cap reaches every API and an answer cut there says so; the rules reach a model whose template drops
system messages."""

import json

import pytest
from support import mock_local
from support.ask_cli import KEY, PROVIDERS, QUESTION, base_url
from support.mock_llm import MockLLM

from builder.cli import main
from builder.providers import build_request, stream_answer
from readingroom_core.answers import SYSTEM, USER_RULES, Prompt, build_prompt


@pytest.fixture(autouse=True)
def no_key(monkeypatch):
    for variable in ("READINGROOM_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.delenv(variable, raising=False)


def ask_local(built_sites, server: MockLLM, *extra: str) -> int:
    args = ["ask", QUESTION, "--site", str(built_sites.second), "--base-url", f"{server.base_url}/v1"]
    return main([*args, *extra])


def chat_requests(server: MockLLM) -> list:
    return [r for r in server.requests if r.method == "POST" and r.path.endswith("/chat/completions")]


def test_llama_server_window_is_read_from_props_and_the_prompt_fits_it(built_sites, capsys):
    with MockLLM(api_key="", local="llama-server", context_window=2048) as server:
        assert ask_local(built_sites, server) == 0  # no --model: the server's listed one
        out, err = capsys.readouterr()
        (request,) = chat_requests(server)
    assert "context window 2048 tokens (the server's /props)" in out
    assert request.body["model"] == mock_local.MODEL_NAME and request.body["max_tokens"] == 512
    sent = mock_local.model_tokens(mock_local.seen_text("openai", request.body, False))
    assert 0.6 * 2048 < sent + 512 <= 2048  # fills the window without overrunning it
    assert "citations verified" in out and "waiting for the model (" in err


def test_an_overflow_at_llama_cpp_python_says_so_and_a_smaller_budget_works(built_sites, capsys):
    with MockLLM(api_key="", local="llama-cpp-python", context_window=2048) as server:
        assert ask_local(built_sites, server) == 1  # it reports no window: the default budget overflows
        err = capsys.readouterr().err
        assert "ended the stream without any answer" in err and "context window" in err
        assert "retry with a smaller budget, fitted to a 2048-token window" in err
        assert ask_local(built_sites, server, "--context", "2048") == 0
        out = capsys.readouterr().out
    assert "context window 2048 tokens (--context)" in out and "citations verified" in out


def test_ollama_window_comes_from_api_show(built_sites, capsys):
    with MockLLM(api_key="", local="ollama", context_window=3000) as server:
        assert ask_local(built_sites, server, "--model", "smollm2") == 0
        out = capsys.readouterr().out
        shown = [r for r in server.requests if r.path == "/api/show"]
    assert "context window 3000 tokens (the server's /api/show)" in out
    assert shown and shown[0].body == {"model": "smollm2"}


@pytest.mark.parametrize("provider", PROVIDERS)
def test_the_answer_cap_reaches_every_api_and_a_cut_answer_says_so(
    built_sites, monkeypatch, provider, capsys
):
    monkeypatch.setenv("READINGROOM_API_KEY", KEY)
    with MockLLM(api_key=KEY) as server:
        args = ["ask", QUESTION, "--site", str(built_sites.second), "--provider", provider, "--model", "m"]
        assert main([*args, "--base-url", base_url(server, provider), "--max-tokens", "60"]) == 0
        out = capsys.readouterr().out
        body = [r for r in server.requests if r.method == "POST"][-1].body
        assert main([*args, "--base-url", base_url(server, provider), "--max-tokens", "60", "--json"]) == 0
        result = json.loads(capsys.readouterr().out)
    cap = body["generationConfig"]["maxOutputTokens"] if provider == "gemini" else body["max_tokens"]
    assert cap == 60
    assert "cut off at 60 tokens" in out and "--max-tokens" in out
    assert result["stop_reason"] == "length" and result["max_tokens"] == 60
    assert mock_local.model_tokens(result["answer"]) <= 60


def test_an_answer_within_its_cap_is_not_called_cut(built_sites, monkeypatch, capsys):
    monkeypatch.setenv("READINGROOM_API_KEY", KEY)
    with MockLLM(api_key=KEY) as server:
        args = ["--provider", "anthropic", "--model", "m", "--json"]
        assert (
            main(["ask", QUESTION, "--site", str(built_sites.second), "--base-url", server.base_url, *args])
            == 0
        )
    assert json.loads(capsys.readouterr().out)["stop_reason"] == "end_turn"


def test_the_rules_reach_a_model_whose_template_drops_system_messages(built_sites, capsys):
    with MockLLM(api_key="", local="llama-cpp-python", drop_system=True) as server:
        assert ask_local(built_sites, server, "--model", "gemma") == 0
        out = capsys.readouterr().out
        (answer,) = server.answers
        assert answer.expected and "4 of 4 citations verified" in out
        # The control: the same prompt with the rules in the system message only gets uncited prose.
        sources_only = build_prompt(QUESTION, [])
        sources_only.messages[-1]["content"] = sources_only.messages[-1]["content"].replace(USER_RULES, "")
        request = build_request(
            "openai", f"{server.base_url}/v1", "gemma", Prompt(SYSTEM, sources_only.messages), ""
        )
        assert "".join(stream_answer(request, "gemma", "")) == mock_local.PROSE
