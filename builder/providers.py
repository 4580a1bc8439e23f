"""Streaming clients for the three LLM APIs a visitor can choose, for `python -m builder ask`.

OpenAI-compatible (`POST {base}/chat/completions`, which OpenRouter, Groq, Mistral, Together, Ollama,
LM Studio, llama.cpp and vLLM also speak), Anthropic Messages (`POST {base}/v1/messages`) and Google
Gemini (`POST {base}/v1beta/models/{model}:streamGenerateContent?alt=sse`), all read as Server-Sent
Events with the standard library. The key travels only in the API's own header (`Authorization:
Bearer`, `x-api-key`, `x-goog-api-key`), never in a URL, and is cut out of any message we print.

Every failure becomes a `ProviderError` whose message says what happened and what to do: a refused
key (401/403, and Gemini's 400 API_KEY_INVALID), a rate limit (429: waits once for Retry-After, up to
`MAX_RETRY_WAIT` seconds, then gives up), an unknown model (404), a prompt over the model's context
(400 with the API's context-length wording), a network failure (naming the local servers it applies to),
a stream that breaks off before its end event, and an answer with no text. A stream that ends, or breaks
off, before any text is what llama.cpp sends when the prompt exceeds its context window, so that case says
so and names a smaller budget.

Every API is sent the answer cap (`max_tokens`, Anthropic's `max_tokens`, Gemini's `maxOutputTokens`);
the reason the model stopped is passed to `on_finish`, normalised: "length" when it hit that cap
(OpenAI `finish_reason: "length"`, Anthropic `stop_reason: "max_tokens"`, Gemini `MAX_TOKENS`).
"""

from __future__ import annotations

import http.client
import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

from readingroom_core.answers import DEFAULT_MAX_TOKENS, Prompt
from readingroom_core.wellformed import well_formed

PROVIDERS = ("openai", "anthropic", "gemini")
DEFAULT_BASE_URLS = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
    "gemini": "https://generativelanguage.googleapis.com",
}
KEY_VARIABLES = {
    "openai": ("READINGROOM_API_KEY", "OPENAI_API_KEY"),
    "anthropic": ("READINGROOM_API_KEY", "ANTHROPIC_API_KEY"),
    "gemini": ("READINGROOM_API_KEY", "GEMINI_API_KEY"),
}
ANTHROPIC_VERSION = "2023-06-01"
MAX_RETRY_WAIT = 60.0
_CONTEXT_WORDS = (
    "context_length_exceeded",
    "context length",
    "context window",
    "context size",
    "prompt is too long",
    "too many tokens",
    "exceeds the maximum number of tokens",
    "input token count",
)


class ProviderError(RuntimeError):
    """A failed answer request; `kind` names the failure, the message says what to do."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class ProviderRequest:
    provider: str
    url: str
    headers: dict[str, str]
    body: dict


def is_loopback(url: str) -> bool:
    return (urlsplit(url).hostname or "") in {"127.0.0.1", "localhost", "::1"}


def build_request(
    provider: str, base_url: str, model: str, prompt: Prompt, key: str, max_tokens: int = DEFAULT_MAX_TOKENS
) -> ProviderRequest:
    base = base_url.rstrip("/")
    headers = {"content-type": "application/json", "accept": "text/event-stream"}
    if provider == "openai":
        if key:
            headers["authorization"] = f"Bearer {key}"
        messages = [{"role": "system", "content": prompt.system}, *prompt.messages]
        body = {"model": model, "messages": messages, "stream": True, "max_tokens": max_tokens}
        return ProviderRequest(provider, f"{base}/chat/completions", headers, body)
    if provider == "anthropic":
        headers |= {"x-api-key": key, "anthropic-version": ANTHROPIC_VERSION}
        body = {
            "model": model,
            "system": prompt.system,
            "messages": prompt.messages,
            "max_tokens": max_tokens,
            "stream": True,
        }
        return ProviderRequest(provider, f"{base.removesuffix('/v1')}/v1/messages", headers, body)
    if provider == "gemini":
        headers["x-goog-api-key"] = key
        contents = [
            {"role": "model" if m["role"] == "assistant" else "user", "parts": [{"text": m["content"]}]}
            for m in prompt.messages
        ]
        body = {
            "systemInstruction": {"parts": [{"text": prompt.system}]},
            "contents": contents,
            "generationConfig": {"maxOutputTokens": max_tokens},
        }
        url = f"{base.removesuffix('/v1beta')}/v1beta/models/{quote(model, safe='')}:streamGenerateContent?alt=sse"
        return ProviderRequest(provider, url, headers, body)
    raise ValueError(f"provider must be one of {', '.join(PROVIDERS)}, got {provider!r}")


# --- errors ------------------------------------------------------------------------------------------


def _error_text(raw: bytes) -> tuple[str, str]:
    """(message, code words) from an error body in any of the three APIs' shapes."""
    try:
        data = json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")[:300].strip(), ""
    error = data.get("error", data) if isinstance(data, dict) else {}
    if not isinstance(error, dict):
        return str(error)[:300], ""
    codes = [str(error.get(name) or "") for name in ("code", "type", "status")]
    codes += [str(d.get("reason") or "") for d in error.get("details") or [] if isinstance(d, dict)]
    return str(error.get("message") or "")[:300], " ".join(codes)


