"""The context windows of hosted model families, so a prompt can be sized to the model a visitor names.

Hosted providers do not say a model's window in any call a browser can make, and a window set too
large is a refused request while one too small only costs sources, so each family holds the smallest
window its provider documents for the names it matches (OpenAI, Anthropic, Google, Meta's Llama 3.1+
as Groq and Together serve it, Mistral). A server on this computer is asked for its own window instead
(its n_ctx is set when it starts, whatever the model), so callers look up hosted models only.
"""

from __future__ import annotations

import re

FAMILIES: tuple[tuple[str, str, int], ...] = (
    # (family, pattern matched at the start of the name without a router's "vendor/" prefix, tokens)
    ("GPT-4.1", r"gpt-4\.1", 1_047_576),
    ("GPT-4o", r"gpt-4o", 128_000),
    ("GPT-4 Turbo", r"gpt-4-turbo", 128_000),
    ("GPT-5", r"gpt-5", 400_000),
    ("OpenAI o-series", r"o[134](?:-|$)", 200_000),
    ("GPT-3.5 Turbo", r"gpt-3\.5-turbo", 16_385),
    ("Claude", r"claude-", 200_000),
    ("Gemini 1.5 and 2", r"gemini-(?:1\.5|2)", 1_048_576),
    ("Llama 3.1-3.3", r"(?:meta-llama-)?llama-3\.[123]-", 131_072),
    ("Mistral", r"(?:mistral|ministral|codestral|magistral)-", 32_768),
)
_COMPILED = tuple((name, re.compile(pattern, re.IGNORECASE), tokens) for name, pattern, tokens in FAMILIES)


def family_window(model: str) -> tuple[str, int] | None:
    """(family, context window in tokens) for a hosted model's name; None for a name no family holds."""
    name = model.strip().rsplit("/", 1)[-1]
    for family, pattern, tokens in _COMPILED:
        if pattern.match(name):
            return family, tokens
    return None


def known_window(model: str) -> int | None:
    found = family_window(model)
    return found[1] if found else None
