"""A loopback fake arXiv: the Atom query API and PDF downloads, with knobs for the ways arXiv misbehaves.

    with FakeArxiv() as server:
        server.add_paper("2005.11401", versions=2)
        options = FetchOptions(cache_dir=..., api_url=server.api_url, delay_seconds=0.2)

Knobs (all may be changed while the server runs):
- `api_script`: what to answer the next API requests with, in order: an HTTP status (e.g. [429] or
  [503, 503]) or "garbage" (200 with an HTML page, as a captive portal would); `retry_after` is sent
  with 429s and 503s when set.
- `pdf_script[versioned_id]`: actions for the next requests of that PDF, in order: an HTTP status
  (429, 503, 404, ...), "truncate" (full Content-Length, half the body, then the connection closes)
  or "short" (half the body with a matching Content-Length).
- `always_truncate`: versioned ids whose PDF is always cut off.
- `reject_ids`: ids (as sent in id_list) that make the whole API query answer 400, as arXiv does
  for an id it cannot parse.
- `honour_range`: answer `Range: bytes=N-` with 206 (True) or ignore it and send the whole file (False).

`requests` records every request (arrival time on `time.monotonic()`, path, query, headers, status).
"""

from __future__ import annotations

import re
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit
from xml.sax.saxutils import escape, quoteattr


def make_pdf(text: str, pages: int = 3) -> bytes:
    """A small but real PDF (a few KB) whose pages carry `text`."""
    import pymupdf

    doc = pymupdf.open()
    for number in range(1, pages + 1):
        page = doc.new_page()
        y = 72
        for line in range(12):
            page.insert_text((72, y), f"{text} - page {number}, line {line + 1}: lorem ipsum dolor sit amet")
            y += 18
    data = doc.tobytes()
    doc.close()
    return data


@dataclass
class FakeVersion:
    version: str  # "v2"
    pdf: bytes
    updated: str  # "2020-06-01T12:00:00Z"
    comment: str = ""


@dataclass
class FakePaper:
    arxiv_id: str
    title: str
    authors: list[str]
    abstract: str
    published: str
    primary_category: str = "cs.CL"
    categories: list[str] = field(default_factory=lambda: ["cs.CL", "cs.IR"])
    doi: str = ""
    journal_ref: str = ""
    versions: list[FakeVersion] = field(default_factory=list)

    def version(self, name: str | None) -> FakeVersion | None:
        if name is None:
            return self.versions[-1] if self.versions else None
        return next((v for v in self.versions if v.version == name), None)


@dataclass
class RequestRecord:
    t: float  # time.monotonic() on arrival
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    status: int = 0

    @property
    def kind(self) -> str:
        return "api" if self.path.startswith("/api/") else "pdf" if self.path.startswith("/pdf/") else "other"


