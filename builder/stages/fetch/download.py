"""Every request to arXiv, API pages and PDFs alike: one paced session, retries with backoff, and
PDF downloads that resume and are checked before they count.

Consecutive requests are at least `delay_seconds` apart (arXiv asks for 3 s), counted from the end of
the previous one. A 429, a 5xx, a dropped connection or a cut-off body is tried again with exponential
backoff (and at least the server's Retry-After); other answers are final.
"""

from __future__ import annotations

import email.utils
import logging
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import requests

from builder import __version__
from builder.stages.fetch.sources import clean

log = logging.getLogger(__name__)

USER_AGENT = f"readingroom/{__version__} (+reading list builder)"
MAX_RETRY_AFTER = 60.0  # seconds: a Retry-After longer than this is cut down to it
MAX_BACKOFF = 120.0  # seconds: the longest wait between two tries
EOF_WINDOW = 1024  # "%%EOF" must sit within this many bytes of the end of a PDF

T = TypeVar("T")


class TryAgain(Exception):
    """A failure worth another try (429, 5xx, connection trouble, a cut-off body)."""

    def __init__(self, message: str, retry_after: float | None = None, connection: bool = False):
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after
        self.connection = connection


class Fatal(Exception):
    """A failure that another try will not fix (404, 400, ...)."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.message = message
        self.status = status


class GaveUp(Exception):
    """Retries are spent."""

    def __init__(self, message: str, connection: bool = False):
        super().__init__(message)
        self.message = message
        self.connection = connection


def short_error(err: BaseException) -> str:
    # requests wraps urllib3's MaxRetryError, whose `reason` (e.g. NewConnectionError) says what happened.
    reason = getattr(err.args[0], "reason", None) if err.args else None
    text = clean(str(reason if isinstance(reason, BaseException) else err))
    text = re.sub(r"<[^<>]* object at 0x[0-9a-fA-F]+>:?\s*", "", text) or type(err).__name__
    return text if len(text) <= 160 else text[:157] + "..."


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date); None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def pdf_problem(path: Path) -> str | None:
    """Why the file at `path` is not a complete PDF, or None when it is."""
    size = path.stat().st_size
    with open(path, "rb") as fh:
        head = fh.read(5)
        fh.seek(max(0, size - EOF_WINDOW))
        tail = fh.read()
    if not head.startswith(b"%PDF-"):
        return "the body is not a PDF (no %PDF- header)"
    if b"%%EOF" not in tail:
        return f"the PDF is truncated (no %%EOF in its last {EOF_WINDOW} bytes; {size} bytes)"
    import pymupdf

    try:
        with pymupdf.open(str(path), filetype="pdf") as doc:
            if doc.page_count < 1:
                return "the PDF has no pages"
    except Exception as err:  # pymupdf raises its own and RuntimeError-like types
        return f"PyMuPDF cannot open the PDF ({short_error(err)})"
    return None


class Pacer:
    """Keeps consecutive requests `delay` seconds apart, counted from the end of the previous one."""

    def __init__(self, delay: float):
        self.delay = max(0.0, delay)
        self._last: float | None = None

    def wait(self) -> None:
        if self._last is None:
            return
        remaining = self._last + self.delay - time.monotonic()
        if remaining > 0:
            time.sleep(remaining)

    def mark(self) -> None:
        self._last = time.monotonic()


class ArxivSession(requests.Session):
    """The one session for every request to arXiv: shared pacing, our User-Agent, a default timeout.

    The arxiv client sends its own `user-agent` header and no timeout; both are replaced here.
    """

    def __init__(self, pacer: Pacer, timeout: float):
        super().__init__()
        self.pacer = pacer
        self.timeout = timeout
        self.headers["User-Agent"] = USER_AGENT
        self.last_response: requests.Response | None = None

    def request(self, method: str, url: str, *args: Any, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        headers = {k: v for k, v in (kwargs.pop("headers", None) or {}).items() if k.lower() != "user-agent"}
        kwargs["headers"] = headers
        if kwargs.get("timeout") is None:
            kwargs["timeout"] = self.timeout
        self.pacer.wait()
        self.last_response = None
        try:
            response = super().request(method, url, *args, **kwargs)
        finally:
            self.pacer.mark()
        self.last_response = response
        return response


class Network:
    """The run's one way to arXiv: a lazily opened paced session, the retry policy, and the memory that
    arXiv was unreachable (after which nothing more is tried in this run)."""

    def __init__(self, delay_seconds: float, timeout: float, max_retries: int, backoff_base: float):
        self.delay_seconds = delay_seconds
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.down: str | None = None  # why arXiv counts as unreachable for the rest of the run
        self._session: ArxivSession | None = None

    @property
    def session(self) -> ArxivSession:
        if self._session is None:
            self._session = ArxivSession(Pacer(self.delay_seconds), self.timeout)
        return self._session

    def close(self) -> None:
        if self._session is not None:
            self._session.close()

    def gave_up(self, err: GaveUp) -> None:
        if err.connection:
            self.down = f"arXiv was unreachable earlier in this run: {err.message}"

    def retrying(self, what: str, attempt_once: Callable[[], T]) -> T:
        tries = max(0, self.max_retries) + 1
        last: TryAgain | None = None
        for attempt in range(tries):
            try:
                return attempt_once()
            except TryAgain as err:
                last = err
                if attempt + 1 >= tries:
                    break
                wait = min(self.backoff_base * (2**attempt), MAX_BACKOFF)
                if err.retry_after is not None:
                    wait = max(wait, min(err.retry_after, MAX_RETRY_AFTER))
                log.info("%s: %s; try %d of %d in %.1f s", what, err.message, attempt + 2, tries, wait)
                time.sleep(wait)
        assert last is not None
        raise GaveUp(f"{last.message} (gave up after {tries} tries)", connection=last.connection)

    def download(self, what: str, url: str, part: Path) -> None:
        """`url` into `part`, resuming a leftover `part`, tried again as the policy allows;
        raises Fatal or GaveUp. On success `part` holds a complete, openable PDF."""
        self.retrying(f"download of {what}", lambda: self._download_once(url, part))

    def _download_once(self, url: str, part: Path) -> None:
        """One try at getting `url` into `part` (resuming a leftover `part`); raises TryAgain/Fatal."""
        session = self.session
        offset = part.stat().st_size if part.is_file() else 0
        headers = {"Range": f"bytes={offset}-"} if offset else {}
        try:
            response = session.get(url, headers=headers, stream=True)
        except requests.exceptions.RequestException as err:
            raise TryAgain(f"could not reach {url} ({short_error(err)})", connection=True) from err
        try:
            expected = _receive(response, url, part, offset)
        finally:
            response.close()
            session.pacer.mark()  # the body has been read: the pause counts from now
        size = part.stat().st_size
        if expected is not None and size != expected:
            if size > expected:
                part.unlink()
            raise TryAgain(f"the download is incomplete ({size} of {expected} bytes)")
        problem = pdf_problem(part)
        if problem is not None:
            # A prefix of a real PDF can be resumed; anything else is thrown away.
            if not (problem.startswith("the PDF is truncated") and expected is None):
                part.unlink()
            raise TryAgain(problem)


def _receive(response: requests.Response, url: str, part: Path, offset: int) -> int | None:
    """Write the body to `part`; return the complete file size the server announced (None: unknown)."""
    status = response.status_code
    if status == 416 and offset:  # the leftover is no prefix the server knows: start over
        part.unlink()
        raise TryAgain("the server refused to resume the partial download", retry_after=0)
    if status == 429 or status >= 500:
        raise TryAgain(
            f"{url} answered HTTP {status}", parse_retry_after(response.headers.get("Retry-After"))
        )
    if status not in (200, 206):
        raise Fatal(f"{url} answered HTTP {status}", status)
    encoded = response.headers.get("Content-Encoding", "identity").lower() not in ("", "identity")
    mode = "wb"
    expected: int | None = None
    if status == 206:
        match = re.fullmatch(r"\s*bytes\s+(\d+)-(\d+)/(\d+)\s*", response.headers.get("Content-Range", ""))
        if not match or int(match[1]) != offset:
            part.unlink(missing_ok=True)
            raise TryAgain("the server resumed at the wrong offset", retry_after=0)
        mode, expected = "ab", int(match[3])
    else:
        length = response.headers.get("Content-Length")
        if length and length.isdigit() and not encoded:
            expected = int(length)
    if encoded:
        expected = None
    # Keep what did arrive when the connection drops early: urllib3 would discard the last block
    # and raise; the size check in _download_once notices the short body and the next try resumes.
    if hasattr(response.raw, "enforce_content_length"):
        response.raw.enforce_content_length = False
    try:
        with open(part, mode) as fh:
            for block in response.iter_content(chunk_size=1 << 16):
                fh.write(block)
    except requests.exceptions.RequestException as err:
        size = part.stat().st_size if part.exists() else 0
        raise TryAgain(f"the download was cut off after {size} bytes ({short_error(err)})") from err
    return expected
