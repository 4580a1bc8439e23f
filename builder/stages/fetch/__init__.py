"""Fetch stage: reading-list entries (`PaperRef`) become PDFs on local disk plus metadata (`FetchedPaper`).

Where a paper comes from, in order:

1. the cache (`<cache_dir>/papers/<id>/<version>/paper.pdf` + `meta.json`): a complete entry is never
   fetched again, so a killed build resumes where it stopped;
2. a local mirror folder (`pdf/<id>.pdf`, `meta/<id>.json`), used in place; offline, a folder of
   PDFs given with `--pdfs`, with metadata from a file beside them or as page 1 prints it (`folder.py`);
3. arXiv: metadata through the `arxiv` package's client (batched `id_list` queries), the PDF from a
   folder of PDFs or of arXiv's bulk-data tar archives where one is given (`archive.py`, which checks
   it first: a bad one is a failure, not downloaded instead), else from `Result.pdf_url` with our own
   `requests` code (pacing, retries with backoff, resume, checks).

Version: the reading list's pin, else the lock file's, else the latest (online) or what the mirror or
cache holds. Every problem becomes one `Failure` for that paper; the other papers go on. This module
decides (versions, batching, the lock check, failures and their hints); `sources.py` (cache, mirror),
`arxiv_api.py` (metadata) and `download.py` (paced, retrying, resumable) do the I/O.
"""

from __future__ import annotations

import logging
import os
import re
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from tqdm import tqdm

from builder.config import CorpusError, lock_path_for, split_arxiv_id
from builder.models import DEFAULT_LIMITS, Failure, FetchedPaper, LockEntry, PaperMeta, PaperRef, ParseLimits
from builder.paths import DEFAULT_CORPUS
from builder.scratch import exclusive
from builder.stages.fetch.archive import MAX_PDF_MB, FolderError, PdfFolder
from builder.stages.fetch.arxiv_api import ArxivApi, meta_from_result
from builder.stages.fetch.download import Fatal, GaveUp, Network, short_error
from builder.stages.fetch.sources import (
    VERSION_RE,
    Cache,
    MetadataError,
    Mirror,
    MirrorEntry,
    cache_paper_dir,
    clean,
    sha256_file,
)

if TYPE_CHECKING:
    from builder.stages.fetch.folder import OfflineFolder

__all__ = ["FetchOptions", "FetchResult", "LockEntry", "cache_paper_dir", "fetch_papers", "is_valid_arxiv_id"]

log = logging.getLogger(__name__)

STAGE = "fetch"

T = TypeVar("T")


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
    corpus_file: Path = field(default=DEFAULT_CORPUS)  # named in hints; its lock file sits beside it
    # Ask arXiv for the latest version of every paper the corpus file does not pin, instead of taking
    # the lock file's (or the cache's, or the mirror's): a list that tracks new versions. Not offline.
    refresh: bool = False
    # PDFs taken instead of downloaded: `<id>vN.pdf` files or tar archives of them (arXiv's bulk data).
    pdf_folder: Path | None = None
    max_pdf_mb: int = MAX_PDF_MB  # the most one PDF from `pdf_folder` may hold, unpacked
    # Time and memory for reading a PDF from `pdf_folder` before it is taken (its pages, its stamp and,
    # offline, its title and authors): the build's parse limits.
    check_limits: ParseLimits = DEFAULT_LIMITS

    @property
    def lock_file(self) -> Path:
        return lock_path_for(Path(self.corpus_file))


@dataclass
class FetchResult:
    papers: list[FetchedPaper]  # in reading-list order
    failures: list[Failure]
    # arXiv id -> where a paper built offline from the --pdfs folder took its PDF and metadata from
    sources: dict[str, str] = field(default_factory=dict)


def fetch_papers(
    refs: Sequence[PaperRef],
    options: FetchOptions,
    locked: Mapping[str, LockEntry] | None = None,
    progress: bool = True,
) -> FetchResult:
    """Fetch every paper of the reading list; problems become `Failure`s and the rest goes on."""
    return _Fetcher(options, locked or {}).run(refs, progress)


