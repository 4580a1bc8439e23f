"""Where a paper may already be on disk: the build's cache and a local mirror folder.

Cache: `<cache_dir>/papers/<id>/<version>/paper.pdf` + `meta.json`; meta.json is written after the
PDF, so an entry with both is complete and never fetched again (a killed build resumes there).
Mirror: `pdf/<id>.pdf` + `meta/<id>.json` (laid out like ../shared/arxiv-mirror), used in place; its
meta may carry the PDF's sha256, which is checked before the file is used.

Metadata records from disk are checked before they become a `PaperMeta`: a mirror's meta is written
by people or scripts and a cache entry can be damaged, so a wrong type costs one failure line naming
the file and the field, never a traceback later or a mangled page ("authors": "Alice Smith" shown
as "A, l, i, c, e"). A missing or null optional field reads as empty.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from builder.models import PaperMeta, file_stem
from builder.scratch import write_text_atomically

log = logging.getLogger(__name__)

VERSION_RE = re.compile(r"v[1-9]\d*")


def clean(text: str) -> str:
    return " ".join(text.split())


MAX_TITLE = 1_000  # characters; arXiv's longest real titles are a few hundred


def clean_title(text: str, arxiv_id: str) -> str:
    """The title with its whitespace cleaned, cut to MAX_TITLE characters (with one warning line): every
    page of the site shows it, and Ask's evidence budget counts it."""
    title = clean(text)
    if len(title) <= MAX_TITLE:
        return title
    log.warning("%s: title of %d characters cut to %d", arxiv_id, len(title), MAX_TITLE)
    return title[: MAX_TITLE - 1] + "…"


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class MetadataError(ValueError):
    """A metadata file that cannot be used; the message names the file and the field."""


