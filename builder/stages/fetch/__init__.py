"""Fetch stage: reading-list entries (`PaperRef`) become PDFs on local disk plus metadata (`FetchedPaper`).

Where a paper comes from, in order:

1. the cache (`<cache_dir>/papers/<id>/<version>/paper.pdf` + `meta.json`): a complete entry is never
   fetched again, so a killed build resumes where it stopped;
2. a local mirror folder (`pdf/<id>.pdf`, `meta/<id>.json`), used in place;
3. arXiv: metadata through the `arxiv` package's client (batched `id_list` queries), the PDF from
   `Result.pdf_url` with our own `requests` code (pacing, retries with backoff, resume, checks).

Version resolution: the version pinned in the reading list, else the one recorded in the lock file,
else the latest (online) or whatever the mirror / cache holds. Every problem becomes one `Failure`
for that paper; the other papers go on.

All requests to arXiv (API pages and PDFs) go through one `requests.Session` with one pacer, so
consecutive requests are at least `delay_seconds` apart (arXiv asks for 3 s).
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import logging
import os
import re
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import arxiv
import requests
from tqdm import tqdm

from builder import __version__
from builder.config import CorpusError, split_arxiv_id
from builder.models import Failure, FetchedPaper, LockEntry, PaperMeta, PaperRef

log = logging.getLogger(__name__)

USER_AGENT = f"readingroom/{__version__} (+reading list builder)"
STAGE = "fetch"
CORPUS_FILE = "corpus/readingroom.toml"
LOCK_FILE = "corpus/readingroom.lock"
MAX_RETRY_AFTER = 60.0  # seconds: a Retry-After longer than this is cut down to it
MAX_BACKOFF = 120.0  # seconds: the longest wait between two tries
EOF_WINDOW = 1024  # "%%EOF" must sit within this many bytes of the end of a PDF

_VERSION = re.compile(r"v[1-9]\d*")
_SHORT_ID = re.compile(r"^(?P<id>.+?)(?P<version>v\d+)$")

T = TypeVar("T")


# --------------------------------------------------------------------------------------------- API


@dataclass
class FetchOptions:
    cache_dir: Path  # e.g. .cache/readingroom
    mirror: Path | None = None  # folder laid out like shared/arxiv-mirror
    offline: bool = False  # use only cache (+ mirror); never touch the network
    api_url: str = "https://export.arxiv.org/api/query?{}"  # arxiv.Client.query_url_format
    delay_seconds: float = 3.0  # >= 3 s between API calls and between PDF downloads (arXiv policy)
    max_retries: int = 4  # exponential backoff on 429 / 5xx / timeouts / truncated bodies
    backoff_base: float = 2.0  # seconds; tests pass tiny values
    timeout: float = 60.0
    batch_size: int = 50  # ids per id_list API query


@dataclass
class FetchResult:
    papers: list[FetchedPaper]  # in reading-list order
    failures: list[Failure]


def fetch_papers(
    refs: Sequence[PaperRef],
    options: FetchOptions,
    locked: Mapping[str, LockEntry] | None = None,
    progress: bool = True,
) -> FetchResult:
    """Fetch every paper of the reading list; problems become `Failure`s and the rest goes on."""
    return _Fetcher(options, locked or {}).run(refs, progress)


def cache_paper_dir(cache_dir: Path, arxiv_id: str, version: str) -> Path:
    """`<cache_dir>/papers/<id with '/' replaced by '_'>/<version>`."""
    return Path(cache_dir) / "papers" / _file_id(arxiv_id) / version


def is_valid_arxiv_id(arxiv_id: str) -> bool:
    """New-style (`2005.11401`) or old-style (`hep-th/9901001`) id, without a version."""
    try:
        return split_arxiv_id(arxiv_id) == (arxiv_id, None)
    except CorpusError:
        return False


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def meta_from_result(result: arxiv.Result) -> PaperMeta:
    """Map an `arxiv.Result` to `PaperMeta`; the version comes from its entry_id."""
    short = result.get_short_id()  # "2005.11401v4" or "hep-th/9901001v1"
    match = _SHORT_ID.match(short)
    arxiv_id, version = (match["id"], match["version"]) if match else (short, "")
    comment = _clean(result.comment or "")
    return PaperMeta(
        arxiv_id=arxiv_id,
        version=version,
        title=_clean(result.title),
        authors=[_clean(a.name) for a in result.authors],
        abstract=_clean(result.summary),
        categories=list(result.categories),
        primary_category=result.primary_category or "",
        published=_iso_date(result.published),
        updated=_iso_date(result.updated),
        withdrawn="withdrawn" in comment.lower(),
        comment=comment,
        doi=(result.doi or "").strip(),
        journal_ref=_clean(result.journal_ref or ""),
    )


def meta_from_mirror(data: Mapping[str, Any], arxiv_id: str) -> PaperMeta:
    """Map a mirror's `meta/<id>.json` to `PaperMeta` (`version_date` is the date of this version)."""
    return PaperMeta(
        arxiv_id=arxiv_id,
        version=str(data.get("version") or ""),
        title=_clean(str(data.get("title") or "")),
        authors=[str(a) for a in data.get("authors") or []],
        abstract=str(data.get("abstract") or ""),
        categories=[str(c) for c in data.get("categories") or []],
        primary_category=str(data.get("primary_category") or ""),
        published=str(data.get("published") or ""),
        updated=str(data.get("version_date") or data.get("updated") or ""),
        comment=str(data.get("comment") or ""),
        doi=str(data.get("doi") or ""),
        journal_ref=str(data.get("journal_ref") or ""),
    )


