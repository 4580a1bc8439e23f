"""`python -m builder serve`: the built site on 127.0.0.1, under its base_url, as GitHub Pages serves it.

The site's links all start with base_url ("/my-list/" on a GitHub Pages project site), so the server
mounts the folder at that prefix: everything outside it is a 404 (only "/" redirects there, for
convenience), a folder serves its index.html (a folder named without its slash is redirected to it,
as Pages does) and a folder without one is a 404, never a listing. Content-hashed files and the versioned
Pyodide folder are cached for good; pages and manifest.json are revalidated on every load. A `Range`
request gets one byte range (206), a 416 or the whole file, as Pages answers it (byte_range.py); files
are always sent as stored (identity), ranged or not. Replies are HTTP/1.1 with a strong ETag (Pages'
form: the file's mtime and size in hex), as Pages sends them: chromium keeps a 206 in its HTTP cache only
from HTTP/1.1 with a strong validator, so over HTTP/1.0 a range asked again went back to the server,
where on Pages the browser's cache answers it.

Every client is bounded (ConnectionLimits): the request's head must arrive within a deadline, a reply
that moves no byte for a while is dropped, and only so many connections are served at once, so a client
trickling bytes holds one thread for seconds, not for good. The head's lines and their number are
bounded by http.server (65,536 bytes a line, 100 headers: 414 and 431).
"""

from __future__ import annotations

import argparse
import errno
import io
import json
import os
import posixpath
import re
import socket
import sys
import threading
import time
from dataclasses import dataclass
from functools import partial
from http import HTTPStatus
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

from builder.commands.byte_range import ByteRange, Unsatisfiable, requested_range
from builder.config import CorpusError, check_base_url

HOST = "127.0.0.1"  # loopback only: the preview is for this machine
MIME_TYPES = {
    ".wasm": "application/wasm",
    ".mjs": "text/javascript",
    ".js": "text/javascript",
    ".json": "application/json",
    ".onnx": "application/octet-stream",
    ".whl": "application/zip",
    ".zip": "application/zip",
    # A file stored gzipped (builder/site/store.py stored_gzipped) is sent as it is stored, with no
    # Content-Encoding, as GitHub Pages sends it: the page decompresses it.
    ".gz": "application/gzip",
    ".txt": "text/plain; charset=utf-8",
    ".css": "text/css",
    ".html": "text/html; charset=utf-8",
}
HASHED_NAME = re.compile(r"\.[0-9a-f]{12}\.[a-z]+(\.gz)?$")
# Runtime modules that import one another by name sit in a folder named by the hash of them all
# (builder/site/runtime.py write_module_folder).
HASHED_FOLDER = re.compile(r"/runtime/[a-z]+-[0-9a-f]{12}/")
IMMUTABLE = "public, max-age=31536000, immutable"
# Statuses of a reply that carries (part of) a file: they say the file may be read by range.
FILE_STATUSES = (HTTPStatus.OK, HTTPStatus.PARTIAL_CONTENT, HTTPStatus.REQUESTED_RANGE_NOT_SATISFIABLE)


@dataclass(frozen=True)
class ConnectionLimits:
    """How long one client may take and how many are served at once."""

    # A browser sends a request's head in one packet; on loopback a head not in after 10 s is a client
    # that is not sending one.
    head_seconds: float = 10.0
    idle_seconds: float = 30.0  # while replying, the longest wait for the client to take more bytes
    # Chromium opens at most 6 connections to one host; tests and benches run up to 50 clients at once.
    connections: int = 64
    wait_seconds: float = 5.0  # for a connection to end before a new one is answered 503


DEFAULT_LIMITS = ConnectionLimits()


class HeadReader(socket.SocketIO):
    """A connection's reads, each given only what is left of the deadline for the request's head."""

    def __init__(self, connection: socket.socket, seconds: float):
        super().__init__(connection, "rb")
        self.connection = connection
        self.deadline: float | None = time.monotonic() + seconds

    def readinto(self, buffer) -> int | None:
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the request's head did not arrive in time")
            self.connection.settimeout(left)
        return super().readinto(buffer)