def load_record(path: Path, where: str) -> dict[str, Any]:
    """The JSON object in `path` (`where` names it for people); OSError passes through."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as err:
        raise MetadataError(f"{where} is not UTF-8 text ({err.reason} at byte {err.start})") from err
    except ValueError as err:
        raise MetadataError(f"{where} is not valid JSON ({err})") from err
    if not isinstance(data, dict):
        raise MetadataError(f"{where} must hold one JSON object {{…}}, not {_describe(data)}")
    return data


def meta_from_mirror(data: Mapping[str, Any], arxiv_id: str, where: str) -> PaperMeta:
    """A mirror record (`version_date` is the date of this version)."""
    updated = "version_date" if data.get("version_date") is not None else "updated"
    return PaperMeta(
        arxiv_id=arxiv_id,
        version=_version(data, where),
        title=clean_title(_text(data, "title", where, required=True), arxiv_id),
        authors=_strings(data, "authors", where),
        categories=_strings(data, "categories", where),
        updated=_text(data, updated, where),
        abstract=_text(data, "abstract", where),
        primary_category=_text(data, "primary_category", where),
        published=_text(data, "published", where),
        comment=_text(data, "comment", where),
        doi=_text(data, "doi", where),
        journal_ref=_text(data, "journal_ref", where),
    )


def meta_from_cache(data: Mapping[str, Any], where: str) -> PaperMeta:
    """A cache record, as `Cache.complete` wrote it (the fields of `PaperMeta`)."""
    withdrawn = data.get("withdrawn", False)
    if not isinstance(withdrawn, bool):
        raise MetadataError(f"{where}: 'withdrawn' must be true or false, not {_describe(withdrawn)}")
    return PaperMeta(
        arxiv_id=_text(data, "arxiv_id", where, required=True),
        version=_version(data, where),
        title=_text(data, "title", where, required=True),
        authors=_strings(data, "authors", where),
        categories=_strings(data, "categories", where),
        updated=_text(data, "updated", where),
        withdrawn=withdrawn,
        abstract=_text(data, "abstract", where),
        primary_category=_text(data, "primary_category", where),
        published=_text(data, "published", where),
        comment=_text(data, "comment", where),
        doi=_text(data, "doi", where),
        journal_ref=_text(data, "journal_ref", where),
    )


def _text(data: Mapping[str, Any], key: str, where: str, required: bool = False) -> str:
    value = data.get(key)
    if value is None:
        if required:
            raise MetadataError(f"{where}: {key!r} is missing")
        return ""
    if not isinstance(value, str):
        raise MetadataError(f"{where}: {key!r} must be a string, not {_describe(value)}")
    if required and not value.strip():
        raise MetadataError(f"{where}: {key!r} is empty")
    return value


def _version(data: Mapping[str, Any], where: str) -> str:
    value = data.get("version")
    if not isinstance(value, str) or not VERSION_RE.fullmatch(value):
        raise MetadataError(f"{where}: 'version' must be a string such as \"v1\", not {_describe(value)}")
    return value


def _strings(data: Mapping[str, Any], key: str, where: str) -> list[str]:
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise MetadataError(
            f'{where}: {key!r} must be a list of strings such as ["…", "…"], not {_describe(value)}'
        )
    return value


def _describe(value: Any) -> str:
    """A JSON value as a person would name it, with a short excerpt."""
    kind = {
        dict: "an object",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        type(None): "null",
    }.get(type(value), type(value).__name__)
    if value is None:
        return kind
    shown = json.dumps(value, ensure_ascii=False)
    return f"{kind} ({shown if len(shown) <= 40 else shown[:37] + '…'})"


def cache_paper_dir(cache_dir: Path, arxiv_id: str, version: str) -> Path:
    """`<cache_dir>/papers/<id with '/' replaced by '_'>/<version>`."""
    return Path(cache_dir) / "papers" / file_stem(arxiv_id) / version


def _write_json(path: Path, data: Any) -> None:
    write_text_atomically(path, json.dumps(data, ensure_ascii=False, indent=2) + "\n")


class Cache:
    """Papers fetched by earlier runs, by id and version.

    A damaged entry counts as absent (fetching again repairs it); `problems` keeps why, by id, for
    the failure line when nothing else can provide the paper.
    """

    def __init__(self, cache_dir: Path):
        self.cache_dir = Path(cache_dir)
        self.problems: dict[str, str] = {}

    def paper_dir(self, arxiv_id: str, version: str) -> Path:
        return cache_paper_dir(self.cache_dir, arxiv_id, version)

    def get(self, arxiv_id: str, version: str) -> tuple[PaperMeta, Path] | None:
        folder = self.paper_dir(arxiv_id, version)
        pdf, meta_path = folder / "paper.pdf", folder / "meta.json"
        if not (pdf.is_file() and meta_path.is_file()):
            return None
        where = f"the cached {meta_path.relative_to(self.cache_dir).as_posix()}"
        try:
            meta = meta_from_cache(load_record(meta_path, where), where)
        except MetadataError as err:
            log.warning("ignoring a damaged cache entry: %s", err)
            self.problems[arxiv_id] = str(err)
            return None
        if meta.arxiv_id != arxiv_id or meta.version != version:
            return None
        return meta, pdf

    def latest(self, arxiv_id: str) -> tuple[PaperMeta, Path] | None:
        folder = self.cache_dir / "papers" / file_stem(arxiv_id)
        if not folder.is_dir():
            return None
        versions = sorted(
            (p.name for p in folder.iterdir() if VERSION_RE.fullmatch(p.name)),
            key=lambda v: int(v[1:]),
            reverse=True,
        )
        for version in versions:
            cached = self.get(arxiv_id, version)
            if cached is not None:
                return cached
        return None

    @staticmethod
    def complete(folder: Path, meta: PaperMeta) -> None:
        """Write meta.json next to a checked paper.pdf: both present = a complete entry."""
        _write_json(folder / "meta.json", asdict(meta))


@dataclass(frozen=True)
class MirrorEntry:
    meta: PaperMeta
    pdf: Path
    pdf_sha256: str  # what the mirror's meta says the PDF's checksum is ("" when it does not say)


class Mirror:
    """A local folder of PDFs and their arXiv metadata."""

    def __init__(self, folder: Path):
        self.folder = Path(folder)

    def entry(self, arxiv_id: str) -> MirrorEntry | None:
        """The mirror's copy, None when it has none; MetadataError when its metadata is unusable."""
        name = file_stem(arxiv_id)
        pdf, meta = self.folder / "pdf" / f"{name}.pdf", self.folder / "meta" / f"{name}.json"
        if not (pdf.is_file() and meta.is_file()):
            return None
        where = f"the mirror's meta/{name}.json"
        data = load_record(meta, where)
        return MirrorEntry(meta_from_mirror(data, arxiv_id, where), pdf, _text(data, "pdf_sha256", where))

    @staticmethod
    def damage(entry: MirrorEntry) -> str | None:
        """Why the mirror's PDF cannot be trusted (its checksum disagrees with its meta), or None."""
        if not entry.pdf_sha256:
            return None
        actual = sha256_file(entry.pdf)
        if actual == entry.pdf_sha256.lower():
            return None
        return (
            f"the mirror's {entry.pdf.name} has sha256 {actual[:12]}…, but its meta/{entry.pdf.stem}.json "
            f"says {entry.pdf_sha256[:12]}…; the mirror copy is damaged"
        )
