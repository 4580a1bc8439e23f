"""A loopback static host that misbehaves as real hosts do, for testing readers of ranged site files.

    with QuirkyHost(site, ignore_range=True) as host:
        fetch(host.url + "data/codes.bin", Range="bytes=0-99")   # 200 and the whole file
    with QuirkyHost(site, gzip="accepted") as host: ...           # GitHub Pages' own habit

It serves a built site exactly as `builder serve` does (base_url, 404 page, 206/416, cache headers),
except for its knobs:
- `ignore_range`: Range is ignored; every file comes whole with 200 (a plain static server).
- `gzip="accepted"`: a request whose Accept-Encoding names gzip gets the whole file gzip-compressed
  (`Content-Encoding: gzip`, 200), its Range ignored, as Pages does for a plain GET, a HEAD or a
  preload; a request that accepts only identity (a browser's ranged fetch) is served as `serve` does.
- `gzip="always"`: every file reply is gzip-compressed, even to a ranged identity request (a host that
  breaks the rule Pages keeps; a reader must notice, not misread the bytes).
- `round_trip_s`: each ranged request is held that long before its answer (a distant host), so that
  requests in flight together show as overlapping.

`requests` records each request: method, path (without its query), its Range and Accept-Encoding, the
status sent, and when it came in and was answered.
"""

from __future__ import annotations

import gzip as gzip_module
import io
import os
import threading
import time
from dataclasses import dataclass
from functools import partial
from http import HTTPStatus
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from builder.commands.serve import HOST, SiteHandler, SiteServer, base_url_of

GzipHabit = Literal["never", "accepted", "always"]


@dataclass(frozen=True)
class SeenRequest:
    method: str
    path: str
    range: str | None
    accept_encoding: str | None
    status: int
    received: float  # time.monotonic() when the request came in
    answered: float  # and when its status went out


class QuirkyHandler(SiteHandler):
    asked_range: str | None = None  # the Range header as sent, before ignore_range drops it

    def __init__(self, *args, host: QuirkyHost, **kwargs):
        self.host = host
        super().__init__(*args, base_url=host.base_url, quiet=True, **kwargs)

    def parse_request(self) -> bool:
        self.asked_range = None
        self.received = time.monotonic()
        parsed = super().parse_request()
        if parsed:
            self.asked_range = self.headers.get("Range")
        return parsed

    def send_head(self):
        if self.host.round_trip_s and "Range" in self.headers:
            time.sleep(self.host.round_trip_s)
        if self.host.ignore_range and "Range" in self.headers:
            del self.headers["Range"]
        file_path = self.translate_path(self.path)
        if self.compresses() and os.path.isfile(file_path) and not file_path.endswith("/"):
            return self.send_gzipped(file_path)
        return super().send_head()

    def compresses(self) -> bool:
        accepts = "gzip" in (self.headers.get("Accept-Encoding") or "").lower()
        return self.host.gzip == "always" or (self.host.gzip == "accepted" and accepts)

    def send_gzipped(self, file_path: str):
        body = gzip_module.compress(Path(file_path).read_bytes())
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", self.guess_type(file_path))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Vary", "Accept-Encoding")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return io.BytesIO(body)

    def send_response(self, code, message=None):
        seen = SeenRequest(  # a request line too long or malformed is answered before it is parsed
            getattr(self, "command", ""),
            urlsplit(getattr(self, "path", "")).path,
            self.asked_range,
            self.headers.get("Accept-Encoding") if hasattr(self, "headers") else None,
            int(code),
            getattr(self, "received", time.monotonic()),
            time.monotonic(),
        )
        with self.host.lock:
            self.host.requests.append(seen)
        super().send_response(code, message)


class QuirkyHost:
    """The site at `url` on 127.0.0.1 while the `with` block runs (a free port each time)."""

    def __init__(
        self, site: Path, ignore_range: bool = False, gzip: GzipHabit = "never", round_trip_s: float = 0.0
    ):
        self.site = Path(site)
        self.round_trip_s = round_trip_s
        self.ignore_range = ignore_range
        self.gzip = gzip
        self.base_url = base_url_of(self.site)
        self.requests: list[SeenRequest] = []
        self.lock = threading.Lock()
        handler = partial(QuirkyHandler, directory=str(self.site.resolve()), host=self)
        self.server = SiteServer((HOST, 0), handler)
        self.url = f"http://{HOST}:{self.server.server_address[1]}{self.base_url}"

    def __enter__(self) -> QuirkyHost:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.server.shutdown()
        self.server.server_close()
