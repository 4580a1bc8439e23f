"""A folder of PDFs a build takes instead of downloading them: loose `<id>vN.pdf` files, or tar
archives of them as arXiv's bulk data ships them (`arXiv_pdf_2101_001.tar` holding `2101/2101.00001v1.pdf`),
at any depth, plain or gzipped (`.tar.gz`, `.tgz`, members `….pdf.gz`).

arXiv asks bulk users to take PDFs from those archives rather than from its API; a 10,000-paper list
then needs only its metadata from the API (batched: minutes, not the 8 hours of paced downloads).
The folder is indexed once per build, by file names alone; a PDF found there is copied into the
cache as a download would be, so later builds, and Ray workers, need only the cache.
"""

from __future__ import annotations

import gzip
import logging
import re
import shutil
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO

log = logging.getLogger(__name__)

PDF_NAME = re.compile(r"(?P<stem>[^/]+?)(?P<version>v[1-9]\d*)\.pdf(?P<gz>\.gz)?")
NEW_STYLE = re.compile(r"\d{4}\.\d{4,5}")
OLD_STYLE = re.compile(r"(?P<archive>[a-z][a-z-]*(?:\.[A-Z]{2})?)[_/]?(?P<number>\d{7})")
TAR_SUFFIXES = (".tar", ".tar.gz", ".tgz")


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


@dataclass(frozen=True)
class Located:
    """Where one version's PDF lies: a loose file, or a member of a tar archive."""

    path: Path
    member: str | None  # None: `path` is the PDF itself
    gzipped: bool


class PdfFolder:
    """The PDFs under `folder`, by versioned id (indexed on first use)."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self._index: dict[str, Located] | None = None

    def index(self) -> dict[str, Located]:
        if self._index is None:
            self._index = {}
            for path in sorted(self.folder.rglob("*")):
                if not path.is_file():
                    continue
                if path.name.endswith(TAR_SUFFIXES):
                    self._index_archive(path)
                elif (found := versioned_id(path.name)) is not None:
                    self._index.setdefault(found, Located(path, None, path.name.endswith(".gz")))
        return self._index

    def _index_archive(self, path: Path) -> None:
        assert self._index is not None
        try:
            with tarfile.open(path, "r:*") as archive:
                for member in archive:
                    found = versioned_id(member.name.rsplit("/", 1)[-1]) if member.isfile() else None
                    if found is not None:
                        self._index.setdefault(found, Located(path, member.name, member.name.endswith(".gz")))
        except (tarfile.TarError, OSError, EOFError) as error:  # one bad archive costs only its papers
            log.warning("skipping %s: not a readable tar archive (%s)", path, error)

    def copy(self, versioned: str, target: Path) -> bool:
        """Write the PDF of `versioned` (e.g. 2101.00001v1) to `target`; False when the folder has no
        such PDF, or what it has is not one (then the paper is downloaded as usual)."""
        located = self.index().get(versioned)
        if located is None:
            return False
        try:
            if located.member is None:
                with located.path.open("rb") as handle:
                    _write(handle, located.gzipped, target)
            else:
                with tarfile.open(located.path, "r:*") as archive:
                    member = archive.extractfile(located.member)
                    if member is None:
                        return False
                    _write(member, located.gzipped, target)
        except (tarfile.TarError, OSError, EOFError) as error:
            log.warning(
                "%s in %s could not be read (%s); downloading it instead", versioned, located.path, error
            )
            target.unlink(missing_ok=True)
            return False
        with target.open("rb") as written:
            if written.read(5) == b"%PDF-":
                return True
        log.warning("%s in %s is not a PDF; downloading it instead", versioned, located.path)
        target.unlink()
        return False


def _write(source: IO[bytes], gzipped: bool, target: Path) -> None:
    with target.open("wb") as out:
        if gzipped:
            with gzip.GzipFile(fileobj=source) as unpacked:
                shutil.copyfileobj(unpacked, out)
        else:
            shutil.copyfileobj(source, out)
