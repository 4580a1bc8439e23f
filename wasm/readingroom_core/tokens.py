"""Token counts without a tokenizer, and the prompt budget that fits a model's context window.

Sources are fitted to a budget before the model is known, in the browser and the CLI alike, so the
count is a stdlib estimate. It aims at the hungriest tokenizers people run at home (Llama 2's 32k
SentencePiece vocabulary, SmolLM2's 49k BPE), whose contexts are also the shortest: `count_tokens` is
within ±10% of their real count on the prompts this project writes (measured by tests/builder/test_answers.py
against llama-tokenizer-js; SmolLM2 through llama.cpp's own tokenizer is in
docs/measurements/local_llm.json, Gemma 3 in commit 4542dfd). OpenAI's o200k and cl100k make fewer
tokens of the same text (about 0.83 of the estimate), so for them the estimate is an over-count, which
costs only unused context.

A context window of C tokens with A tokens kept for the answer leaves C - A for the prompt; the budget
is that divided by `1 + FIT_MARGIN`, so an estimate up to 10% low still fits. The answer's room is the
visitor's answer cap, but never more than `ANSWER_SHARE` of the window, so a 2,048-token llama.cpp
server still gets sources (the cap sent to the server is that room, so the answer cannot overrun).
"""

from __future__ import annotations

import math
import re

LETTERS_PER_TOKEN = 4
# Piece costs times SCALE is the estimate: Llama 2's real count of the dev questions' prompts on the
# 112-paper site, as a share of the piece costs (commit 4542dfd).
SCALE = 0.81
# The part of the context kept free for the estimate's error.
FIT_MARGIN = 0.1
# Chat templates add tokens around each message and once per request (measured: 3-7 for OpenAI, up to
# about 10 for Llama 2 and Gemma's turn markers).
MESSAGE_OVERHEAD = 8
REQUEST_OVERHEAD = 8
MIN_ANSWER_TOKENS = 64
ANSWER_SHARE = 0.25
DEFAULT_LOCAL_CONTEXT = 2048  # llama.cpp's n_ctx unless started with another
MIN_RETRY_CONTEXT = 512

_PIECE_RE = re.compile(r" ?[A-Za-z]+|[0-9]|\n+|[ \t]+|.", re.DOTALL)


def _piece_cost(text: str) -> int:
    """A run of ASCII letters, with the space before it, costs one per `LETTERS_PER_TOKEN` letters (at
    least one); each digit one (Llama splits numbers into digits); a run of other whitespace one; any
    other ASCII character one; a non-ASCII letter half its UTF-8 bytes, other characters all of them."""
    total = 0
    for piece in _PIECE_RE.findall(text):
        last = piece[-1]
        if last.isascii():
            if last.isalpha():
                total += math.ceil(len(piece.lstrip(" ")) / LETTERS_PER_TOKEN)
            else:
                total += 1
        else:
            size = len(last.encode("utf-8"))
            total += math.ceil(size / 2) if last.isalpha() else size
    return total


def count_tokens(text: str) -> int:
    """About the tokens Llama-class tokenizers make of `text` (see the module docstring)."""
    return math.ceil(_piece_cost(text) * SCALE)


def chat_tokens(system: str, contents: list[str]) -> int:
    """A chat request's tokens: the system message, each message's content and the template around them."""
    return (
        count_tokens(system)
        + sum(count_tokens(content) for content in contents)
        + MESSAGE_OVERHEAD * (len(contents) + 1)
        + REQUEST_OVERHEAD
    )


def smaller_window(prompt_tokens: int, answer_tokens: int) -> int:
    """The window to fit a retry into after a server refused a prompt for length: llama.cpp's default
    `DEFAULT_LOCAL_CONTEXT` when the request was larger, else half of what was asked."""
    return max(MIN_RETRY_CONTEXT, min(DEFAULT_LOCAL_CONTEXT, (prompt_tokens + answer_tokens) // 2))


def answer_room(context: int, max_tokens: int) -> int:
    """The answer cap to send for a `context`-token window when the visitor allows `max_tokens`: never
    more than they allow, nor more than `ANSWER_SHARE` of the window (but `MIN_ANSWER_TOKENS` at least)."""
    return min(max_tokens, max(MIN_ANSWER_TOKENS, math.floor(context * ANSWER_SHARE)))


def budget_for_context(context: int, answer_tokens: int) -> int:
    """The prompt budget that leaves `answer_tokens` of a `context`-token window for the answer."""
    if context <= 0:
        raise ValueError(f"a context window of {context} tokens is not a size; give a positive number")
    room = context - max(answer_tokens, MIN_ANSWER_TOKENS)
    return max(0, math.floor(room / (1 + FIT_MARGIN)))