def http_error(status: int, raw: bytes, request: ProviderRequest, model: str, key: str) -> ProviderError:
    message, codes = _error_text(raw)
    if key:
        message = message.replace(key, "***")
    said = f" (the provider said: {message})" if message else ""
    variables = " or ".join(KEY_VARIABLES[request.provider])
    lowered = f"{message} {codes}".lower()
    if status == 401 or "api_key_invalid" in lowered:
        return ProviderError(
            "bad_key",
            f"the provider refused the API key (HTTP {status}){said}; set a valid key in {variables}",
        )
    if status == 403:
        return ProviderError(
            "forbidden",
            f"the key may not use this model or endpoint (HTTP 403){said}; check the key's permissions, "
            "billing and region, or choose another model",
        )
    if status == 404:
        return ProviderError(
            "model_not_found",
            f"model {model!r} was not found at {request.url.split('?')[0]} (HTTP 404){said}; check --model and "
            "--base-url",
        )
    if status == 429:
        return ProviderError(
            "rate_limit", f"the provider's rate limit was hit (HTTP 429){said}; wait a minute and ask again"
        )
    if status in (400, 413) and any(word in lowered for word in _CONTEXT_WORDS):
        return ProviderError(
            "context_too_long",
            f"the prompt is longer than the model accepts (HTTP {status}){said}; lower --budget or give "
            "the model's --context",
        )
    return ProviderError("http", f"the provider answered HTTP {status}{said}")


def _retry_after(headers) -> float | None:
    value = headers.get("Retry-After") if headers else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


# --- streaming ---------------------------------------------------------------------------------------


def sse_events(lines: Iterator[bytes]) -> Iterator[tuple[str, str]]:
    """(event name, data) of each Server-Sent Event in a stream of lines."""
    name = ""
    data: list[str] = []
    for raw in lines:
        line = raw.decode("utf-8", "replace").rstrip("\r\n")
        if not line:
            if data:
                yield name or "message", "\n".join(data)
            name, data = "", []
        elif line.startswith(":"):
            continue
        else:
            field_name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if field_name == "event":
                name = value
            elif field_name == "data":
                data.append(value)
    if data:
        yield name or "message", "\n".join(data)


@dataclass(frozen=True)
class Finish:
    """Why the model stopped: "length" when it reached the answer cap, else the API's own word."""

    reason: str


_LENGTH_REASONS = {"length", "max_tokens", "MAX_TOKENS"}


def _finish(reason: str) -> Finish:
    return Finish("length" if reason in _LENGTH_REASONS else reason)


