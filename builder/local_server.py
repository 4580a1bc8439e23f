"""What a model server on this computer says about itself: its context window and its models.

A prompt that does not fit the context window is refused or, by llama.cpp, answered with an empty
stream, so `python -m builder ask` asks a loopback server for its window before fitting the sources:

- llama.cpp's `llama-server`: `GET /props` → `default_generation_settings.n_ctx` (the window it runs with);
- vLLM: `GET /v1/models` → `data[].max_model_len`; LM Studio: `GET /api/v0/models` →
  `data[].loaded_context_length` (else `max_context_length`);
- Ollama: `POST /api/show {"model"}` → `num_ctx` in its `parameters` when the model sets one, else
  Ollama's default of `OLLAMA_DEFAULT_CONTEXT` (its model_info's `*.context_length` is the model's
  trained maximum, not what Ollama allocates);
- llama-cpp-python's server says nothing about its window (`/v1/models` lists ids only): give `--context`.

The same endpoints list the models: `/v1/models` (`data[].id`), or Ollama's `/api/tags` (`models[].name`).
Each probe is one short request; a server that lacks the endpoint answers 404 and the next is tried.
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

OLLAMA_DEFAULT_CONTEXT = 4096
PROBE_TIMEOUT = 3.0


@dataclass(frozen=True)
class ContextWindow:
    tokens: int
    source: str  # the endpoint that told it, for the message that reports it


def origin(base_url: str) -> str:
    parts = urlsplit(base_url)
    return f"{parts.scheme}://{parts.netloc}"


def _get_json(url: str, body: dict | None = None, timeout: float = PROBE_TIMEOUT) -> Any:
    """The JSON at `url` (POSTed `body` when given), or None when the server has no such endpoint."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data, {"content-type": "application/json"} if data else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read())
    except (urllib.error.URLError, TimeoutError, ConnectionError, ValueError):
        return None


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def context_from_props(data: Any) -> int | None:
    settings = data.get("default_generation_settings") if isinstance(data, dict) else None
    return _positive(settings.get("n_ctx")) if isinstance(settings, dict) else None


def context_from_model_list(data: Any, model: str) -> int | None:
    """vLLM's `max_model_len` or LM Studio's loaded/max context of `model` (or of the only model)."""
    entries = [e for e in (data.get("data") or []) if isinstance(e, dict)] if isinstance(data, dict) else []
    chosen = [e for e in entries if e.get("id") == model] or (entries if len(entries) == 1 else [])
    for entry in chosen:
        for name in ("max_model_len", "loaded_context_length", "max_context_length"):
            if found := _positive(entry.get(name)):
                return found
    return None


def context_from_ollama_show(data: Any) -> int | None:
    if not isinstance(data, dict) or not isinstance(data.get("model_info"), dict):
        return None
    match = re.search(r"^num_ctx\s+(\d+)", str(data.get("parameters") or ""), re.MULTILINE)
    return int(match.group(1)) if match else OLLAMA_DEFAULT_CONTEXT


def context_window(base_url: str, model: str) -> ContextWindow | None:
    """The context window the server at `base_url` reports for `model`, or None when it reports none."""
    root, base = origin(base_url), base_url.rstrip("/")
    probes = (
        (f"{root}/props", None, lambda d: context_from_props(d)),
        (f"{base}/models", None, lambda d: context_from_model_list(d, model)),
        (f"{root}/api/v0/models", None, lambda d: context_from_model_list(d, model)),
        (f"{root}/api/show", {"model": model}, context_from_ollama_show),
    )
    for url, body, read in probes:
        if tokens := read(_get_json(url, body)):
            return ContextWindow(tokens, url.removeprefix(root))
    return None


def model_names(base_url: str) -> list[str]:
    """The models the server lists at `/v1/models`, or Ollama's at `/api/tags`; [] when it lists none."""
    listed = _get_json(f"{base_url.rstrip('/')}/models")
    if isinstance(listed, dict) and isinstance(listed.get("data"), list):
        return [str(e["id"]) for e in listed["data"] if isinstance(e, dict) and e.get("id")]
    tags = _get_json(f"{origin(base_url)}/api/tags")
    if isinstance(tags, dict) and isinstance(tags.get("models"), list):
        return [str(m["name"]) for m in tags["models"] if isinstance(m, dict) and m.get("name")]
    return []