class FileSlice:
    """The part of an open file a 206 sends: `read` stops at the range's end (copyfile reads until b"")."""

    def __init__(self, file, byte_range: ByteRange):
        file.seek(byte_range.start)
        self.file = file
        self.left = byte_range.stop - byte_range.start

    def read(self, size: int = -1) -> bytes:
        wanted = self.left if size < 0 else min(size, self.left)
        data = self.file.read(wanted)
        self.left -= len(data)
        return data

    def close(self) -> None:
        self.file.close()


def served_file(path: str) -> str | None:
    """The file a GET of this translated path sends: the file, or a folder's index.html (a folder named
    without its slash is redirected first); None for anything else."""
    if path.endswith("/"):
        path = os.path.join(path, "index.html")
    return path if os.path.isfile(path) else None


class PortError(OSError):
    """The port is taken (or reserved); the message says how to pick another."""


def base_url_of(site_dir: Path) -> str:
    """The manifest's base_url, checked as the build checks it: a damaged manifest must not send
    visitors to another host."""
    manifest = Path(site_dir) / "manifest.json"
    if not manifest.exists():
        raise FileNotFoundError(
            f"{manifest} does not exist: build the site first (`python -m builder build`)"
        )
    try:
        base_url = json.loads(manifest.read_text(encoding="utf-8")).get("base_url", "/")
    except (ValueError, AttributeError) as exc:
        raise CorpusError(f"{manifest} is damaged ({exc}); build the site again") from exc
    check_base_url(str(base_url), str(manifest))
    return base_url


