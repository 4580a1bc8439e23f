"""Papers built offline from a folder of PDFs (`--pdfs DIR --offline`): an institution's own copies,
with no arXiv API to ask for metadata.

A paper's PDF is a `<id>vN.pdf` file or tar member (as `archive.PdfFolder` finds them), or a loose
`<id>.pdf` as a mirror names it, whose version then comes from its metadata file, the version the
corpus or lock file pins, or arXiv's stamp on its page 1. Its metadata comes from a file beside it in
the mirror's format (`<id>.json` or `<id>vN.json` anywhere under DIR, such as `meta/<id>.json`: see
../shared/arxiv-mirror/README.md), else from the PDF itself, as printed on page 1
(`parse/title_page.py`). Either way the PDF must be whole and open with pages, and where page 1
carries arXiv's stamp its id and version must be the paper's: a file under a wrong name is a failure,
never another paper's text cited under this id.

What is found is never written to the cache as arXiv's metadata (a later online build asks arXiv);
the folder is read again by every offline build, so fixing a file there fixes the next build.
"""

from __future__ import annotations

import logging
import os
import tarfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from builder.models import DEFAULT_LIMITS, PaperMeta, ParseLimits, file_stem
from builder.scratch import exclusive
from builder.stages.fetch.archive import NEW_STYLE, OLD_STYLE, FolderError, Located, PdfFolder, versioned_id
from builder.stages.fetch.download import short_error
from builder.stages.fetch.sources import (
    Cache,
    MetadataError,
    clean,
    clean_title,
    load_record,
    meta_from_mirror,
    sha256_file,
)
from builder.stages.parse.title_page import OverLimit, Printed, read_bounded

log = logging.getLogger(__name__)

SOURCE = "pdfs"  # FetchedPaper.source of a paper built from the folder
REPLACE = "replace it with a good copy, or remove it from the folder"
UNCHECKED = "paper.pdf.unchecked"  # a PDF unpacked from the folder into the cache, not yet read


class FolderProblem(Exception):
    """Why the folder's copy of a paper cannot be used: one failure line (reason, hint)."""

    def __init__(self, reason: str, hint: str):
        super().__init__(reason)
        self.reason, self.hint = reason, hint


@dataclass(frozen=True)
class FolderPaper:
    """A paper the folder provides: its metadata, the PDF to parse, and a line saying where both came
    from (the build report shows it)."""

    meta: PaperMeta
    pdf: Path
    said: str


@dataclass(frozen=True)
class Asked:
    """A paper the reading list asks the folder for."""

    arxiv_id: str
    version: str | None  # None: the newest the folder holds
    pinned_by: str  # the corpus or lock file that pins `version`, for failure lines


@dataclass(frozen=True)
class _Plan:
    """The one file a paper is built from, chosen before any of it is read."""

    asked: Asked
    where: str  # the file (and tar member) as a person finds it
    pdf: Path  # the file to read: loose in place, or unpacked into the cache
    version: str | None  # known from the name, the metadata file or the pin; None: from the stamp
    version_from: str  # "its name", "its metadata file" or the pinning file
    meta_file: Path | None


def _id_of(stem: str) -> str | None:
    """`2003.06713` from `2003.06713`, `hep-th/9901001` from `hep-th_9901001` or `hep-th9901001`."""
    if NEW_STYLE.fullmatch(stem):
        return stem
    old = OLD_STYLE.fullmatch(stem)
    return f"{old['archive']}/{old['number']}" if old else None


def _number(version: str) -> int:
    return int(version[1:])


