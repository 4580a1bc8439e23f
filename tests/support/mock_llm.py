"""A loopback LLM provider for tests: OpenAI-compatible, Anthropic Messages and Google Gemini, streaming
real Server-Sent Events over chunked HTTP/1.1, with CORS so a page on another loopback origin can call it.

    with MockLLM() as llm:                       # 127.0.0.1, a free port; llm.base_url = "http://127.0.0.1:PORT"
        llm.scenario = "mixed"                   # or pick per request by model name "mock-mixed"
        ... call {llm.base_url}/v1/chat/completions, {llm.base_url}/v1/messages, or
            {llm.base_url}/v1beta/models/MODEL:streamGenerateContent?alt=sse ...
        llm.requests[-1].headers["x-api-key"]   # every request is recorded
        llm.answers[-1].expected                 # what each citation of the last answer should verify as

Endpoints (any path prefix before them is accepted, so a base URL of ".../v1" works for OpenAI):
- OpenAI-compatible: `POST …/chat/completions`, key in `Authorization: Bearer KEY`; with `"stream": true`
  it sends `data: {"choices":[{"index":0,"delta":{"content":…}}]}` events and `data: [DONE]`.
- Anthropic: `POST …/v1/messages`, key in `x-api-key`, `anthropic-version` required; a request carrying an
  `Origin` header (a browser) must also send `anthropic-dangerous-direct-browser-access: true`, as the real
  API demands. Stream: message_start, content_block_start, ping, content_block_delta (text_delta) …,
  content_block_stop, message_delta, message_stop.
- Gemini: `POST …/v1beta/models/{model}:streamGenerateContent?alt=sse`, key in `x-goog-api-key` (a `key=`
  query parameter is refused, so tests notice a key in a URL). Stream: `data: {"candidates":[{"content":
  {"parts":[{"text":…}],"role":"model"}}]}`, the last with `finishReason: "STOP"`.
The model name comes from the JSON body (`model`) or, for Gemini, the path. Without `stream: true` the
server answers one JSON body in the API's non-streaming shape.

`api_key` (default "test-key") is the only key accepted; any other key gets the API's own 401 (Gemini:
400 API_KEY_INVALID, as Google answers). OpenAI's 401 message repeats the key it was sent, as OpenAI's
does (partly masked there), so clients can be tested for not printing it. OPTIONS preflights get 204 with Access-Control-Allow-Origin `*`,
the requested headers and `POST, OPTIONS`; every response carries Access-Control-Allow-Origin.

Scenarios (`scenario` attribute, or the model name `mock-<scenario>`, which wins):
- "grounded": an answer written from the prompt: it reads the numbered sources out of the last user
  message (`<source n="N" cite="arXiv:ID p.P" …>text</source>`, the shape
  `readingroom_core.answers` writes) and makes one claim per source (up to 4), each ending in
  `[arXiv:ID p.P "quote"]` with an 8-word verbatim quote from that source's text; the second claim cites
  two sources in one sentence. All citations should verify.
- "mixed": the grounded claims, then one citation of each failure kind: an id that was not a source
  ("invented"), a source's id with a page outside every source's span ("page_not_found"), a real quote with
  one word changed ("quote_not_found"), a sentence with no citation ("uncited"), and hostile markup (an
  `<img src=x onerror=…>`, a `<script>` and a `[link](javascript:alert(1))`).
- "formats": the citation shapes real models write, one claim per shape over the sources (cycled):
  the spec's `[arXiv:ID p.P] *"quote"*`, a quote after the brackets plain, after a colon or a dash
  (typographic quotes), in italics alone, `[arXiv:ID, p. P]` and `(arXiv:ID, p.P)` with the quote after,
  a `pp.` range; then `[arXiv:ID]` without a page (expected "no_page"), `[arXiv:INVENTED_ID]`
  ("invented") and the first source's `<source …>` tag echoed (no citation at all).
- "bad_key" (401), "forbidden" (403), "rate_limit" (429, `Retry-After: 1`), "rate_limit_once" (429 with
  `Retry-After: 1` for the first request, then "grounded"), "model_not_found" (404), "context_too_long"
  (400): each in the API's own error JSON.
- "dropped": a few text events, then the connection closes without the terminating chunk (a broken
  chunked body, as a dropped network gives) and without the stream's end event.
- "slow": the grounded answer in many small events 200 ms apart (for Stop buttons); `aborted` is set
  on the recorded request when the client hangs up.
- "empty": a well-formed stream that carries no text.
- "huge": the grounded answer, then uncited filler sentences up to HUGE_CHARS (5 MB) in small events,
  sent in batches of HUGE_BATCH events HUGE_INTERVAL apart (about 10 s in all), for pages that must stay
  responsive and stoppable.
- "surrogate": the grounded answer after a lone surrogate (JSON's `\\ud800` escape), as a broken provider
  may stream; `answers[-1].text` holds it as sent.

Servers on the visitor's computer (`local="llama-server" | "llama-cpp-python" | "ollama"`, with
`context_window` and `drop_system`), and the answer cap every mock honours, are described in
tests/support/mock_local.py.

`answers` holds a `MockAnswer(text, expected)` per answered request: `expected` lists
`(arxiv_id, page_label, quote, status)` for each citation written, status being the verifier state the
mock meant ("verified", "invented", "page_not_found", "quote_not_found"); `uncited` the sentences
written without a citation.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from support import mock_local

SCENARIOS = (
    "grounded",
    "mixed",
    "formats",
    "bad_key",
    "forbidden",
    "rate_limit",
    "rate_limit_once",
    "model_not_found",
    "context_too_long",
    "dropped",
    "slow",
    "empty",
    "huge",
    "surrogate",
)
SLOW_INTERVAL = 0.2
EVENT_CHARS = 24  # text per SSE event: several events per sentence
HUGE_CHARS = 5_000_000
HUGE_BATCH = 200
HUGE_INTERVAL = 0.01
HOSTILE = (
    '<img src=x onerror="window.__pwned=1"> <script>window.__pwned=2</script> '
    "See [this link](javascript:alert(1))."
)
UNCITED = "Most practitioners agree that this question deserves further study"
INVENTED_ID = "2401.99999"

_SOURCE_RE = re.compile(
    r'<source n="(\d+)" cite="arXiv:([^ "]+) (pp?\.(\d+)(?:-(\d+))?)"[^>]*>\n(.*?)\n</source>', re.DOTALL
)
_QUOTABLE_WORD = re.compile(r"^[A-Za-z][A-Za-z,.;:()'-]*$")


@dataclass
class RecordedRequest:
    method: str
    path: str  # with the query string
    headers: dict[str, str]  # names lower-cased
    body: dict | None
    status: int = 0
    aborted: bool = False  # the client hung up before the stream ended


@dataclass
class MockAnswer:
    text: str
    expected: list[tuple[str, str, str, str]] = field(default_factory=list)
    uncited: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class PromptSource:
    n: int
    arxiv_id: str
    label: str  # "p.7" or "pp.7-8"
    first_page: int
    last_page: int
    text: str


def prompt_sources(prompt: str) -> list[PromptSource]:
    return [
        PromptSource(
            int(m.group(1)),
            m.group(2),
            m.group(3),
            int(m.group(4)),
            int(m.group(5) or m.group(4)),
            m.group(6),
        )
        for m in _SOURCE_RE.finditer(prompt)
    ]


def quote_from(text: str, words: int = 8) -> str | None:
    """A run of plain words from the middle of `text`, so it is verbatim and has no quote marks."""
    tokens = text.split()
    runs: list[list[str]] = []
    run: list[str] = []
    for token in tokens:
        if _QUOTABLE_WORD.match(token) and len(token) < 25:
            run.append(token)
            if len(run) == words:
                runs.append(run)
                run = run[words // 2 :]
        else:
            run = []
    if not runs:
        return None
    return " ".join(runs[len(runs) // 2]).rstrip(",.;:")


def _near_miss(quote: str) -> str:
    words = quote.split()
    at = len(words) // 2
    words[at] = "substantially" if words[at].lower() != "substantially" else "barely"
    return " ".join(words)


# Each shape writes (citation with its quote) from the id, the page label and the quote.
FORMATS = (
    lambda i, p, q: f'[arXiv:{i} {p}] *"{q}"*',
    lambda i, p, q: f'[arXiv:{i} {p}] "{q}"',
    lambda i, p, q: f"[arXiv:{i} {p}]: \u201c{q}\u201d",
    lambda i, p, q: f"[arXiv:{i} {p}] \u2014 \u201c{q}\u201d",
    lambda i, p, q: f"[arXiv:{i} {p}] *{q}*",
    lambda i, p, q: f'[arXiv:{i}, {p.replace(".", ". ")}] "{q}"',
    lambda i, p, q: f'(arXiv:{i}, {p}) "{q}"',
)


def _formats_answer(sources: list[PromptSource], quoted: list[tuple[PromptSource, str]]) -> MockAnswer:
    lines, expected = ["What the sources say, cited as models write it:", ""], []
    for n, shape in enumerate(FORMATS):
        source, quote = quoted[n % len(quoted)]
        lines.append(f"- Claim {n + 1} holds here {shape(source.arxiv_id, source.label, quote)}.")
        expected.append((source.arxiv_id, source.label, quote, "verified"))
    spans = [(s, q) for s, q in quoted if s.first_page < s.last_page]
    source, quote = (spans or quoted)[0]
    ranged = f"pp.{source.first_page}-{source.last_page}"
    lines.append(f'- A page range is cited too [arXiv:{source.arxiv_id} {ranged}] "{quote}".')
    expected.append((source.arxiv_id, ranged, quote, "verified"))
    source, quote = quoted[0]
    lines.append(f"- Some claims name no page of their paper at all [arXiv:{source.arxiv_id}].")
    lines.append(f"- Others cite a paper that was never given [arXiv:{INVENTED_ID}].")
    expected += [(source.arxiv_id, "", "", "no_page"), (INVENTED_ID, "", "", "invented")]
    echoed = f'<source n="{source.n}" cite="arXiv:{source.arxiv_id} {source.label}" title="Echoed">'
    lines += ["", f"The prompt showed {echoed} as the first source."]
    return MockAnswer("\n".join(lines), expected)


def write_answer(prompt: str, scenario: str) -> MockAnswer:
    sources = prompt_sources(prompt)
    quoted = [(s, q) for s in sources if (q := quote_from(s.text))]
    if not quoted:
        return MockAnswer("The sources provided are insufficient to answer this question.")
    if scenario == "formats":
        return _formats_answer(sources, quoted)
    lines = ["Here is what the sources say:", ""]
    expected = []
    claims = quoted[:4]
    index = 0
    while index < len(claims):
        source, quote = claims[index]
        citation = f'[arXiv:{source.arxiv_id} {source.label} "{quote}"]'
        expected.append((source.arxiv_id, source.label, quote, "verified"))
        if index == 1 and index + 1 < len(claims):
            other, other_quote = claims[index + 1]
            citation += f' [arXiv:{other.arxiv_id} {other.label} "{other_quote}"]'
            expected.append((other.arxiv_id, other.label, other_quote, "verified"))
            index += 1
        lines.append(f"- Source {source.n} reports this finding {citation}.")
        index += 1
    uncited: list[str] = []
    if scenario == "mixed":
        source, quote = claims[0]
        covered = {(s.arxiv_id, p) for s in sources for p in range(s.first_page, s.last_page + 1)}
        wrong_page = max(p for _, p in covered) + 7
        lines += [
            "",
            f'A further claim comes from a paper that was not given [arXiv:{INVENTED_ID} p.3 "{quote}"].',
            f'The same finding is placed on the wrong page [arXiv:{source.arxiv_id} p.{wrong_page} "{quote}"].',
            f'A paraphrase is passed off as a quote [arXiv:{source.arxiv_id} {source.label} "{_near_miss(quote)}"].',
            f"{UNCITED}.",
            "",
            HOSTILE,
        ]
        expected += [
            (INVENTED_ID, "p.3", quote, "invented"),
            (source.arxiv_id, f"p.{wrong_page}", quote, "page_not_found"),
            (source.arxiv_id, source.label, _near_miss(quote), "quote_not_found"),
        ]
        uncited.append(UNCITED)
    return MockAnswer("\n".join(lines), expected, uncited)


def _padded(text: str, size: int) -> str:
    """`text`, then numbered filler sentences (a paragraph every 40) until it is `size` characters long."""
    parts, length, n = [text, "\n\n"], len(text) + 2, 0
    while length < size:
        n += 1
        sentence = f"Filler sentence {n} adds nothing to the answer." + ("\n\n" if n % 40 == 0 else " ")
        parts.append(sentence)
        length += len(sentence)
    return "".join(parts)[:size]


def text_pieces(text: str, size: int = EVENT_CHARS) -> list[str]:
    return [text[at : at + size] for at in range(0, len(text), size)]


# --- wire formats ------------------------------------------------------------------------------------


def _openai_error(status: int, sent_key: str = "") -> dict:
    code, kind, message = {
        401: ("invalid_api_key", "invalid_request_error", f"Incorrect API key provided: {sent_key}."),
        403: (
            "unsupported_country_region_territory",
            "request_forbidden",
            "Country, region, or territory not supported",
        ),
        404: (
            "model_not_found",
            "invalid_request_error",
            "The model does not exist or you do not have access to it.",
        ),
        429: ("rate_limit_exceeded", "requests", "Rate limit reached for requests. Please try again in 1s."),
        400: (
            "context_length_exceeded",
            "invalid_request_error",
            "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
        ),
    }[status]
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def _anthropic_error(status: int, message: str | None = None) -> dict:
    kind, default = {
        401: ("authentication_error", "invalid x-api-key"),
        403: ("permission_error", "Your API key does not have permission to use the specified resource."),
        404: ("not_found_error", "model: not-a-model"),
        429: ("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"),
        400: ("invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum"),
    }[status]
    return {"type": "error", "error": {"type": kind, "message": message or default}}


def _gemini_error(status: int) -> dict:
    code, state, message, reason = {
        401: (400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.", "API_KEY_INVALID"),
        403: (
            403,
            "PERMISSION_DENIED",
            "Permission denied: Consumer has been suspended.",
            "CONSUMER_SUSPENDED",
        ),
        404: (
            404,
            "NOT_FOUND",
            "models/not-a-model is not found for API version v1beta, or is not supported "
            "for generateContent.",
            None,
        ),
        429: (429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota).", None),
        400: (
            400,
            "INVALID_ARGUMENT",
            "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
            None,
        ),
    }[status]
    error: dict = {"code": code, "message": message, "status": state}
    if reason:
        error["details"] = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason}]
    return {"error": error}


def _openai_events(pieces: list[str], model: str, cut: bool = False) -> list[str]:
    base = {
        "id": "chatcmpl-mock",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }
    events = [json.dumps({**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})]
    events += [
        json.dumps({**base, "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]})
        for p in pieces
    ]
    finish = "length" if cut else "stop"
    events.append(json.dumps({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}))
    return [f"data: {e}\n\n" for e in events] + ["data: [DONE]\n\n"]


def _anthropic_events(pieces: list[str], model: str, cut: bool = False) -> list[str]:
    def event(name: str, data: dict) -> str:
        return f"event: {name}\ndata: {json.dumps(data)}\n\n"

    message = {
        "id": "msg_mock",
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": model,
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 100, "output_tokens": 1},
    }
    events = [
        event("message_start", {"type": "message_start", "message": message}),
        event(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
        event("ping", {"type": "ping"}),
    ]
    events += [
        event(
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}},
        )
        for p in pieces
    ]
    events += [
        event("content_block_stop", {"type": "content_block_stop", "index": 0}),
        event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "max_tokens" if cut else "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": len(pieces)},
            },
        ),
        event("message_stop", {"type": "message_stop"}),
    ]
    return events


def _gemini_events(pieces: list[str], model: str, cut: bool = False) -> list[str]:
    def chunk(text: str, finish: str | None = None) -> str:
        candidate: dict = {"content": {"parts": [{"text": text}], "role": "model"}, "index": 0}
        if finish:
            candidate["finishReason"] = finish
        return f"data: {json.dumps({'candidates': [candidate], 'modelVersion': model})}\r\n\r\n"

    finish = "MAX_TOKENS" if cut else "STOP"
    if not pieces:
        return [chunk("", finish)]
    return [chunk(p) for p in pieces[:-1]] + [chunk(pieces[-1], finish)]


def _prompt_text(api: str, body: dict) -> str:
    """The last user turn's text, in whichever API's message shape."""
    if api == "gemini":
        turns = [c for c in body.get("contents", []) if c.get("role", "user") == "user"]
        return "".join(p.get("text", "") for p in turns[-1].get("parts", [])) if turns else ""
    turns = [m for m in body.get("messages", []) if m.get("role") == "user"]
    if not turns:
        return ""
    content = turns[-1].get("content", "")
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


class MockLLM:
    def __init__(
        self,
        api_key: str = "test-key",
        scenario: str = "grounded",
        local: str | None = None,
        context_window: int | None = None,
        drop_system: bool = False,
    ):
        if local is not None and local not in mock_local.LOCAL_KINDS:
            raise ValueError(f"unknown local server {local!r}; one of {', '.join(mock_local.LOCAL_KINDS)}")
        self.api_key = api_key
        self.scenario = scenario
        self.local = local
        self.context_window = context_window
        self.drop_system = drop_system
        self.reading_seconds = 0.0  # a local model reading the prompt: the pause before the stream starts
        self.requests: list[RecordedRequest] = []
        self.answers: list[MockAnswer] = []
        self._rate_limited_once = False
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> MockLLM:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> MockLLM:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def scenario_for(self, model: str) -> str:
        if model.startswith("mock-") and model[5:] in SCENARIOS:
            return model[5:]
        if self.scenario not in SCENARIOS:
            raise ValueError(f"unknown scenario {self.scenario!r}; one of {', '.join(SCENARIOS)}")
        return self.scenario

    def _handler_class(self):
        mock = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def _cors(self) -> None:
                self.send_header("Access-Control-Allow-Origin", "*")
                self.send_header("Access-Control-Expose-Headers", "Retry-After, Content-Type")

            def do_OPTIONS(self) -> None:
                mock._record(self, None, 204)
                self.send_response(204)
                self._cors()
                requested = self.headers.get("Access-Control-Request-Headers") or (
                    "authorization, content-type, x-api-key, anthropic-version, "
                    "anthropic-dangerous-direct-browser-access, x-goog-api-key"
                )
                self.send_header("Access-Control-Allow-Headers", requested)
                self.send_header("Access-Control-Allow-Methods", "POST, OPTIONS")
                self.send_header("Access-Control-Max-Age", "600")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self) -> None:
                record = mock._record(self, None, 0)
                found = mock._describe(urlsplit(self.path).path, None)
                if found is None:
                    self.send_json(record, 404, {"error": {"message": f"no such endpoint: {self.path}"}})
                else:
                    self.send_json(record, 200, found)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else {}
                except ValueError:
                    body = None
                record = mock._record(self, body, 0)
                found = mock._describe(urlsplit(self.path).path, body)
                if found is not None:
                    self.send_json(record, 200, found)
                    return
                mock._answer(self, record, body)

            def send_json(
                self, record: RecordedRequest, status: int, data: dict, headers: dict | None = None
            ) -> None:
                payload = json.dumps(data).encode()
                record.status = status
                self.send_response(status)
                self._cors()
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def start_stream(self, record: RecordedRequest) -> None:
                record.status = 200
                self.send_response(200)
                self._cors()
                self.send_header("Content-Type", "text/event-stream; charset=utf-8")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()

            def send_chunk(self, data: str) -> None:
                encoded = data.encode("utf-8")
                self.wfile.write(f"{len(encoded):x}\r\n".encode() + encoded + b"\r\n")
                self.wfile.flush()

            def end_stream(self) -> None:
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        return Handler

    def _describe(self, path: str, body: dict | None) -> dict | None:
        """A local server's answer to a question about itself (window, models), or None."""
        context = self.context_window or 2048
        if self.local == "llama-server" and path == "/props" and body is None:
            return mock_local.props(context)
        if self.local and path.endswith("/models") and body is None:
            return mock_local.model_list(self.local)
        if self.local == "ollama" and path == "/api/tags" and body is None:
            return mock_local.ollama_tags()
        if self.local == "ollama" and path == "/api/show" and body is not None:
            return mock_local.ollama_show(context)
        return None

    def _overflows(self, handler, record: RecordedRequest, api: str, body: dict) -> bool:
        """Whether the prompt exceeds the local server's window; if so, answered as that server does."""
        tokens = mock_local.model_tokens(mock_local.seen_text(api, body, self.drop_system))
        if self.local == "llama-cpp-python":  # it counts the answer's cap too
            tokens += mock_local.cap_of(api, body) or 0
        if not self.local or not self.context_window or tokens <= self.context_window:
            return False
        if self.local == "llama-cpp-python":
            handler.start_stream(record)
            handler.end_stream()
        else:
            handler.send_json(record, 400, mock_local.overflow_error(self.local, tokens, self.context_window))
        return True

    def _record(self, handler, body: dict | None, status: int) -> RecordedRequest:
        record = RecordedRequest(
            handler.command, handler.path, {k.lower(): v for k, v in handler.headers.items()}, body, status
        )
        with self._lock:
            self.requests.append(record)
        return record

    def _answer(self, handler, record: RecordedRequest, body: dict | None) -> None:
        path = urlsplit(handler.path)
        headers = record.headers
        gemini = re.search(r"/v1beta/models/([^/:]+):(streamGenerateContent|generateContent)$", path.path)
        if path.path.endswith("/chat/completions"):
            api, model = "openai", (body or {}).get("model", "")
        elif path.path.endswith("/v1/messages"):
            api, model = "anthropic", (body or {}).get("model", "")
        elif gemini:
            api, model = "gemini", gemini.group(1)
        else:
            handler.send_json(record, 404, {"error": {"message": f"no such endpoint: {path.path}"}})
            return
        errors = {"openai": _openai_error, "anthropic": _anthropic_error, "gemini": _gemini_error}[api]
        if body is None:
            handler.send_json(record, 400, {"error": {"message": "request body is not JSON"}})
            return
        # Keys: only in the API's own header.
        if api == "gemini" and "key" in parse_qs(path.query):
            handler.send_json(
                record,
                400,
                {"error": {"code": 400, "message": "mock: API key in the URL", "status": "INVALID_ARGUMENT"}},
            )
            return
        if api == "anthropic":
            if "anthropic-version" not in headers:
                handler.send_json(record, 400, _anthropic_error(400, "anthropic-version: header is required"))
                return
            if "origin" in headers and headers.get("anthropic-dangerous-direct-browser-access") != "true":
                handler.send_json(
                    record,
                    401,
                    _anthropic_error(
                        401, "CORS requests must set 'anthropic-dangerous-direct-browser-access' header"
                    ),
                )
                return
        sent_key = {
            "openai": headers.get("authorization", "").removeprefix("Bearer "),
            "anthropic": headers.get("x-api-key", ""),
            "gemini": headers.get("x-goog-api-key", ""),
        }[api]
        scenario = self.scenario_for(model)
        status = {
            "bad_key": 401,
            "forbidden": 403,
            "rate_limit": 429,
            "model_not_found": 404,
            "context_too_long": 400,
        }.get(scenario)
        if sent_key != self.api_key:
            status = 401
        if scenario == "rate_limit_once":
            with self._lock:
                first, self._rate_limited_once = not self._rate_limited_once, True
            status = 429 if first else status
        if status:
            error = errors(status, sent_key) if api == "openai" else errors(status)
            http_status = error["error"]["code"] if api == "gemini" else status
            extra = {"Retry-After": "1"} if status == 429 else None
            handler.send_json(record, http_status, error, extra)
            return
        if self._overflows(handler, record, api, body):
            return
        answer = (
            MockAnswer("")
            if scenario == "empty"
            else write_answer(
                _prompt_text(api, body), scenario if scenario in ("mixed", "formats") else "grounded"
            )
        )
        if self.drop_system and mock_local.CITATION_RULE not in mock_local.seen_text(api, body, True):
            answer = MockAnswer(mock_local.PROSE, [], [mock_local.PROSE])
        text, cut = mock_local.cut_to(answer.text, mock_local.cap_of(api, body))
        answer = MockAnswer(text, answer.expected if not cut else [], answer.uncited)
        if scenario == "surrogate":
            answer = MockAnswer("\ud800" + answer.text, answer.expected, answer.uncited)
        if scenario == "huge":
            answer = MockAnswer(_padded(answer.text, HUGE_CHARS), answer.expected, answer.uncited)
        with self._lock:
            self.answers.append(answer)
        streaming = (
            api == "gemini" and gemini.group(2) == "streamGenerateContent" or body.get("stream") is True
        )
        if not streaming:
            handler.send_json(record, 200, _whole_answer(api, answer.text, model))
            return
        size = 6 if scenario == "slow" else EVENT_CHARS
        pieces = text_pieces(answer.text, size)
        events = {"openai": _openai_events, "anthropic": _anthropic_events, "gemini": _gemini_events}[api](
            pieces, model, cut
        )
        time.sleep(self.reading_seconds)
        handler.start_stream(record)
        try:
            if scenario == "dropped":
                for event in events[: max(2, len(events) // 3)]:
                    handler.send_chunk(event)
                # A real connection drops some time after the last event; data and the cut arriving
                # together let chromium fail the body before the page reads what came.
                time.sleep(SLOW_INTERVAL)
                handler.close_connection = True
                handler.connection.shutdown(2)
                return
            batch = HUGE_BATCH if scenario == "huge" else 1
            pause = {"slow": SLOW_INTERVAL, "huge": HUGE_INTERVAL}.get(scenario, 0)
            for at in range(0, len(events), batch):
                handler.send_chunk("".join(events[at : at + batch]))
                if pause:
                    time.sleep(pause)
            handler.end_stream()
        except (BrokenPipeError, ConnectionResetError, OSError):
            record.aborted = True
            handler.close_connection = True


def _whole_answer(api: str, text: str, model: str) -> dict:
    if api == "openai":
        return {
            "id": "chatcmpl-mock",
            "object": "chat.completion",
            "model": model,
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            ],
        }
    if api == "anthropic":
        return {
            "id": "msg_mock",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
        }
    return {"candidates": [{"content": {"parts": [{"text": text}], "role": "model"}, "finishReason": "STOP"}]}