class SiteHandler(SimpleHTTPRequestHandler):
    """Serves `directory` at `base_url`; anything outside the prefix is a 404 (or a redirect for "/")."""

    extensions_map = {**SimpleHTTPRequestHandler.extensions_map, **MIME_TYPES}
    protocol_version = "HTTP/1.1"
    status = 0  # of the reply being sent: end_headers says Accept-Ranges on a file's reply
    etag = ""  # of the file the reply is about, sent with it

    def __init__(
        self, *args, base_url: str, quiet: bool, limits: ConnectionLimits = DEFAULT_LIMITS, **kwargs
    ):
        self.base_url = base_url
        # Paths are compared decoded: a browser asks for "/my%20list/" or "/caf%C3%A9/" for a base_url
        # written either way.
        self.site_prefix = unquote(base_url)
        self.quiet = quiet
        self.limits = limits
        super().__init__(*args, **kwargs)

    def setup(self) -> None:
        super().setup()
        self.rfile.close()  # the plain reader made by setup: reads wait on the head's deadline instead
        self.head_reader = HeadReader(self.connection, self.limits.head_seconds)
        self.rfile = io.BufferedReader(self.head_reader)

    def parse_request(self) -> bool:
        """Only HTTP/1.0 and 1.1 are served: an HTTP/0.9 reply would have no status line at all."""
        try:
            parsed = super().parse_request()
        finally:  # the head is in (or refused): from here on only a stalled reply times out
            self.head_reader.deadline = None
            self.connection.settimeout(self.limits.idle_seconds)
        if not parsed:
            return False
        if self.request_version in ("HTTP/1.0", "HTTP/1.1"):
            return True
        if self.request_version == "HTTP/0.9":
            self.send_error(HTTPStatus.BAD_REQUEST, "HTTP/0.9 is not served")
        else:
            self.send_error(HTTPStatus.HTTP_VERSION_NOT_SUPPORTED, f"{self.request_version} is not served")
        return False

    def send_head(self):
        self.etag = ""
        path = unquote(urlsplit(self.path).path)
        if "\x00" in path:  # no file name holds NUL; the file system calls would raise
            self.send_error(HTTPStatus.BAD_REQUEST, "NUL in the path")
            return None
        if path == "/" and self.base_url != "/":
            self.send_response(HTTPStatus.FOUND)
            self.send_header("Location", quote(self.base_url, safe="/%"))  # a header is ASCII
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        if not path.startswith(self.site_prefix) and path + "/" != self.site_prefix:
            self.send_error(HTTPStatus.NOT_FOUND, f"outside the site's base_url {self.base_url}")
            return None
        translated = self.translate_path(self.path)
        file_path = served_file(translated)
        if file_path is not None:
            stat = os.stat(file_path)
            self.etag = f'"{int(stat.st_mtime):x}-{stat.st_size:x}"'
            if self.etag_matches(self.headers.get("If-None-Match")):
                self.send_response(HTTPStatus.NOT_MODIFIED)
                self.send_header("Last-Modified", self.date_time_string(stat.st_mtime))
                self.end_headers()
                return None
            if "Range" in self.headers and file_path == translated:  # a folder's page is sent whole
                return self.send_range(file_path)
        return super().send_head()

    def etag_matches(self, if_none_match: str | None) -> bool:
        """Whether an If-None-Match names this file as it is (a weak comparison, as RFC 9110 has it)."""
        if if_none_match is None:
            return False
        tags = {tag.strip().removeprefix("W/") for tag in if_none_match.split(",")}
        return "*" in tags or self.etag in tags

    def send_range(self, file_path: str):
        """One byte range of the file (206), a 416, or the whole file when the range is to be ignored."""
        file = open(file_path, "rb")  # noqa: SIM115 -- do_GET closes what send_head returns
        try:
            stat = os.fstat(file.fileno())
            wanted = requested_range(self.headers["Range"], stat.st_size)
            if_range = self.headers.get("If-Range")  # the range holds for the file as the client knows it
            if wanted is None or if_range not in (None, self.etag, self.date_time_string(stat.st_mtime)):
                file.close()
                return super().send_head()  # the whole file, as a plain GET gets it
            if isinstance(wanted, Unsatisfiable):
                file.close()
                self.send_response(HTTPStatus.REQUESTED_RANGE_NOT_SATISFIABLE)
                self.send_header("Content-Range", wanted.content_range)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return None
            self.send_response(HTTPStatus.PARTIAL_CONTENT)
            self.send_header("Content-Type", self.guess_type(file_path))
            self.send_header("Content-Range", wanted.content_range)
            self.send_header("Content-Length", str(wanted.stop - wanted.start))
            self.send_header("Last-Modified", self.date_time_string(stat.st_mtime))
            self.end_headers()
            return FileSlice(file, wanted)
        except BaseException:  # a client gone while the headers went out: the file is not kept open
            file.close()
            raise

    def send_response(self, code, message=None):
        self.status = code
        super().send_response(code, message)

    def send_error(self, code, message=None, explain=None):
        """Like Pages, a missing file inside the site gets the site's own 404.html, with status 404."""
        if self.request_version == "HTTP/0.9":  # the default before a request line is read: no status line
            self.request_version = "HTTP/1.0"
        page = Path(self.directory) / "404.html"
        if code != HTTPStatus.NOT_FOUND or not page.is_file():
            super().send_error(code, message, explain)
            return
        body = page.read_bytes()
        self.send_response(code, message)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def list_directory(self, path):
        """Pages never lists a folder's files; neither does the preview."""
        self.send_error(HTTPStatus.NOT_FOUND, "no index.html in this folder")
        return None

    def translate_path(self, path: str) -> str:
        path = unquote(urlsplit(path).path)
        inside = path[len(self.site_prefix) :] if path.startswith(self.site_prefix) else ""
        return super().translate_path("/" + quote(inside))  # quoted again: the parent class unquotes

    def end_headers(self):
        # A request line too long or malformed is answered before `path` is read from it.
        path = urlsplit(getattr(self, "path", "")).path
        self.send_header("Cache-Control", self.cache_policy(path))
        if self.status in FILE_STATUSES:
            self.send_header("Accept-Ranges", "bytes")
        if self.etag and self.status in (HTTPStatus.OK, HTTPStatus.PARTIAL_CONTENT, HTTPStatus.NOT_MODIFIED):
            self.send_header("ETag", self.etag)
        if not self.close_connection:  # a connection per request (SiteServer says why)
            self.send_header("Connection", "close")
        super().end_headers()

    def cache_policy(self, path: str) -> str:
        name = posixpath.basename(path)
        if HASHED_NAME.search(name) or HASHED_FOLDER.search(path) or "/runtime/pyodide-" in path:
            return IMMUTABLE
        return "no-cache"

    def log_message(self, format, *args):
        if not self.quiet:
            super().log_message(format, *args)