class OfflineFolder:
    """The papers of `pdfs.folder`, for a build that may not ask arXiv (indexed on first use)."""

    def __init__(self, pdfs: PdfFolder, cache: Cache, limits: ParseLimits | None = None):
        self.pdfs, self.folder, self.cache = pdfs, pdfs.folder, cache
        self.limits, self.parallel = limits or DEFAULT_LIMITS, os.cpu_count() or 1
        self._loose: dict[str, list[Path]] | None = None  # id -> unversioned <id>.pdf files
        self._meta: dict[str, list[Path]] = {}  # id or versioned id -> <...>.json files

    def papers(self, asked: Sequence[Asked]) -> list[FolderPaper | FolderProblem]:
        """Each paper asked for from the folder, or why it cannot be; page 1 of every PDF is read in a
        process of its own under the parse limits (a hostile file fails alone, as in parsing)."""
        outcome: dict[int, FolderPaper | FolderProblem] = {}
        plans: dict[int, _Plan] = {}
        for index, one in enumerate(asked):
            try:
                plans[index] = self._plan(one)
            except FolderProblem as problem:
                outcome[index] = problem
            except OSError as error:
                outcome[index] = self._unreadable(one.arxiv_id, error)
        jobs = [(plan.pdf, plan.meta_file is None) for plan in plans.values()]
        for (index, plan), printed in zip(
            plans.items(), read_bounded(jobs, self.limits, self.parallel), strict=True
        ):
            try:
                if isinstance(printed, OverLimit):
                    raise FolderProblem(printed, f"if it is a real paper, raise that limit; else {REPLACE}")
                if isinstance(printed, str):
                    raise FolderProblem(printed, REPLACE)
                outcome[index] = _kept(self._finish(plan, printed))
            except FolderProblem as problem:
                outcome[index] = problem
            except OSError as error:
                outcome[index] = self._unreadable(plan.asked.arxiv_id, error)
            if plan.pdf.name == UNCHECKED:  # unpacked, and failed its checks: the cache keeps none of it
                plan.pdf.unlink(missing_ok=True)
        return [outcome[index] for index in range(len(asked))]

    def _unreadable(self, arxiv_id: str, error: OSError) -> FolderProblem:
        return FolderProblem(
            f"could not read {arxiv_id}'s copy in {self.folder}: {short_error(error)}",
            f"check the permissions of {self.folder} and of the cache",
        )

    # -- choosing the file

    def _scan(self) -> dict[str, list[Path]]:
        """Unversioned PDFs and metadata files, by id; `PdfFolder` indexes the versioned PDFs."""
        if self._loose is not None:
            return self._loose
        self._loose = {}
        for path in sorted(self.folder.rglob("*")):
            if path.suffix not in (".pdf", ".json") or not path.is_file():
                continue
            if path.suffix == ".pdf":
                if (arxiv_id := _id_of(path.stem)) is not None:
                    self._loose.setdefault(arxiv_id, []).append(path)
            elif (key := versioned_id(path.stem + ".pdf") or _id_of(path.stem)) is not None:
                self._meta.setdefault(key, []).append(path)
        for arxiv_id, paths in self._loose.items():
            if len(paths) > 1:
                named = ", ".join(map(str, paths))
                log.warning(
                    "%s: %d files named %s.pdf in %s (%s); using the first",
                    *(arxiv_id, len(paths), file_stem(arxiv_id), self.folder, named),
                )
        return self._loose

    def _plan(self, want: Asked) -> _Plan:
        """The file to build `want` from: a versioned copy where the folder has the version wanted (or
        any, when none is pinned), else a loose `<id>.pdf`; FolderProblem when there is none."""
        arxiv_id, version = want.arxiv_id, want.version
        loose = self._scan().get(arxiv_id, [])
        copies = {
            found_version: located
            for key, located in self.pdfs.index().items()
            for found_id, found_version in [_split(key)]
            if found_id == arxiv_id
        }
        if version in copies or (version is None and copies):
            chosen = version or max(copies, key=_number)
            located = copies[chosen]
            where = f"{located.path}{f' (member {located.member})' if located.member else ''}"
            pdf = self._unpacked(arxiv_id, chosen, located, where)
            return _Plan(want, where, pdf, chosen, "its name", self._meta_file(arxiv_id, chosen))
        if loose:
            meta_file = self._meta_file(arxiv_id, version)
            recorded = _recorded_version(meta_file, arxiv_id) if meta_file is not None else None
            if recorded and version and recorded != version:
                raise FolderProblem(
                    f"{self.folder} holds {arxiv_id}{recorded} (as {meta_file} says), not {arxiv_id}{version} "
                    f"as {want.pinned_by} asks",
                    f"put {file_stem(arxiv_id)}{version}.pdf into {self.folder}, or change the version "
                    f"{want.pinned_by} pins",
                )
            version_from = "its metadata file" if recorded else want.pinned_by if version else ""
            _check_whole(loose[0])
            return _Plan(want, str(loose[0]), loose[0], recorded or version, version_from, meta_file)
        if copies:
            held = ", ".join(f"{arxiv_id}{v}" for v in sorted(copies, key=_number))
            raise FolderProblem(
                f"{self.folder} holds {held}, not {arxiv_id}{version} as {want.pinned_by} asks",
                f"put {file_stem(arxiv_id)}{version}.pdf into {self.folder}, or change the version "
                f"{want.pinned_by} pins",
            )
        damaged = self.cache.problems.get(arxiv_id)
        raise FolderProblem(
            f"{arxiv_id}{version or ''} is neither in {self.folder} nor in the cache"
            f"{f' ({damaged})' if damaged else ''}, and --offline was given",
            f"put {file_stem(arxiv_id)}{version or 'vN'}.pdf into {self.folder}, or run without --offline "
            "to download it",
        )

    def _meta_file(self, arxiv_id: str, version: str | None) -> Path | None:
        for key in ([arxiv_id + version] if version else []) + [arxiv_id]:
            if key in self._meta:
                return self._meta[key][0]
        return None

    def _unpacked(self, arxiv_id: str, version: str, located: Located, where: str) -> Path:
        """A loose PDF in place; a tar member or gzipped file unpacked into the cache (as `--pdfs`
        does online), afresh each build so the folder's file is what is built. It stays UNCHECKED
        until page 1 was read: a `paper.pdf` without `meta.json` is one a later online build takes."""
        if located.member is None and not located.gzipped:
            _check_whole(located.path)
            return located.path
        folder = self.cache.paper_dir(arxiv_id, version)
        folder.mkdir(parents=True, exist_ok=True)
        unchecked, part = folder / UNCHECKED, folder / "paper.pdf.part"
        hint = f"replace it in {self.folder} with a good copy, or run without --offline to download it"
        with exclusive(folder / "paper.pdf.lock"):
            try:
                copied = self.pdfs.copy(arxiv_id + version, part)
            except FolderError as error:  # it names the file and what is wrong with it
                part.unlink(missing_ok=True)
                raise FolderProblem(error.reason, hint) from error
            except (zlib.error, tarfile.TarError, EOFError, OSError) as error:  # a damaged archive
                part.unlink(missing_ok=True)
                raise FolderProblem(f"{where} could not be unpacked ({short_error(error)})", hint) from error
            if not copied:
                part.unlink(missing_ok=True)
                raise FolderProblem(f"{where} could not be read as a PDF (the warning above says why)", hint)
            try:
                _check_whole(part)
            except FolderProblem as problem:
                part.unlink()
                raise FolderProblem(problem.reason.replace(str(part), where), hint) from problem
            os.replace(part, unchecked)
        return unchecked

    # -- the paper, once page 1 is read

    def _finish(self, plan: _Plan, printed: Printed) -> FolderPaper:
        arxiv_id, stamp = plan.asked.arxiv_id, printed.stamp
        version = plan.version
        if stamp is not None and (stamp.arxiv_id != arxiv_id or (version and stamp.version != version)):
            said_by = plan.version_from or "its name"
            expected = arxiv_id + (version or "")
            raise FolderProblem(
                f"{plan.where} carries arXiv's stamp for {stamp.versioned_id}, not {expected} as {said_by} "
                f"{'says' if said_by.startswith('its ') else 'asks'}",
                f"put {expected}'s own PDF into {self.folder}",
            )
        if version is None:
            if stamp is None:
                name = file_stem(arxiv_id)
                raise FolderProblem(
                    f"{plan.where} has no version in its name, no arXiv stamp on its page 1 and no metadata "
                    "file giving one",
                    f"rename it {name}vN.pdf (N: its arXiv version), or put a metadata file {name}.json "
                    'with its "version" beside it',
                )
            version, plan_from = stamp.version, "arXiv's stamp"
        else:
            plan_from = plan.version_from
        if plan.meta_file is not None:
            meta = _from_meta_file(plan.meta_file, arxiv_id, version, plan)
            return FolderPaper(meta, plan.pdf, f"PDF {plan.where}; metadata from {plan.meta_file}")
        title = clean_title(printed.title, arxiv_id)
        if not title:
            raise FolderProblem(
                f"no title could be read from page 1 of {plan.where}, and {self.folder} has no metadata "
                f"file for {arxiv_id}",
                f"put a {file_stem(arxiv_id)}.json (the mirror's meta/<id>.json format) beside the PDFs, "
                "or build without --offline so arXiv's API gives the metadata",
            )
        date = stamp.date if stamp else ""
        meta = PaperMeta(
            arxiv_id=arxiv_id,
            version=version,
            title=title,
            authors=printed.authors,
            abstract=clean(printed.abstract),
            categories=[stamp.category] if stamp else [],
            primary_category=stamp.category if stamp else "",
            published=date if version == "v1" else "",  # the stamp dates this version, not v1
            updated=date,
        )
        count = len(printed.authors)
        authors = f"{count} author{'' if count == 1 else 's'}"
        dated = (
            "version and date from arXiv's stamp" if stamp else f"no arXiv stamp: version from {plan_from}"
        )
        said = f"PDF {plan.where}; metadata as printed on its page 1 (title, {authors}; {dated})"
        return FolderPaper(meta, plan.pdf, said)


