"""A folder of PDFs a build takes instead of downloading them: loose `<id>vN.pdf` files, or tar archives
of them as arXiv's bulk data ships them (`arXiv_pdf_2101_001.tar` holding `2101/2101.00001v1.pdf`), at
any depth, plain or gzipped (`.tar.gz`, `.tgz`, members `….pdf.gz`).

arXiv asks bulk users to take PDFs from those archives rather than from its API; a 10,000-paper list
then needs only its metadata from the API (batched: minutes, not the 8 hours of paced downloads).
The folder is indexed once per build, by file names alone; a PDF found there is copied into the
cache as a download would be, so later builds, and Ray workers, need only the cache.

A file from the folder is checked before it enters the cache, since the cache is read first and a bad
copy there would stay: it is read to its end (so gzip checks its CRC) and no further than a size cap,
it must open with pages, and arXiv's stamp on its first page, where it has one, must name the id and
version its file name does. Whatever fails is one failure line for that paper, and the paper is not
downloaded instead: the folder was given to be used, and its owner is the one who can mend it.
Entries already in the cache are not checked again (that would cost every build a process per paper):
an older build's entry that does not open fails in the parse stage, whose line says to delete it, but
one holding another paper's PDF stays until it is deleted.
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import logging
import lzma
import re
import tarfile
import zlib
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from builder.models import DEFAULT_LIMITS, ParseLimits
from builder.stages.parse.bounded import run_bounded
from builder.stages.parse.identity import Inspection, inspect_pdf

log = logging.getLogger(__name__)

PDF_NAME = re.compile(r"(?P<stem>[^/]+?)(?P<version>v[1-9]\d*)\.pdf(?P<gz>\.gz)?")
NEW_STYLE = re.compile(r"\d{4}\.\d{4,5}")
OLD_STYLE = re.compile(r"(?P<archive>[a-z][a-z-]*(?:\.[A-Z]{2})?)[_/]?(?P<number>\d{7})")
TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz")
# The most one PDF from the folder may hold, unpacked. The largest of ../shared/arxiv-mirror's 112 PDFs
# is 3.7 MB, so no paper comes near; a gzip bomb (1 MB that unpacks to 1 GiB) stops here, unwritten.
MAX_PDF_MB = 200
EOF_WINDOW = 2048  # "%%EOF" within this many bytes of the end, as the parse stage asks
# What reading a tar archive or gzip data raises when they are damaged (BadGzipFile is an OSError).
_UNREADABLE = (tarfile.TarError, OSError, EOFError, zlib.error, lzma.LZMAError)
_COMPRESSED = (gzip.GzipFile, bz2.BZ2File, lzma.LZMAFile)
_BLOCK = 1 << 20


def versioned_id(file_name: str) -> str | None:
    """`2101.00001v1` from `2101.00001v1.pdf`; `hep-th/9901001v2` from `hep-th9901001v2.pdf` (arXiv's
    bulk-data spelling) or `hep-th_9901001v2.pdf` (the cache's); None for any other name."""
    match = PDF_NAME.fullmatch(file_name)
    if match is None:
        return None
    stem, version = match["stem"], match["version"]
    if NEW_STYLE.fullmatch(stem):
        return stem + version
    old = OLD_STYLE.fullmatch(stem)
    return f"{old['archive']}/{old['number']}{version}" if old else None


class FolderError(Exception):
    """A PDF the folder holds for a paper that cannot be used; `reason` names the file."""

    def __init__(self, reason: str, hint: str):
        super().__init__(reason, hint)
        self.reason = reason
        self.hint = hint


@dataclass(frozen=True)
class Located:
    """Where one version's PDF lies: a loose file, or a member of a tar archive."""

    path: Path
    member: str | None  # None: `path` is the PDF itself
    gzipped: bool

    def __str__(self) -> str:
        return str(self.path) if self.member is None else f"{self.member} in {self.path}"


class PdfFolder:
    """The PDFs under `folder`, by versioned id (indexed on first use)."""

    def __init__(self, folder: Path, max_mb: int = MAX_PDF_MB, limits: ParseLimits = DEFAULT_LIMITS):
        self.folder = Path(folder)
        self.max_bytes = max_mb * 1024 * 1024
        self.limits = limits  # for reading a PDF's first page, in a process of its own
        self._index: dict[str, Located] | None = None
        self._others: dict[str, list[Located]] = {}  # later files (in path order) for an id found
        self._damaged: dict[Path, str] = {}  # archives that could not be read to their end: why

    def index(self) -> dict[str, Located]:
        if self._index is None:
            self._index = {}
            for path in sorted(self.folder.rglob("*")):
                if not path.is_file():
                    continue
                if path.name.endswith(TAR_SUFFIXES):
                    self._index_archive(path)
                elif (found := versioned_id(path.name)) is not None:
                    self._add(found, Located(path, None, path.name.endswith(".gz")))
        return self._index

    def _add(self, versioned: str, located: Located) -> None:
        assert self._index is not None
        if versioned in self._index:
            self._others.setdefault(versioned, []).append(located)
        else:
            self._index[versioned] = located

    def _index_archive(self, path: Path) -> None:
        try:
            with tarfile.open(path, "r:*") as archive:
                for member in archive:
                    found = versioned_id(member.name.rsplit("/", 1)[-1]) if member.isfile() else None
                    if found is not None:
                        self._add(found, Located(path, member.name, member.name.endswith(".gz")))
                _read_to_end(archive)
        except _UNREADABLE as error:  # one bad archive costs only its papers
            self._damaged[path] = _one_line(error)
            log.warning("skipping %s: not a readable tar archive (%s)", path, _one_line(error))

    def copy(self, versioned: str, target: Path) -> bool:
        """Write the PDF of `versioned` (e.g. 2101.00001v1) to `target`; False when the folder has no
        such PDF. FolderError when what it has cannot be used; `target` is then removed."""
        located = self.index().get(versioned)
        if located is None:
            return False
        try:
            digest = hashlib.sha256()
            with target.open("wb") as out:
                for block in self._blocks(located):
                    out.write(block)
                    digest.update(block)
            self._compare(versioned, located, digest.hexdigest())
            self._check(versioned, located, target)
        except BaseException:
            target.unlink(missing_ok=True)
            raise
        return True

    def _blocks(self, located: Located) -> Iterator[bytes]:
        """The PDF's bytes, unpacked, read to their end (so gzip checks its CRC) and no further than
        the size cap. Errors of the file or archive are a FolderError; those of the caller are not."""
        where = f"{located} could not be read"
        if located.path in self._damaged:
            raise FolderError(f"{where}: {located.path} is damaged ({self._damaged[located.path]})", _MEND)
        try:
            with ExitStack() as stack:
                source = _open(located, stack)
                total = 0
                while block := source.read(_BLOCK):
                    total += len(block)
                    if total > self.max_bytes:
                        raise FolderError(self._too_large(located), _MEND)
                    yield block
        except _UNREADABLE as error:
            raise FolderError(f"{where}: {_one_line(error)}", _MEND) from error

    def _too_large(self, located: Located) -> str:
        size = "unpacks to" if located.gzipped else "holds"
        return (
            f"{located} {size} more than {self.max_bytes // (1024 * 1024)} MB, far more than any paper, "
            "and was not taken"
        )

    def _compare(self, versioned: str, located: Located, digest: str) -> None:
        """A warning for each other file the folder holds for `versioned` with other bytes."""
        for other in self._others.get(versioned, ()):
            theirs = hashlib.sha256()
            try:
                for block in self._blocks(other):
                    theirs.update(block)
            except FolderError as error:
                log.warning("%s: %s is used; another file for it, %s", versioned, located, error.reason)
                continue
            if theirs.hexdigest() != digest:
                log.warning(
                    "%s: %s and %s are different files; the first (in path order) is used",
                    versioned,
                    located,
                    other,
                )

    def _check(self, versioned: str, located: Located, target: Path) -> None:
        with target.open("rb") as written:
            head = written.read(5)
            written.seek(0, 2)
            written.seek(max(0, written.tell() - EOF_WINDOW))
            tail = written.read()
        if head != b"%PDF-":
            raise FolderError(f"{located} is not a PDF (it begins {head!r}, not %PDF-)", _MEND)
        if b"%%EOF" not in tail:
            raise FolderError(f"{located} is truncated (no %%EOF in its last {EOF_WINDOW} bytes)", _MEND)
        [(_, found)] = run_bounded([str(target)], inspect_pdf, _over_limit, self.limits, 1)
        if found.problem:
            raise FolderError(f"{located} {found.problem}", _MEND)
        if found.stamped and found.stamped != versioned:
            raise FolderError(
                f"{located} is stamped arXiv:{found.stamped} on its first page, not {versioned}: "
                "it is another paper's PDF, or another version's",
                f"put {versioned}'s own PDF in its place, or take the file out of the folder so the paper "
                "is downloaded from arXiv",
            )


_MEND = "replace it with a good copy, or take it out of the folder so the paper is downloaded from arXiv"


def _open(located: Located, stack: ExitStack) -> IO[bytes] | gzip.GzipFile:
    source: IO[bytes]
    if located.member is None:
        source = stack.enter_context(located.path.open("rb"))
    else:
        archive = stack.enter_context(tarfile.open(located.path, "r:*"))
        member = archive.extractfile(located.member)
        if member is None:
            raise tarfile.ReadError(f"{located.member} is not a file")
        source = member
    if located.gzipped:
        return stack.enter_context(gzip.GzipFile(fileobj=source))
    return source


def _read_to_end(archive: tarfile.TarFile) -> None:
    """Raise when the archive is damaged past its last member: tarfile stops at the end-of-archive
    block, short of the end of a compressed stream (where its CRC is checked), and it also stops,
    silently, at a header it cannot read."""
    stream = archive.fileobj
    assert stream is not None
    if isinstance(stream, _COMPRESSED):
        while stream.read(_BLOCK):
            pass
        return
    stream.seek(archive.offset)
    if stream.read(tarfile.BLOCKSIZE).strip(b"\0"):
        raise tarfile.ReadError(f"no valid tar header at byte {archive.offset}")


def _over_limit(_path: str, why: str) -> Inspection:
    return Inspection(problem=f"could not be checked: reading its first page {why}")


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__