# ---------------------------------------------------------------------------------------- helpers


def _file_id(arxiv_id: str) -> str:
    return arxiv_id.replace("/", "_")


def _clean(text: str) -> str:
    return " ".join(text.split())


def _iso_date(value: datetime | None) -> str:
    if value is None or value.year <= 1:  # arxiv.Result's "unknown" default is datetime.min
        return ""
    return value.date().isoformat()


def _short_error(err: BaseException) -> str:
    # requests wraps urllib3's MaxRetryError, whose `reason` (e.g. NewConnectionError) says what happened.
    reason = getattr(err.args[0], "reason", None) if err.args else None
    text = _clean(str(reason if isinstance(reason, BaseException) else err))
    text = re.sub(r"<[^<>]* object at 0x[0-9a-fA-F]+>:?\s*", "", text) or type(err).__name__
    return text if len(text) <= 160 else text[:157] + "..."


def _parse_retry_after(value: str | None) -> float | None:
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


def _write_json(path: Path, data: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _read_meta(path: Path) -> PaperMeta | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        known = {f.name for f in fields(PaperMeta)}
        return PaperMeta(**{k: v for k, v in data.items() if k in known})
    except (OSError, ValueError, TypeError) as err:
        log.warning("ignoring unreadable cache entry %s: %s", path, err)
        return None


def _pdf_problem(path: Path) -> str | None:
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
        return f"PyMuPDF cannot open the PDF ({_short_error(err)})"
    return None


def _chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    size = max(1, size)
    for start in range(0, len(items), size):
        yield items[start : start + size]


# ------------------------------------------------------------------------------------ network bits


class _TryAgain(Exception):
    """A failure worth another try (429, 5xx, connection trouble, a cut-off body)."""

    def __init__(self, message: str, retry_after: float | None = None, connection: bool = False):
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after
        self.connection = connection


class _Fatal(Exception):
    """A failure that another try will not fix (404, 400, ...)."""

    def __init__(self, message: str, status: int | None = None):
        super().__init__(message)
        self.message = message
        self.status = status


class _GaveUp(Exception):
    """Retries are spent."""

    def __init__(self, message: str, connection: bool = False):
        super().__init__(message)
        self.message = message
        self.connection = connection


class _Pacer:
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


class _ArxivSession(requests.Session):
    """The one session for every request to arXiv: shared pacing, our User-Agent, a default timeout.

    The arxiv client sends its own `user-agent` header and no timeout; both are replaced here.
    """

    def __init__(self, pacer: _Pacer, timeout: float):
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


class _ArxivClient(arxiv.Client):
    """`arxiv.Client` pointed at `api_url` and sending through our paced session."""

    def __init__(self, session: _ArxivSession, api_url: str, page_size: int, delay_seconds: float):
        # num_retries=0: retries happen in _Fetcher._retrying, which backs off exponentially and honours
        # Retry-After; the client's own retries do neither, and stacked they would multiply the tries.
        super().__init__(page_size=page_size, delay_seconds=delay_seconds, num_retries=0)
        self.query_url_format = api_url
        self._session = session  # arxiv 4.0.2 sends every API request through this attribute


# ---------------------------------------------------------------------------------------- fetcher


@dataclass
class _Wanted:
    ref: PaperRef
    version: str | None  # None: latest
    pinned_by: str  # "ref", "lock" or ""


class _Fetcher:
    def __init__(self, options: FetchOptions, locked: Mapping[str, LockEntry]):
        self.options = options
        self.locked = locked
        self.cache_dir = Path(options.cache_dir)
        self.mirror = Path(options.mirror) if options.mirror else None
        self.found: dict[str, FetchedPaper] = {}
        self.failures: list[Failure] = []
        self.network_down: str | None = None
        self._mirror_sha: dict[str, str] = {}  # pdf_sha256 from the mirror's meta json, by id
        self._session: _ArxivSession | None = None
        self._client: _ArxivClient | None = None
        self._bar: tqdm | None = None

    # -- bookkeeping

    def run(self, refs: Sequence[PaperRef], progress: bool) -> FetchResult:
        unique: list[PaperRef] = []
        seen: set[str] = set()
        for ref in refs:
            if ref.arxiv_id not in seen:
                seen.add(ref.arxiv_id)
                unique.append(ref)
        self._bar = tqdm(total=len(unique), desc="fetch", unit="paper", file=sys.stderr, disable=not progress)
        try:
            online: list[_Wanted] = []
            for ref in unique:
                try:
                    wanted = self._local(ref)
                except OSError as err:  # an unreadable cache or mirror file
                    self._fail(
                        ref.arxiv_id,
                        f"could not read the cached or mirrored copy: {_short_error(err)}",
                        "check the permissions of the cache and mirror folders",
                    )
                    continue
                if wanted is not None:
                    online.append(wanted)
            for batch in _chunks(online, self.options.batch_size):
                self._online(list(batch))
        finally:
            self._bar.close()
            if self._session is not None:
                self._session.close()
        papers = [self.found[ref.arxiv_id] for ref in unique if ref.arxiv_id in self.found]
        return FetchResult(papers=papers, failures=self.failures)

    def _done(self, arxiv_id: str) -> None:
        assert self._bar is not None
        self._bar.set_postfix_str(arxiv_id, refresh=False)
        self._bar.update(1)

    def _fail(self, arxiv_id: str, reason: str, hint: str = "") -> None:
        failure = Failure(arxiv_id=arxiv_id, stage=STAGE, reason=_clean(reason), hint=_clean(hint))
        log.info("%s", failure.line())
        self.failures.append(failure)
        self._done(arxiv_id)

    def _accept(self, ref: PaperRef, meta: PaperMeta, pdf: Path, source: str) -> None:
        """Record a paper, unless its file differs from what the lock file recorded for that version."""
        sha = sha256_file(pdf)
        lock = self.locked.get(ref.arxiv_id)
        if lock is not None and lock.version == meta.version and lock.pdf_sha256.lower() != sha:
            where = {"arxiv": "arXiv", "mirror": "the mirror", "cache": "the cache"}.get(source, source)
            self._fail(
                ref.arxiv_id,
                f"{meta.versioned_id} from {where} has sha256 {sha[:12]}…, but {LOCK_FILE} recorded "
                f"{lock.pdf_sha256[:12]}…; the paper is skipped",
                f"delete its entry from {LOCK_FILE} to accept the new file",
            )
            return
        self.found[ref.arxiv_id] = FetchedPaper(
            meta=meta, pdf_path=str(pdf.absolute()), pdf_sha256=sha, source=source, ref=ref
        )
        self._done(ref.arxiv_id)

    # -- local sources

    def _local(self, ref: PaperRef) -> _Wanted | None:
        """Serve `ref` from the cache or the mirror; return what to ask arXiv for when neither can."""
        arxiv_id = ref.arxiv_id
        if not is_valid_arxiv_id(arxiv_id):
            self._fail(
                arxiv_id,
                f"{arxiv_id!r} is not an arXiv id (expected e.g. 2005.11401 or hep-th/9901001, no version)",
                f"check the id in {CORPUS_FILE}",
            )
            return None
        if ref.version is not None and not _VERSION.fullmatch(ref.version):
            self._fail(
                arxiv_id,
                f"version {ref.version!r} is not an arXiv version (expected v1, v2, ...)",
                f"fix the pinned version in {CORPUS_FILE}",
            )
            return None
        lock = self.locked.get(arxiv_id)
        if ref.version:
            wanted = _Wanted(ref, ref.version, "ref")
        elif lock is not None and _VERSION.fullmatch(lock.version):
            wanted = _Wanted(ref, lock.version, "lock")
        else:
            wanted = _Wanted(ref, None, "")

        mirror_meta = self._mirror_meta(arxiv_id)
        if wanted.version:
            cached = self._cached(arxiv_id, wanted.version)
            if cached is not None:
                self._accept(ref, cached[0], cached[1], "cache")
                return None
            if mirror_meta is not None:
                if mirror_meta.version != wanted.version:
                    where = CORPUS_FILE if wanted.pinned_by == "ref" else LOCK_FILE
                    if wanted.pinned_by == "ref":
                        hint = (
                            f"pin the mirror's version {mirror_meta.version} in {CORPUS_FILE}, "
                            "or fetch online (without --mirror)"
                        )
                    else:
                        hint = (
                            f"delete its entry from {LOCK_FILE} to accept the mirror's version "
                            f"{mirror_meta.version}, or fetch online (without --mirror)"
                        )
                    self._fail(
                        arxiv_id,
                        f"the mirror holds {mirror_meta.version or 'an unknown version'}, "
                        f"not {wanted.version} as {where} asks",
                        hint,
                    )
                    return None
                self._from_mirror(ref, mirror_meta)
                return None
        else:
            if mirror_meta is not None:
                self._from_mirror(ref, mirror_meta)
                return None
            cached = self._latest_cached(arxiv_id)
            if cached is not None:
                self._accept(ref, cached[0], cached[1], "cache")
                return None

        if self.options.offline:
            what = f"{arxiv_id}{wanted.version}" if wanted.version else arxiv_id
            self._fail(
                arxiv_id,
                f"{what} is not in the cache and --offline was given",
                "run without --offline, or pass --mirror DIR",
            )
            return None
        return wanted

    def _cached(self, arxiv_id: str, version: str) -> tuple[PaperMeta, Path] | None:
        folder = cache_paper_dir(self.cache_dir, arxiv_id, version)
        pdf, meta_path = folder / "paper.pdf", folder / "meta.json"
        if not (pdf.is_file() and meta_path.is_file()):
            return None
        meta = _read_meta(meta_path)
        if meta is None or meta.arxiv_id != arxiv_id or meta.version != version:
            return None
        return meta, pdf

    def _latest_cached(self, arxiv_id: str) -> tuple[PaperMeta, Path] | None:
        folder = self.cache_dir / "papers" / _file_id(arxiv_id)
        if not folder.is_dir():
            return None
        versions = sorted(
            (p.name for p in folder.iterdir() if _VERSION.fullmatch(p.name)),
            key=lambda v: int(v[1:]),
            reverse=True,
        )
        for version in versions:
            cached = self._cached(arxiv_id, version)
            if cached is not None:
                return cached
        return None

    def _mirror_paths(self, arxiv_id: str) -> tuple[Path, Path] | None:
        if self.mirror is None:
            return None
        name = _file_id(arxiv_id)
        pdf, meta = self.mirror / "pdf" / f"{name}.pdf", self.mirror / "meta" / f"{name}.json"
        return (pdf, meta) if pdf.is_file() and meta.is_file() else None

    def _mirror_meta(self, arxiv_id: str) -> PaperMeta | None:
        paths = self._mirror_paths(arxiv_id)
        if paths is None:
            return None
        try:
            data = json.loads(paths[1].read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            log.warning("ignoring unreadable mirror metadata %s: %s", paths[1], err)
            return None
        self._mirror_sha[arxiv_id] = str(data.get("pdf_sha256") or "")
        return meta_from_mirror(data, arxiv_id)

    def _from_mirror(self, ref: PaperRef, meta: PaperMeta) -> None:
        paths = self._mirror_paths(ref.arxiv_id)
        assert paths is not None
        pdf = paths[0]
        expected = self._mirror_sha.get(ref.arxiv_id, "")
        if expected:
            actual = sha256_file(pdf)
            if actual != expected.lower():
                self._fail(
                    ref.arxiv_id,
                    f"the mirror's {pdf.name} has sha256 {actual[:12]}…, but its meta/{pdf.stem}.json "
                    f"says {expected[:12]}…; the mirror copy is damaged",
                    "restore the mirror's file, or fetch online (without --mirror)",
                )
                return
        self._accept(ref, meta, pdf, "mirror")

    # -- arXiv

    def _network(self) -> tuple[_ArxivSession, _ArxivClient]:
        if self._session is None or self._client is None:
            self._session = _ArxivSession(_Pacer(self.options.delay_seconds), self.options.timeout)
            self._client = _ArxivClient(
                self._session,
                self.options.api_url,
                page_size=max(1, self.options.batch_size),
                delay_seconds=self.options.delay_seconds,
            )
        return self._session, self._client

    def _retrying(self, what: str, attempt_once: Callable[[], T]) -> T:
        tries = max(0, self.options.max_retries) + 1
        last: _TryAgain | None = None
        for attempt in range(tries):
            try:
                return attempt_once()
            except _TryAgain as err:
                last = err
                if attempt + 1 >= tries:
                    break
                wait = min(self.options.backoff_base * (2**attempt), MAX_BACKOFF)
                if err.retry_after is not None:
                    wait = max(wait, min(err.retry_after, MAX_RETRY_AFTER))
                log.info("%s: %s; try %d of %d in %.1f s", what, err.message, attempt + 2, tries, wait)
                time.sleep(wait)
        assert last is not None
        raise _GaveUp(f"{last.message} (gave up after {tries} tries)", connection=last.connection)

    def _query_once(self, query_ids: list[str]) -> list[arxiv.Result]:
        session, client = self._network()
        search = arxiv.Search(id_list=query_ids, max_results=len(query_ids))
        try:
            results = list(client.results(search))
        except arxiv.HTTPError as err:
            if err.status == 429 or err.status >= 500:
                response = session.last_response
                retry_after = _parse_retry_after(
                    response.headers.get("Retry-After") if response is not None else None
                )
                raise _TryAgain(f"the arXiv API answered HTTP {err.status}", retry_after) from err
            raise _Fatal(f"the arXiv API answered HTTP {err.status}", err.status) from err
        except arxiv.UnexpectedEmptyPageError as err:
            raise _TryAgain("the arXiv API returned an unexpectedly empty page") from err
        except requests.exceptions.RequestException as err:
            raise _TryAgain(f"could not reach the arXiv API ({_short_error(err)})", connection=True) from err
        response = session.last_response
        if not results and response is not None and b"<feed" not in response.content[:4096]:
            # The client reads an unparseable page as "no results"; that must not become "not found".
            raise _TryAgain("the arXiv API answered with something that is not an Atom feed")
        return results

    def _query(self, query_ids: list[str]) -> tuple[list[arxiv.Result], dict[str, tuple[str, str]]]:
        """Results for `query_ids`, and (reason, hint) for each query id that could not be asked."""
        retry_hint = (
            "check the network and run again later (finished papers stay cached), or pass --mirror DIR"
        )
        if self.network_down:
            return [], {q: (self.network_down, retry_hint) for q in query_ids}
        try:
            what = f"arXiv API query for {len(query_ids)} id(s)"
            return self._retrying(what, lambda: self._query_once(query_ids)), {}
        except _Fatal as err:
            if len(query_ids) > 1:  # one bad id must not sink its whole batch: ask one by one
                results: list[arxiv.Result] = []
                errors: dict[str, tuple[str, str]] = {}
                for one in query_ids:
                    got, bad = self._query([one])
                    results += got
                    errors.update(bad)
                return results, errors
            return [], {
                query_ids[0]: (f"{err.message}, which rejects the query", f"check the id in {CORPUS_FILE}")
            }
        except _GaveUp as err:
            if err.connection:
                self.network_down = f"arXiv was unreachable earlier in this run: {err.message}"
            return [], {q: (err.message, retry_hint) for q in query_ids}

    def _online(self, batch: list[_Wanted]) -> None:
        query_ids = [w.ref.arxiv_id + (w.version or "") for w in batch]
        results, errors = self._query(query_ids)
        by_id: dict[str, tuple[PaperMeta, str | None]] = {}
        for result in results:
            meta = meta_from_result(result)
            by_id.setdefault(meta.arxiv_id, (meta, result.pdf_url))
        for wanted, query_id in zip(batch, query_ids, strict=True):
            arxiv_id = wanted.ref.arxiv_id
            if query_id in errors:
                reason, hint = errors[query_id]
                self._fail(arxiv_id, f"asking arXiv about {query_id} failed: {reason}", hint)
                continue
            hit = by_id.get(arxiv_id)
            if hit is None or (wanted.version and hit[0].version != wanted.version):
                if wanted.pinned_by == "lock":
                    hint = f"check the id in {CORPUS_FILE}, or delete its entry from {LOCK_FILE}"
                elif wanted.pinned_by == "ref":
                    hint = f"check the id and its pinned version in {CORPUS_FILE}"
                else:
                    hint = f"check the id in {CORPUS_FILE}"
                self._fail(arxiv_id, f"{query_id} not found on arXiv", hint)
                continue
            meta, pdf_url = hit
            if meta.withdrawn:
                self._fail(
                    arxiv_id,
                    f"{meta.versioned_id} is withdrawn on arXiv (comment: {meta.comment}); not downloaded",
                    f"remove it from {CORPUS_FILE}, or pin an earlier version there",
                )
                continue
            try:
                self._download(wanted.ref, meta, pdf_url)
            except OSError as err:
                self._fail(
                    arxiv_id,
                    f"could not store {meta.versioned_id} in the cache: {_short_error(err)}",
                    f"check free space and permissions of {self.cache_dir}",
                )

    def _download(self, ref: PaperRef, meta: PaperMeta, pdf_url: str | None) -> None:
        folder = cache_paper_dir(self.cache_dir, meta.arxiv_id, meta.version)
        folder.mkdir(parents=True, exist_ok=True)
        pdf, part = folder / "paper.pdf", folder / "paper.pdf.part"
        url = pdf_url or meta.pdf_url
        url = re.sub(r"^http://(export\.)?arxiv\.org/", "https://arxiv.org/", url)
        # paper.pdf without meta.json: a run that died between the two writes; the PDF was checked.
        if not pdf.is_file():
            if self.network_down:
                self._fail(
                    ref.arxiv_id,
                    f"{meta.versioned_id} was not downloaded: {self.network_down}",
                    "run again later; finished papers stay cached",
                )
                return
            try:
                self._retrying(f"download of {meta.versioned_id}", lambda: self._download_once(url, part))
            except _Fatal as err:
                self._fail(
                    ref.arxiv_id,
                    f"downloading {meta.versioned_id} failed: {err.message}",
                    "check the paper on arxiv.org; run again later if it is a temporary problem",
                )
                return
            except _GaveUp as err:
                if err.connection:
                    self.network_down = f"arXiv was unreachable earlier in this run: {err.message}"
                self._fail(
                    ref.arxiv_id,
                    f"downloading {meta.versioned_id} failed: {err.message}",
                    "run again later: a partial download resumes, finished papers stay cached",
                )
                return
            os.replace(part, pdf)
        _write_json(folder / "meta.json", asdict(meta))  # after the PDF: both present = complete
        self._accept(ref, meta, pdf, "arxiv")

    def _download_once(self, url: str, part: Path) -> None:
        """One try at getting `url` into `part` (resuming a leftover `part`); raises _TryAgain/_Fatal."""
        session, _ = self._network()
        offset = part.stat().st_size if part.is_file() else 0
        headers = {"Range": f"bytes={offset}-"} if offset else {}
        try:
            response = session.get(url, headers=headers, stream=True)
        except requests.exceptions.RequestException as err:
            raise _TryAgain(f"could not reach {url} ({_short_error(err)})", connection=True) from err
        try:
            expected = self._receive(response, url, part, offset)
        finally:
            response.close()
            session.pacer.mark()  # the body has been read: the pause counts from now
        size = part.stat().st_size
        if expected is not None and size != expected:
            if size > expected:
                part.unlink()
            raise _TryAgain(f"the download is incomplete ({size} of {expected} bytes)")
        problem = _pdf_problem(part)
        if problem is not None:
            # A prefix of a real PDF can be resumed; anything else is thrown away.
            if not (problem.startswith("the PDF is truncated") and expected is None):
                part.unlink()
            raise _TryAgain(problem)

    def _receive(self, response: requests.Response, url: str, part: Path, offset: int) -> int | None:
        """Write the body to `part`; return the complete file size the server announced (None: unknown)."""
        status = response.status_code
        if status == 416 and offset:  # the leftover is no prefix the server knows: start over
            part.unlink()
            raise _TryAgain("the server refused to resume the partial download", retry_after=0)
        if status == 429 or status >= 500:
            raise _TryAgain(
                f"{url} answered HTTP {status}", _parse_retry_after(response.headers.get("Retry-After"))
            )
        if status not in (200, 206):
            raise _Fatal(f"{url} answered HTTP {status}", status)
        encoded = response.headers.get("Content-Encoding", "identity").lower() not in ("", "identity")
        mode = "wb"
        expected: int | None = None
        if status == 206:
            match = re.fullmatch(
                r"\s*bytes\s+(\d+)-(\d+)/(\d+)\s*", response.headers.get("Content-Range", "")
            )
            if not match or int(match[1]) != offset:
                part.unlink(missing_ok=True)
                raise _TryAgain("the server resumed at the wrong offset", retry_after=0)
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
            raise _TryAgain(f"the download was cut off after {size} bytes ({_short_error(err)})") from err
        return expected
