"""How model servers on a visitor's computer behave, for tests/support/mock_llm.py's `MockLLM(local=…)`.

Measured against llama-cpp-python 0.3.36 and llama-server, and from Ollama's API reference:

- `local="llama-server"`: `GET /props` gives `default_generation_settings.n_ctx`; `GET /v1/models` lists
  its one model; a prompt over the window gets llama-server's 400 `exceed_context_size_error`.
- `local="llama-cpp-python"`: `GET /v1/models` lists ids only (no window); a prompt whose tokens plus
  `max_tokens` exceed the window gets 200 and a stream that ends with no text and no `[DONE]` (the server
  logs "Requested tokens (N) exceed context window of M").
- `local="ollama"`: `GET /api/tags` lists models, `POST /api/show` gives `parameters` with `num_ctx`;
  a prompt over the window is cut by Ollama; here it is refused with a 400 naming the context length.

Every server here ignores the model name in a chat request, and honours `max_tokens`: an answer longer
than that many tokens is cut there, with `finish_reason: "length"` (Anthropic `stop_reason:
"max_tokens"`, Gemini `finishReason: "MAX_TOKENS"`), for any `MockLLM`.

`drop_system=True` stands for a chat template without a system role (llama-cpp-python's `gemma`
format): the system message never reaches the model, so the mock cites only when the citation rule
is in what it does see; otherwise it answers in uncited prose, as small models do without the rule.

Tokens here are the mock model's own: one per `CHARS_PER_TOKEN` characters, a different rule from
readingroom_core.tokens, as a real server's tokenizer is.
"""

from __future__ import annotations

import math

LOCAL_KINDS = ("llama-server", "llama-cpp-python", "ollama")
CHARS_PER_TOKEN = 3.6
CITATION_RULE = '[arXiv:ID p.N "'
MODEL_NAME = "smollm2-135m-instruct-q4"
PROSE = "The sources discuss this question, and the answer follows from them without any citation."


def model_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def seen_messages(body: dict, drop_system: bool) -> list[dict]:
    """The chat messages that reach the model through its template."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    return [m for m in messages if m.get("role") != "system"] if drop_system else messages


def seen_text(api: str, body: dict, drop_system: bool) -> str:
    if api == "openai":
        return "\n".join(str(m.get("content", "")) for m in seen_messages(body, drop_system))
    system = "" if drop_system else str(body.get("system") or "")
    if api == "gemini":
        system = (
            ""
            if drop_system
            else str((body.get("systemInstruction") or {}).get("parts", [{}])[0].get("text", ""))
        )
        turns = body.get("contents") or []
        return system + "\n".join(p.get("text", "") for c in turns for p in c.get("parts", []))
    return system + "\n".join(str(m.get("content", "")) for m in body.get("messages") or [])


def cap_of(api: str, body: dict) -> int | None:
    """The answer cap the request asked for, in the API's own field."""
    value = (
        (body.get("generationConfig") or {}).get("maxOutputTokens")
        if api == "gemini"
        else body.get("max_tokens")
    )
    return value if isinstance(value, int) and value > 0 else None


def cut_to(text: str, cap: int | None) -> tuple[str, bool]:
    """`text` cut at `cap` mock tokens, and whether it was cut."""
    if cap is None or model_tokens(text) <= cap:
        return text, False
    return text[: int(cap * CHARS_PER_TOKEN)], True


def props(context: int) -> dict:
    return {"default_generation_settings": {"n_ctx": context, "model": MODEL_NAME}, "total_slots": 1}


def model_list(kind: str) -> dict | None:
    if kind in ("llama-server", "llama-cpp-python"):
        return {"object": "list", "data": [{"id": MODEL_NAME, "object": "model", "owned_by": "me"}]}
    return None


def ollama_tags() -> dict:
    return {"models": [{"name": f"{MODEL_NAME}:latest", "model": f"{MODEL_NAME}:latest", "size": 98362432}]}


def ollama_show(context: int) -> dict:
    return {
        "parameters": f"num_ctx                        {context}",
        "model_info": {"llama.context_length": 8192},
    }


def overflow_error(kind: str, tokens: int, context: int) -> dict:
    if kind == "llama-server":
        return {
            "error": {
                "code": 400,
                "message": "the request exceeds the available context size, try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": tokens,
                "n_ctx": context,
            }
        }
    return {"error": f"input length {tokens} exceeds the context length {context}"}