def _kept(paper: FolderPaper) -> FolderPaper:
    """The paper, its unpacked PDF (if any) now the cache's `paper.pdf`: it passed every check."""
    if paper.pdf.name != UNCHECKED:
        return paper
    kept = paper.pdf.with_name("paper.pdf")
    os.replace(paper.pdf, kept)
    return replace(paper, pdf=kept)


def _split(versioned: str) -> tuple[str, str]:
    """`2003.06713v1` -> (`2003.06713`, `v1`)."""
    stem, _, number = versioned.rpartition("v")
    return stem, f"v{number}"


def _check_whole(pdf: Path) -> None:
    """The checks parsing makes of a file (a PDF header, an end marker), made before it is used, so
    the failure line asks for a good copy in the folder rather than a download."""
    with pdf.open("rb") as handle:
        head = handle.read(1024)
        handle.seek(0, os.SEEK_END)
        handle.seek(max(0, handle.tell() - 2048))
        tail = handle.read()
    if b"%PDF-" not in head:
        raise FolderProblem(f"{pdf} is not a PDF (it starts {head[:20]!r})", REPLACE)
    if b"%%EOF" not in tail:
        raise FolderProblem(f"{pdf} is truncated (no %%EOF marker at its end)", REPLACE)


def _recorded_version(meta_file: Path, arxiv_id: str) -> str | None:
    """The version a metadata file records, None when it records none."""
    try:
        data = load_record(meta_file, str(meta_file))
        return meta_from_mirror(data, arxiv_id, str(meta_file)).version if data.get("version") else None
    except MetadataError as error:
        raise FolderProblem(
            str(error), f"correct {meta_file}, or remove it to use what the PDF prints"
        ) from error