def _deltas(provider: str, events: Iterator[tuple[str, str]]) -> Iterator[str | Finish | None]:
    """Text pieces of the answer and why it finished, then None once the API's end-of-stream event has
    arrived."""
    for name, data in events:
        if provider == "openai":
            if data.strip() == "[DONE]":
                yield None
                return
            payload = json.loads(data)
            if "error" in payload:
                raise ProviderError(
                    "stream", f"the provider reported an error mid-answer: {_error_text(data.encode())[0]}"
                )
            for choice in payload.get("choices") or []:
                text = (choice.get("delta") or {}).get("content")
                if text:
                    yield text
                if choice.get("finish_reason"):
                    yield _finish(choice["finish_reason"])
        elif provider == "anthropic":
            payload = json.loads(data)
            kind = payload.get("type", name)
            if kind == "content_block_delta" and payload["delta"].get("type") == "text_delta":
                yield payload["delta"]["text"]
            elif kind == "message_delta" and (payload.get("delta") or {}).get("stop_reason"):
                yield _finish(payload["delta"]["stop_reason"])
            elif kind == "error":
                raise ProviderError(
                    "stream", f"the provider reported an error mid-answer: {_error_text(data.encode())[0]}"
                )
            elif kind == "message_stop":
                yield None
                return
        else:
            payload = json.loads(data)
            if "error" in payload:
                raise ProviderError(
                    "stream", f"the provider reported an error mid-answer: {_error_text(data.encode())[0]}"
                )
            finished = False
            for candidate in payload.get("candidates") or []:
                for part in (candidate.get("content") or {}).get("parts") or []:
                    if part.get("text") and not part.get("thought"):
                        yield part["text"]
                if candidate.get("finishReason"):
                    finished = True
                    yield _finish(candidate["finishReason"])
            if finished:
                yield None
                return


LOCAL_SERVERS = "Ollama, LM Studio, llama.cpp (llama-server, llama-cpp-python) or vLLM"


def stream_answer(
    request: ProviderRequest,
    model: str,
    key: str,
    timeout: float = 120.0,
    sleep: Callable[[float], None] = time.sleep,
    on_wait: Callable[[float], None] | None = None,
    on_finish: Callable[[str], None] | None = None,
) -> Iterator[str]:
    """The answer's text pieces as they arrive; raises ProviderError (see the module docstring)."""
    response = _open(request, model, key, timeout, sleep, on_wait)
    received = 0
    ended = False
    try:
        with response:
            for piece in _deltas(request.provider, sse_events(iter(response.readline, b""))):
                # A lone surrogate (JSON's \ud800 escape) would fail the verification and the printing.
                if isinstance(piece, str):
                    piece = well_formed(piece)
                if piece is None:
                    ended = True
                    break
                if isinstance(piece, Finish):
                    if on_finish:
                        on_finish(piece.reason)
                    continue
                received += len(piece)
                yield piece
    except (http.client.IncompleteRead, ConnectionError, TimeoutError, OSError):
        ended = False
    except (ValueError, KeyError, TypeError) as exc:
        raise ProviderError("stream", f"the provider sent a stream this client cannot read ({exc})") from None
    if received == 0:
        raise ProviderError(
            "empty",
            "the server ended the stream without any answer; a local server (llama.cpp, Ollama) does this "
            "when the prompt is longer than its context window: ask again with a smaller --budget or give "
            "--context, or try another model",
        )
    if not ended:
        raise ProviderError(
            "dropped",
            f"the answer stream broke off after {received} characters, before the provider ended it; ask again",
        )


def _open(
    request: ProviderRequest,
    model: str,
    key: str,
    timeout: float,
    sleep: Callable[[float], None],
    on_wait: Callable[[float], None] | None,
):
    """The streaming response, after one wait for a short rate limit; raises ProviderError."""
    payload = json.dumps(request.body).encode("utf-8")
    waited = False
    while True:
        http_request = urllib.request.Request(request.url, payload, request.headers, method="POST")
        try:
            return urllib.request.urlopen(http_request, timeout=timeout)
        except urllib.error.HTTPError as exc:
            raw = exc.read()
            wait = _retry_after(exc.headers)
            if exc.code == 429 and not waited and wait is not None and wait <= MAX_RETRY_WAIT:
                waited = True
                if on_wait:
                    on_wait(wait)
                sleep(wait)
                continue
            error = http_error(exc.code, raw, request, model, key)
            if exc.code == 429 and waited:
                error = ProviderError("rate_limit", f"{error} (waited {wait:g} s once already)")
            raise error from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            reason = getattr(exc, "reason", exc)
            local = (
                f"; a server on this computer ({LOCAL_SERVERS}) must be running"
                if is_loopback(request.url)
                else ""
            )
            raise ProviderError(
                "network",
                f"could not reach {request.url.split('?')[0]} ({reason}); check --base-url and the network{local}",
            ) from None