class FakeArxiv:
    def __init__(self) -> None:
        self.papers: dict[str, FakePaper] = {}
        self.api_script: deque[int | str] = deque()
        self.pdf_script: dict[str, deque[int | str]] = {}
        self.always_truncate: set[str] = set()
        self.reject_ids: set[str] = set()
        self.honour_range = True
        self.retry_after: str | None = None
        self.requests: list[RequestRecord] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- content

    def add_paper(
        self,
        arxiv_id: str,
        versions: int = 1,
        *,
        title: str | None = None,
        comment: str = "",
        doi: str = "",
        journal_ref: str = "",
        authors: list[str] | None = None,
    ) -> FakePaper:
        """A paper with `versions` versions, each with its own PDF; `comment` goes on the latest."""
        paper = FakePaper(
            arxiv_id=arxiv_id,
            title=title or f"A Study of Paper {arxiv_id}",
            authors=authors or ["Ada Lovelace", "Alan Turing"],
            abstract=f"We study {arxiv_id}.\n  It is a fine paper\n  about retrieval.",
            published="2020-05-22T17:34:24Z",
            doi=doi,
            journal_ref=journal_ref,
        )
        for n in range(1, versions + 1):
            paper.versions.append(
                FakeVersion(
                    version=f"v{n}",
                    pdf=make_pdf(f"{arxiv_id}v{n}"),
                    updated=f"2021-{min(n, 12):02d}-01T08:00:00Z" if n > 1 else paper.published,
                    comment=comment if n == versions else "",
                )
            )
        self.papers[arxiv_id] = paper
        return paper

    def pdf_bytes(self, versioned_id: str) -> bytes:
        arxiv_id, version = _split(versioned_id)
        found = self.papers[arxiv_id].version(version)
        assert found is not None
        return found.pdf

    # -- lifecycle

    def start(self) -> FakeArxiv:
        handler = type("Handler", (_Handler,), {"fake": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.05,), name="fake-arxiv", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> FakeArxiv:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        assert self._httpd is not None, "start() the server first"
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def api_url(self) -> str:
        """For `FetchOptions.api_url` / `arxiv.Client.query_url_format`."""
        return self.url + "/api/query?{}"

    # -- what happened

    def api_requests(self) -> list[RequestRecord]:
        return [r for r in self.requests if r.kind == "api"]

    def pdf_requests(self, versioned_id: str | None = None) -> list[RequestRecord]:
        return [
            r
            for r in self.requests
            if r.kind == "pdf" and (versioned_id is None or r.path == f"/pdf/{versioned_id}")
        ]

    def clear(self) -> None:
        with self._lock:
            self.requests.clear()

    # -- responses (called from handler threads)

    def _record(self, handler: BaseHTTPRequestHandler) -> RequestRecord:
        parts = urlsplit(handler.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        record = RequestRecord(time.monotonic(), unquote(parts.path), query, dict(handler.headers.items()))
        with self._lock:
            self.requests.append(record)
        return record

    def _next_pdf_action(self, versioned_id: str) -> int | str | None:
        with self._lock:
            script = self.pdf_script.get(versioned_id)
            if script:
                return script.popleft()
        return "truncate" if versioned_id in self.always_truncate else None

    def feed(self, query: dict[str, str]) -> bytes:
        ids = [i.strip() for i in query.get("id_list", "").split(",") if i.strip()]
        start = int(query.get("start", "0") or 0)
        max_results = int(query.get("max_results", "10") or 10)
        entries = []
        for requested in ids:
            arxiv_id, version = _split(requested)
            paper = self.papers.get(arxiv_id)
            found = paper.version(version) if paper else None
            if paper is not None and found is not None:
                entries.append(self._entry(paper, found))
        page = entries[start : start + max_results]
        return (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            '<feed xmlns="http://www.w3.org/2005/Atom" xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/"'
            ' xmlns:arxiv="http://arxiv.org/schemas/atom">\n'
            f"  <id>{escape(self.url)}/api/fake</id>\n"
            "  <title>arXiv Query: fake</title>\n"
            "  <updated>2026-11-22T00:00:00-05:00</updated>\n"
            f"  <opensearch:totalResults>{len(entries)}</opensearch:totalResults>\n"
            f"  <opensearch:startIndex>{start}</opensearch:startIndex>\n"
            f"  <opensearch:itemsPerPage>{max_results}</opensearch:itemsPerPage>\n"
            + "".join(page)
            + "</feed>\n"
        ).encode()

    def _entry(self, paper: FakePaper, version: FakeVersion) -> str:
        vid = f"{paper.arxiv_id}{version.version}"
        parts = [
            "  <entry>",
            f"    <id>http://arxiv.org/abs/{escape(vid)}</id>",
            f"    <updated>{version.updated}</updated>",
            f"    <published>{paper.published}</published>",
            f"    <title>{escape(paper.title)}</title>",
            f"    <summary>{escape(paper.abstract)}</summary>",
            *(f"    <author><name>{escape(a)}</name></author>" for a in paper.authors),
        ]
        if version.comment:
            parts.append(f"    <arxiv:comment>{escape(version.comment)}</arxiv:comment>")
        if paper.doi:
            parts.append(f"    <arxiv:doi>{escape(paper.doi)}</arxiv:doi>")
            parts.append(f'    <link title="doi" href="https://doi.org/{escape(paper.doi)}" rel="related"/>')
        if paper.journal_ref:
            parts.append(f"    <arxiv:journal_ref>{escape(paper.journal_ref)}</arxiv:journal_ref>")
        parts += [
            f'    <link href="http://arxiv.org/abs/{escape(vid)}" rel="alternate" type="text/html"/>',
            f'    <link title="pdf" href={quoteattr(f"{self.url}/pdf/{vid}")} rel="related"'
            ' type="application/pdf"/>',
            f'    <arxiv:primary_category term="{paper.primary_category}" scheme="http://arxiv.org/schemas/atom"/>',
            *(f'    <category term="{c}" scheme="http://arxiv.org/schemas/atom"/>' for c in paper.categories),
            "  </entry>\n",
        ]
        return "\n".join(parts)


def _split(versioned_id: str) -> tuple[str, str | None]:
    match = re.fullmatch(r"(.+?)(v\d+)?", versioned_id)
    assert match is not None
    return match[1], match[2]


class _Handler(BaseHTTPRequestHandler):
    fake: FakeArxiv  # set on the subclass FakeArxiv.start() makes
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - keep test output quiet
        pass

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        record = self.fake._record(self)
        if record.path == "/api/query":
            self._api(record)
        elif record.path.startswith("/pdf/"):
            self._pdf(record, record.path[len("/pdf/") :])
        else:
            self._status(record, 404)

    def _status(self, record: RequestRecord, status: int, body: bytes = b"") -> None:
        record.status = status
        self.send_response(status)
        if status in (429, 503) and self.fake.retry_after is not None:
            self.send_header("Retry-After", self.fake.retry_after)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _api(self, record: RequestRecord) -> None:
        with self.fake._lock:
            scripted = self.fake.api_script.popleft() if self.fake.api_script else None
        if scripted == "garbage":
            self._status(record, 200, b"<html><body>Please log in to the network</body></html>")
            return
        if isinstance(scripted, int):
            self._status(record, scripted, b"scripted failure")
            return
        if self.fake.reject_ids & set(record.query.get("id_list", "").split(",")):
            self._status(record, 400, b"incorrect id format")
            return
        body = self.fake.feed(record.query)
        record.status = 200
        self.send_response(200)
        self.send_header("Content-Type", "application/atom+xml; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _pdf(self, record: RequestRecord, versioned_id: str) -> None:
        arxiv_id, version = _split(versioned_id)
        paper = self.fake.papers.get(arxiv_id)
        found = paper.version(version) if paper else None
        if found is None:
            self._status(record, 404, b"no such paper")
            return
        action = self.fake._next_pdf_action(versioned_id)
        if isinstance(action, int):
            self._status(record, action, b"scripted failure")
            return
        data = found.pdf
        start = 0
        match = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range", ""))
        if match and self.fake.honour_range:
            start = int(match[1])
            if start >= len(data):
                self._status(record, 416)
                return
        body = data[start:]
        record.status = 206 if start else 200
        self.send_response(record.status)
        self.send_header("Content-Type", "application/pdf")
        if start:
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        if action == "short":
            body = body[: len(body) // 2]
        self.send_header("Content-Length", str(len(body)))
        if self.fake.honour_range:
            self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        if action == "truncate":
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(body)
