"""Where a paper may already be on disk: the build's cache and a local mirror folder.

Cache: `<cache_dir>/papers/<id>/<version>/paper.pdf` + `meta.json`; meta.json is written after the
PDF, so an entry with both is complete and never fetched again (a killed build resumes there).
Mirror: `pdf/<id>.pdf` + `meta/<id>.json` (laid out like ../shared/arxiv-mirror), used in place; its
meta may carry the PDF's sha256, which is checked before the file is used.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from builder.models import PaperMeta

log = logging.getLogger(__name__)

VERSION_RE = re.compile(r"v[1-9]\d*")


def clean(text: str) -> str:
    return " ".join(text.split())


def file_id(arxiv_id: str) -> str:
    return arxiv_id.replace("/", "_")


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def cache_paper_dir(cache_dir: Path, arxiv_id: str, version: str) -> Path:
    """`<cache_dir>/papers/<id with '/' replaced by '_'>/<version>`."""
    return Path(cache_dir) / "papers" / file_id(arxiv_id) / version


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


class Cache:
    """Papers fetched by earlier runs, by id and version."""

    def __init__(self, cache_dir: Path):
        self.cache_dir = Path(cache_dir)

    def paper_dir(self, arxiv_id: str, version: str) -> Path:
        return cache_paper_dir(self.cache_dir, arxiv_id, version)

    def get(self, arxiv_id: str, version: str) -> tuple[PaperMeta, Path] | None:
        folder = self.paper_dir(arxiv_id, version)
        pdf, meta_path = folder / "paper.pdf", folder / "meta.json"
        if not (pdf.is_file() and meta_path.is_file()):
            return None
        meta = _read_meta(meta_path)
        if meta is None or meta.arxiv_id != arxiv_id or meta.version != version:
            return None
        return meta, pdf

    def latest(self, arxiv_id: str) -> tuple[PaperMeta, Path] | None:
        folder = self.cache_dir / "papers" / file_id(arxiv_id)
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


def meta_from_mirror(data: Mapping[str, Any], arxiv_id: str) -> PaperMeta:
    """Map a mirror's `meta/<id>.json` to `PaperMeta` (`version_date` is the date of this version)."""
    return PaperMeta(
        arxiv_id=arxiv_id,
        version=str(data.get("version") or ""),
        title=clean(str(data.get("title") or "")),
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
        name = file_id(arxiv_id)
        pdf, meta = self.folder / "pdf" / f"{name}.pdf", self.folder / "meta" / f"{name}.json"
        if not (pdf.is_file() and meta.is_file()):
            return None
        try:
            data = json.loads(meta.read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            log.warning("ignoring unreadable mirror metadata %s: %s", meta, err)
            return None
        return MirrorEntry(meta_from_mirror(data, arxiv_id), pdf, str(data.get("pdf_sha256") or ""))

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