def is_valid_arxiv_id(arxiv_id: str) -> bool:
    """New-style (`2005.11401`) or old-style (`hep-th/9901001`) id, without a version."""
    try:
        return split_arxiv_id(arxiv_id) == (arxiv_id, None)
    except CorpusError:
        return False


def _chunks(items: Sequence[T], size: int) -> Iterator[Sequence[T]]:
    size = max(1, size)
    for start in range(0, len(items), size):
        yield items[start : start + size]


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
        self.corpus_file = Path(options.corpus_file)
        self.lock_file = options.lock_file
        self.cache = Cache(Path(options.cache_dir))
        self.mirror = Mirror(Path(options.mirror)) if options.mirror else None
        self.pdfs = (
            PdfFolder(Path(options.pdf_folder), options.max_pdf_mb, options.check_limits)
            if options.pdf_folder
            else None
        )
        self.folder: OfflineFolder | None = None
        if self.pdfs is not None and options.offline:  # imported here: the folder's reader loads the parser
            from builder.stages.fetch.folder import OfflineFolder

            self.folder = OfflineFolder(self.pdfs, self.cache, options.check_limits)
        self.from_folder: list[_Wanted] = []  # what the folder is asked for, once the cache could not serve
        self.sources: dict[str, str] = {}
        self.network = Network(
            options.delay_seconds, options.timeout, options.max_retries, options.backoff_base
        )
        self.arxiv = ArxivApi(self.network, options.api_url, options.batch_size, self.corpus_file)
        self.found: dict[str, FetchedPaper] = {}
        self.failures: list[Failure] = []
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
                        f"could not read the cached or mirrored copy: {short_error(err)}",
                        "check the permissions of the cache and mirror folders",
                    )
                    continue
                if wanted is not None:
                    online.append(wanted)
            if self.from_folder:
                self._from_folder(self.from_folder)
            for batch in _chunks(online, self.options.batch_size):
                self._online(list(batch))
        finally:
            self._bar.close()
            self.network.close()
        papers = [self.found[ref.arxiv_id] for ref in unique if ref.arxiv_id in self.found]
        return FetchResult(papers=papers, failures=self.failures, sources=self.sources)

    def _done(self, arxiv_id: str) -> None:
        assert self._bar is not None
        self._bar.set_postfix_str(arxiv_id, refresh=False)
        self._bar.update(1)

    def _fail(self, arxiv_id: str, reason: str, hint: str = "") -> None:
        failure = Failure(arxiv_id=arxiv_id, stage=STAGE, reason=clean(reason), hint=clean(hint))
        log.info("%s", failure.line())
        self.failures.append(failure)
        self._done(arxiv_id)

    def _accept(self, ref: PaperRef, meta: PaperMeta, pdf: Path, source: str) -> None:
        """Record a paper, unless its file differs from what the lock file recorded for that version."""
        sha = sha256_file(pdf)
        lock = self.locked.get(ref.arxiv_id)
        if lock is not None and lock.version == meta.version and lock.pdf_sha256.lower() != sha:
            where = {"arxiv": "arXiv", "mirror": "the mirror", "cache": "the cache"}.get(source, source)
            where = str(self.options.pdf_folder) if source == "pdfs" else where
            self._fail(
                ref.arxiv_id,
                f"{meta.versioned_id} from {where} has sha256 {sha[:12]}…, but {self.lock_file} recorded "
                f"{lock.pdf_sha256[:12]}…; the paper is skipped",
                f"delete its entry from {self.lock_file} to accept the new file",
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
        if not self._well_formed(ref):
            return None
        wanted = self._wanted(ref)
        refresh = self.options.refresh and not self.options.offline

        mirror_problem = None
        try:
            mirrored = self.mirror.entry(arxiv_id) if self.mirror is not None else None
        except MetadataError as err:
            mirrored, mirror_problem = None, str(err)
        if wanted.version:
            cached = self.cache.get(arxiv_id, wanted.version)
            if cached is not None:
                self._accept(ref, cached[0], cached[1], "cache")
                return None
            if mirrored is not None:
                if mirrored.meta.version != wanted.version:
                    self._fail(arxiv_id, *self._mirror_version_mismatch(wanted, mirrored.meta.version))
                    return None
                self._from_mirror(ref, mirrored)
                return None
        elif not refresh:  # a refresh asks arXiv which version is the latest; its PDF may be cached
            if mirrored is not None:
                self._from_mirror(ref, mirrored)
                return None
            cached = self.cache.latest(arxiv_id)
            if cached is not None:
                self._accept(ref, cached[0], cached[1], "cache")
                return None

        if mirror_problem:
            self._fail(
                arxiv_id,
                mirror_problem,
                "correct that field in the mirror's file, or fetch online (without --mirror); "
                "the other papers were built",
            )
            return None
        if self.folder is not None:
            self.from_folder.append(wanted)
            return None
        if self.options.offline:
            what = f"{arxiv_id}{wanted.version}" if wanted.version else arxiv_id
            damaged = self.cache.problems.get(arxiv_id)
            self._fail(
                arxiv_id,
                f"{damaged}; --offline was given"
                if damaged
                else f"{what} is not in the cache and --offline was given",
                "run without --offline, or pass --mirror DIR",
            )
            return None
        return wanted

    def _well_formed(self, ref: PaperRef) -> bool:
        """Whether the reading list's id and pinned version can be arXiv's; a Failure when not."""
        arxiv_id = ref.arxiv_id
        if not is_valid_arxiv_id(arxiv_id):
            self._fail(
                arxiv_id,
                f"{arxiv_id!r} is not an arXiv id (expected e.g. 2005.11401 or hep-th/9901001, no version)",
                f"check the id in {self.corpus_file}",
            )
            return False
        if ref.version is not None and not VERSION_RE.fullmatch(ref.version):
            self._fail(
                arxiv_id,
                f"version {ref.version!r} is not an arXiv version (expected v1, v2, ...)",
                f"fix the pinned version in {self.corpus_file}",
            )
            return False
        return True

    def _wanted(self, ref: PaperRef) -> _Wanted:
        """The version the corpus file pins, else the lock file's (unless refreshing), else the latest."""
        lock = self.locked.get(ref.arxiv_id)
        refresh = self.options.refresh and not self.options.offline
        if ref.version:
            return _Wanted(ref, ref.version, "ref")
        if lock is not None and VERSION_RE.fullmatch(lock.version) and not refresh:
            return _Wanted(ref, lock.version, "lock")
        return _Wanted(ref, None, "")

    def _mirror_version_mismatch(self, wanted: _Wanted, mirror_version: str) -> tuple[str, str]:
        where = self.corpus_file if wanted.pinned_by == "ref" else self.lock_file
        if wanted.pinned_by == "ref":
            hint = (
                f"pin the mirror's version {mirror_version} in {self.corpus_file}, "
                "or fetch online (without --mirror)"
            )
        else:
            hint = (
                f"delete its entry from {self.lock_file} to accept the mirror's version "
                f"{mirror_version}, or fetch online (without --mirror)"
            )
        reason = (
            f"the mirror holds {mirror_version or 'an unknown version'}, not {wanted.version} as {where} asks"
        )
        return reason, hint

    def _from_mirror(self, ref: PaperRef, entry: MirrorEntry) -> None:
        damage = Mirror.damage(entry)
        if damage is not None:
            self._fail(ref.arxiv_id, damage, "restore the mirror's file, or fetch online (without --mirror)")
            return
        self._accept(ref, entry.meta, entry.pdf, "mirror")

    def _from_folder(self, wanted: list[_Wanted]) -> None:
        """Offline with --pdfs: the papers from the folder (metadata from a file beside each, or page 1)."""
        from builder.stages.fetch.folder import SOURCE, Asked, FolderProblem

        assert self.folder is not None
        pinned = {"ref": str(self.corpus_file), "lock": str(self.lock_file)}
        asked = [Asked(w.ref.arxiv_id, w.version, pinned.get(w.pinned_by, "")) for w in wanted]
        for want, found in zip(wanted, self.folder.papers(asked), strict=True):
            arxiv_id = want.ref.arxiv_id
            if isinstance(found, FolderProblem):
                self._fail(arxiv_id, found.reason, found.hint)
                continue
            self._accept(want.ref, found.meta, found.pdf, SOURCE)
            if arxiv_id in self.found:
                self.sources[arxiv_id] = f"{found.meta.versioned_id}: {found.said}"

    # -- arXiv

    def _online(self, batch: list[_Wanted]) -> None:
        query_ids = [w.ref.arxiv_id + (w.version or "") for w in batch]
        results, errors = self.arxiv.query(query_ids)
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
                    hint = f"check the id in {self.corpus_file}, or delete its entry from {self.lock_file}"
                elif wanted.pinned_by == "ref":
                    hint = f"check the id and its pinned version in {self.corpus_file}"
                else:
                    hint = f"check the id in {self.corpus_file}"
                self._fail(arxiv_id, f"{query_id} not found on arXiv", hint)
                continue
            meta, pdf_url = hit
            if meta.withdrawn:
                self._fail(
                    arxiv_id,
                    f"{meta.versioned_id} is withdrawn on arXiv (comment: {meta.comment}); not downloaded",
                    f"remove it from {self.corpus_file}, or pin an earlier version there",
                )
                continue
            try:
                self._download(wanted.ref, meta, pdf_url)
            except OSError as err:
                self._fail(
                    arxiv_id,
                    f"could not store {meta.versioned_id} in the cache: {short_error(err)}",
                    f"check free space and permissions of {self.cache.cache_dir}",
                )

    def _download(self, ref: PaperRef, meta: PaperMeta, pdf_url: str | None) -> None:
        folder = self.cache.paper_dir(meta.arxiv_id, meta.version)
        folder.mkdir(parents=True, exist_ok=True)
        pdf, part = folder / "paper.pdf", folder / "paper.pdf.part"
        url = pdf_url or meta.pdf_url
        url = re.sub(r"^http://(export\.)?arxiv\.org/", "https://arxiv.org/", url)
        # One build downloads a paper at a time (another build sharing the cache waits, then finds it);
        # the leftover `part` of a killed run is resumed, so it cannot be per process.
        with exclusive(folder / "paper.pdf.lock"):
            if not self._downloaded(ref, meta, url, pdf, part):
                return
        Cache.complete(folder, meta)  # after the PDF: both present = complete
        self._accept(ref, meta, pdf, "arxiv")

    def _downloaded(self, ref: PaperRef, meta: PaperMeta, url: str, pdf: Path, part: Path) -> bool:
        """`pdf` present, downloaded now if needed; False (after a failure line) when it could not be."""
        # paper.pdf without meta.json: a run that died between the two writes; the PDF was checked.
        if not pdf.is_file():
            if self.pdfs is not None:
                try:
                    taken = self.pdfs.copy(meta.versioned_id, part)
                except FolderError as err:
                    self._fail(ref.arxiv_id, err.reason, err.hint)
                    return False
                if taken:
                    os.replace(part, pdf)
                    return True
            if self.network.down:
                self._fail(
                    ref.arxiv_id,
                    f"{meta.versioned_id} was not downloaded: {self.network.down}",
                    "run again later; finished papers stay cached",
                )
                return False
            try:
                self.network.download(meta.versioned_id, url, part)
            except Fatal as err:
                self._fail(
                    ref.arxiv_id,
                    f"downloading {meta.versioned_id} failed: {err.message}",
                    "check the paper on arxiv.org; run again later if it is a temporary problem",
                )
                return False
            except GaveUp as err:
                self.network.gave_up(err)
                self._fail(
                    ref.arxiv_id,
                    f"downloading {meta.versioned_id} failed: {err.message}",
                    "run again later: a partial download resumes, finished papers stay cached",
                )
                return False
            os.replace(part, pdf)
        return True