def _from_meta_file(meta_file: Path, arxiv_id: str, version: str, plan: _Plan) -> PaperMeta:
    """The mirror-format record, checked against the PDF it sits beside: the same paper, version and
    (where it records one) checksum."""
    where = str(meta_file)
    try:
        data = load_record(meta_file, where)
        named = data.get("arxiv_id")
        if named is not None and named != arxiv_id:
            raise MetadataError(f"{where}: 'arxiv_id' is {named!r}, but the file is named for {arxiv_id}")
        data.setdefault("version", version)
        meta = meta_from_mirror(data, arxiv_id, where)
    except MetadataError as error:
        raise FolderProblem(
            str(error), f"correct {meta_file}, or remove it to use what the PDF prints"
        ) from error
    if meta.version != version:
        raise FolderProblem(
            f"{where} describes {arxiv_id}{meta.version}, but the PDF is {arxiv_id}{version}",
            f"correct 'version' in {meta_file}, or put the PDF of {arxiv_id}{meta.version} beside it",
        )
    recorded = data.get("pdf_sha256")
    actual = sha256_file(plan.pdf)
    if isinstance(recorded, str) and recorded and recorded.lower() != actual:
        raise FolderProblem(
            f"{plan.where} has sha256 {actual[:12]}…, but {where} records {recorded[:12]}…; the metadata describes "
            "another file",
            f"correct or remove 'pdf_sha256' in {meta_file}, or restore the PDF it describes",
        )
    return meta
