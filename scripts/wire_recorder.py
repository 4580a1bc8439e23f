"""A loopback proxy that records what passes between a client and a model server, event by event.

    with WireRecorder("http://127.0.0.1:8000") as wire:   # wire.base_url: point the client here
        ...
    wire.exchanges   # one Exchange per request: status, bytes, first byte, SSE events, keep-alive
                     # comments, finish reasons, whether [DONE] came, whether the client hung up

For scripts/bench_local_llm.py: what a real llama.cpp server sends, as the tests' mock sends it.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

from builder.providers import sse_events

HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


@dataclass
class Exchange:
    method: str
    path: str
    request_bytes: int
    status: int = 0
    response_bytes: int = 0
    first_byte_s: float | None = None
    total_s: float = 0.0
    sse_events: int = 0
    comments: int = 0  # ": ping" lines and other SSE comments (keep-alive)
    finish_reasons: list[str] = field(default_factory=list)
    done_marker: bool = False
    client_hung_up: bool = False

    def to_dict(self) -> dict:
        return asdict(self)


def read_event(exchange: Exchange, data: str) -> None:
    """Counts one SSE event of an OpenAI-compatible stream and notes [DONE] and any finish reasons."""
    exchange.sse_events += 1
    if data.strip() == "[DONE]":
        exchange.done_marker = True
        return
    try:
        payload = json.loads(data)
    except ValueError:
        return
    for choice in payload.get("choices") or [] if isinstance(payload, dict) else []:
        if choice.get("finish_reason"):
            exchange.finish_reasons.append(str(choice["finish_reason"]))


class WireRecorder:
    def __init__(self, target: str):
        parts = urlsplit(target)
        self.target = (parts.hostname or "127.0.0.1", parts.port or 80)
        self.exchanges: list[Exchange] = []
        self.chat_bodies: list[dict] = []  # the JSON of each chat request, for what was asked
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> WireRecorder:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self):
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:
                self.forward()

            def do_POST(self) -> None:
                self.forward()

            def do_OPTIONS(self) -> None:
                self.forward()

            def forward(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                exchange = Exchange(self.command, self.path, len(body))
                recorder.exchanges.append(exchange)
                if self.path.endswith("/chat/completions") and body:
                    recorder.chat_bodies.append(json.loads(body))
                started = time.monotonic()
                upstream = http.client.HTTPConnection(*recorder.target, timeout=900)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_HEADERS}
                upstream.request(self.command, self.path, body or None, headers)
                response = upstream.getresponse()
                exchange.status = response.status
                self.send_response(response.status)
                for name, value in response.getheaders():
                    if name.lower() not in HOP_HEADERS:
                        self.send_header(name, value)
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                try:
                    for _, data in sse_events(self.passed_on(response, exchange, started)):
                        read_event(exchange, data)
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    exchange.client_hung_up = True
                    self.close_connection = True
                finally:
                    exchange.total_s = round(time.monotonic() - started, 3)
                    upstream.close()

            def passed_on(
                self, response: http.client.HTTPResponse, exchange: Exchange, started: float
            ) -> Iterator[bytes]:
                """The response's lines, each sent on to the client as it arrives (so the client's
                timing is the server's) before the SSE parser reads it."""
                for line in iter(response.readline, b""):
                    if exchange.first_byte_s is None:
                        exchange.first_byte_s = round(time.monotonic() - started, 3)
                    exchange.response_bytes += len(line)
                    if line.startswith(b":"):
                        exchange.comments += 1
                    self.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
                    self.wfile.flush()
                    yield line

        return Handler
