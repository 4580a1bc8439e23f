"""providers.js's stream reader under Node, fed SSE bodies as fetch would give them: what follows the
stream's end mark and deltas that are not strings never reach the answer; an answer stopped at its cap is
reported as "length" in each API's words; a stream without text says what a local server means by it.
The page's SSE parser and the CLI's (builder.providers.sse_events) read the same body into the same events."""

import io
import json

import pytest
from support.page_modules import node_script

from builder.providers import sse_events

STREAM = """
import { streamAnswer } from "./providers.js";
const { api, body } = JSON.parse(process.argv[2]);
globalThis.fetch = async () => new Response(body, { status: 200, headers: { "content-type": "text/event-stream" } });
const settings = { api, base_url: "https://example.test/v1", model: "m", key: "k" };
let stop = "";
const onFinish = (reason) => (stop = reason);
streamAnswer(settings, { system: "s", messages: [{ role: "user", content: "q" }] }, { onFinish }).then(
  (text) => console.log(JSON.stringify(stop === "length" ? { text, stop } : { text })),
  (error) => console.log(JSON.stringify({ error: error.kind, partial: error.partial })),
);
"""


@pytest.fixture(scope="module")
def stream(tmp_path_factory):
    run = node_script(tmp_path_factory.mktemp("page-modules"), "stream.mjs", STREAM)
    return lambda api, body: run({"api": api, "body": body})


def openai(*deltas) -> str:
    return "".join(
        f"data: {json.dumps({'choices': [{'index': 0, 'delta': {'content': d}}]})}\n\n" for d in deltas
    )


def test_text_after_done_is_ignored(stream):
    body = openai("The answer.") + "data: [DONE]\n\n" + openai(" Injected after the end.")
    assert stream("openai", body) == {"text": "The answer."}


def test_non_string_content_adds_nothing(stream):
    body = openai("A", {"text": "x"}, 42, None, ["y"], True, "B") + "data: [DONE]\n\n"
    assert stream("openai", body) == {"text": "AB"}


@pytest.mark.parametrize(
    ("deltas", "kept"),
    [
        (["\ud800"], "\ufffd"),
        (["a \udfff", " b"], "a \ufffd b"),
        (["\udc00\ud800"], "\ufffd\ufffd"),
        (["\ud83d\ude00 fine"], "\U0001f600 fine"),  # a pair escaped in one delta is its character
        (["cut \ud83d", "\ude00"], "cut \ufffd\ufffd"),  # a pair split across deltas is two lone ones
    ],
)
def test_a_lone_surrogate_in_a_delta_is_kept_as_u_fffd(stream, deltas, kept):
    assert stream("openai", openai(*deltas) + "data: [DONE]\n\n") == {"text": kept}


def test_anthropic_and_gemini_ignore_non_string_text_and_anthropic_stops_at_message_stop(stream):
    def event(name: str, data: dict) -> str:
        return f"event: {name}\ndata: {json.dumps(data)}\n\n"

    delta = [
        {"type": "content_block_delta", "delta": {"type": "text_delta", "text": t}}
        for t in ("A", {"o": 1}, "B")
    ]
    anthropic = "".join(event("content_block_delta", d) for d in delta) + event(
        "message_stop", {"type": "message_stop"}
    )
    anthropic += event(
        "content_block_delta", {"type": "content_block_delta", "delta": {"type": "text_delta", "text": "C"}}
    )
    assert stream("anthropic", anthropic) == {"text": "AB"}
    parts = [{"text": "A"}, {"text": {"o": 1}}, {"text": 7}, None, {"text": "B"}]
    gemini = (
        f"data: {json.dumps({'candidates': [{'content': {'parts': parts}, 'finishReason': 'STOP'}]})}\n\n"
    )
    assert stream("gemini", gemini) == {"text": "AB"}


def test_crlf_line_endings_are_read_whole(stream):
    body = openai("one ", "two").replace("\n", "\r\n") + "data: [DONE]\r\n\r\n"
    assert stream("openai", body) == {"text": "one two"}


def test_the_answer_cap_is_reported_as_length_in_each_apis_words(stream):
    cut = {"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]}
    body = openai("Half an ans") + f"data: {json.dumps(cut)}\n\n" + "data: [DONE]\n\n"
    assert stream("openai", body) == {"text": "Half an ans", "stop": "length"}
    anthropic = "".join(
        f"event: {d['type']}\ndata: {json.dumps(d)}\n\n"
        for d in (
            {"type": "content_block_delta", "delta": {"type": "text_delta", "text": "Half"}},
            {"type": "message_delta", "delta": {"stop_reason": "max_tokens"}},
            {"type": "message_stop"},
        )
    )
    assert stream("anthropic", anthropic) == {"text": "Half", "stop": "length"}
    gemini = f"data: {json.dumps({'candidates': [{'content': {'parts': [{'text': 'Half'}]}, 'finishReason': 'MAX_TOKENS'}]})}\n\n"
    assert stream("gemini", gemini) == {"text": "Half", "stop": "length"}


def test_a_stream_without_text_is_named_as_a_context_overflow(stream):
    # llama-cpp-python's answer to a prompt over its window: 200, then the stream ends with nothing.
    assert stream("openai", "")["error"] == "empty"
    assert stream("openai", "data: [DONE]\n\n")["error"] == "empty"


EVENTS = """
import { sseEvents } from "./providers.js";
const { chunks } = JSON.parse(process.argv[2]);
const body = new ReadableStream({
  start(controller) {
    for (const chunk of chunks) controller.enqueue(new Uint8Array(chunk));
    controller.close();
  },
});
const events = [];
for await (const { event, data } of sseEvents(body)) events.push([event, data]);
console.log(JSON.stringify(events));
"""

# Bodies as the providers and local servers send them, each event ended by its blank line. Two corners of
# the spec are left out because no provider sends them and the parsers differ there: a lone CR as a line
# end (the CLI reads lines at LF), and an event the body's end cuts off before its blank line (the page
# drops it as the spec says; the CLI still reads it, so a server that omits the last blank line works).
WIRE_CASES = [
    'data: {"a": 1}\n\n',
    "event: content_block_delta\ndata: one\n\nevent: message_stop\ndata: two\n\n",
    "data: first line\ndata: second line\n\n",
    "data: crlf\r\n\r\ndata: again\r\n\r\n",
    ": keep-alive\n\n: comment\ndata: after a comment\n\n",
    "data:no space\n\ndata:  two spaces\n\n",
    "data\n\n",
    "id: 7\nretry: 100\nunknown: x\ndata: kept\n\n",
    "event: ping\n\ndata: the name does not carry over\n\n",
    "\n\n\ndata: Grüße — 日本語\n\n\n",
]


@pytest.fixture(scope="module")
def page_events(tmp_path_factory):
    run = node_script(tmp_path_factory.mktemp("page-modules"), "events.mjs", EVENTS)

    def read(body: str) -> list[tuple[str, str]]:
        raw = body.encode("utf-8")
        chunks = [list(raw[at : at + 5]) for at in range(0, len(raw), 5)]  # splits \r\n and characters
        return [tuple(event) for event in run({"chunks": chunks})]

    return read


@pytest.mark.parametrize("body", WIRE_CASES)
def test_the_page_and_the_cli_read_the_same_events(page_events, body):
    cli = list(sse_events(iter(io.BytesIO(body.encode("utf-8")).readline, b"")))
    assert cli, "every case carries an event"
    assert page_events(body) == cli