class SiteServer(ThreadingHTTPServer):
    """A browser that leaves mid-download (a closed tab, a cancelled fetch) is no error worth a traceback.

    A connection per request (`Connection: close`): kept alive, the ranged site's first-sight queries were
    slower in chromium, as a reply's headers and body left in two writes and Nagle's algorithm held the
    body for the delayed ACK, and TCP_NODELAY did not win it back (commit fad6bc5)."""

    # Connections a page opens at once (its data files, the runtime, the workers' downloads) wait in
    # the listen queue; the default of 5 drops some of 20 parallel clients into a 60 s retry.
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], handler, limits: ConnectionLimits = DEFAULT_LIMITS):
        self.limits = limits
        self.slots = threading.BoundedSemaphore(limits.connections)
        super().__init__(address, handler)

    def process_request(self, request, client_address):
        """A thread for the connection once fewer than `limits.connections` are served; else a 503."""
        if not self.slots.acquire(timeout=self.limits.wait_seconds):
            busy(request)
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:  # no thread started: none will give the slot back
            self.slots.release()
            raise

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def busy(connection: socket.socket) -> None:
    """Tell a client that found every connection taken to come back. What it sent so far is read
    (and dropped) first: closing over unread bytes would be a reset, which discards the reply."""
    try:
        connection.settimeout(0)
        connection.recv(65536)
    except OSError:
        pass  # nothing sent yet
    try:
        connection.settimeout(1.0)
        connection.sendall(
            b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: 0\r\n"
            b"Connection: close\r\n\r\n"
        )
    except OSError:
        pass  # gone already


def make_server(
    site_dir: Path, port: int = 8000, quiet: bool = False, limits: ConnectionLimits = DEFAULT_LIMITS
) -> ThreadingHTTPServer:
    """A server bound to 127.0.0.1 (port 0 picks a free one: see `server.server_address`)."""
    handler = partial(
        SiteHandler,
        directory=str(Path(site_dir).resolve()),
        base_url=base_url_of(site_dir),
        quiet=quiet,
        limits=limits,
    )
    try:
        return SiteServer((HOST, port), handler, limits)
    except OSError as exc:
        if exc.errno not in (errno.EADDRINUSE, errno.EACCES):
            raise
        raise PortError(
            f"cannot listen on {HOST}:{port} ({exc.strerror}); pass --port with a free port, "
            "or --port 0 to pick one"
        ) from exc


def serve_in_thread(
    site_dir: Path, port: int = 0, limits: ConnectionLimits = DEFAULT_LIMITS
) -> tuple[ThreadingHTTPServer, str]:
    """Start a quiet server in a daemon thread; return it and the site's URL. Call `.shutdown()` to stop."""
    server = make_server(site_dir, port, quiet=True, limits=limits)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, site_url(server, site_dir)


def site_url(server: ThreadingHTTPServer, site_dir: Path) -> str:
    """The site's address on `server`, with the port it is bound to (the one picked for port 0)."""
    return f"http://{HOST}:{server.server_address[1]}{base_url_of(site_dir)}"


def cmd_serve(args: argparse.Namespace) -> int:
    try:
        server = make_server(args.site, args.port)
    except PortError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"serving {args.site} at {site_url(server, args.site)} (Ctrl-C stops)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
