"""The corpus file (`corpus/readingroom.toml`) and its lock file.

The corpus file is written by people, so edits made by `add`/`remove`/`import-bibtex` go through
tomlkit and keep the researcher's comments and layout. The lock file is written by builds only.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path
from urllib.parse import unquote

import tomlkit

from builder.models import LockEntry, PaperRef, Publish, Settings

# New-style ids (0704.0001 … 2502.11089, 4 or 5 digits after the dot) and old-style (hep-th/9901001).
# ASCII digits only: "2005.１１４０１" must not pass as a second, different spelling of 2005.11401.
ARXIV_ID = re.compile(
    r"^(?P<id>\d{4}\.\d{4,5}|[a-z][a-z\-]*(?:\.[A-Z]{2})?/\d{7})(?P<version>v\d+)?$", re.ASCII
)
MAX_TAG = 64  # characters: a tag is a label in the corpus table and a search filter
MAX_NOTE = 2_000  # characters: a note is a line or two on the paper's page

TEXT_SETTINGS = {"title", "description", "base_url", "model", "query_prefix", "document_prefix"}
NUMBER_SETTINGS = {"whole_index_mb"}
SETTING_KEYS = TEXT_SETTINGS | NUMBER_SETTINGS
PAPER_KEYS = {"id", "version", "tags", "note"}
# A path on the site's own host: "/" or "/a/b/", segments of URL-safe characters, never "." or "..".
_BASE_URL_SEGMENT = re.compile(r"(?:[A-Za-z0-9._~!$&'()*+,;=:@-]|%[0-9A-Fa-f]{2})+")


class CorpusError(ValueError):
    """The corpus file is wrong; the message names the file, the entry and the fix."""


@dataclass(frozen=True)
class Corpus:
    settings: Settings
    papers: tuple[PaperRef, ...]
    publish: Publish = field(default_factory=Publish)


def split_arxiv_id(raw: str) -> tuple[str, str | None]:
    """'arXiv:2005.11401v2' → ('2005.11401', 'v2'); raises CorpusError on anything that is not an id."""
    text = raw.strip()
    text = re.sub(r"^(?:arxiv:|https?://arxiv\.org/(?:abs|pdf)/)", "", text, flags=re.IGNORECASE)
    text = text.removesuffix(".pdf")
    if not text.isascii():
        raise CorpusError(f"{raw!r} is not an arXiv id: type its digits and letters in ASCII (0-9, a-z)")
    match = ARXIV_ID.match(text)
    if not match or not _plausible_new_style(match["id"]):
        raise CorpusError(
            f"{raw!r} is not an arXiv id (expected e.g. 2005.11401, 2005.11401v2 or hep-th/9901001)"
        )
    return match["id"], match["version"]


def _plausible_new_style(arxiv_id: str) -> bool:
    """YYMM.NNNN up to 2014, YYMM.NNNNN from 2015: catches ids that lost a digit."""
    if "/" in arxiv_id:
        return True
    yymm, number = arxiv_id.split(".")
    month = int(yymm[2:])
    return 1 <= month <= 12 and len(number) == (5 if yymm >= "1501" else 4)


def normalize_base_url(value: str) -> str:
    """'', '/', 'my-list', '/my-list' and '/my-list/' all mean a site under that path, ending in '/'.

    actions/configure-pages gives '' for a user site and '/repo' for a project site.
    """
    inner = value.strip().strip("/")
    text = f"/{inner}/" if inner else "/"
    check_base_url(text, "--base-url")
    return text


def parse_corpus(text: str, source: str = "corpus file") -> Corpus:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CorpusError(f"{source}: not valid TOML ({exc})") from exc
    site = data.get("site", {})
    if not isinstance(site, dict):
        raise CorpusError(f"{source}: 'site' must be a table: write [site] on a line of its own")
    unknown = set(site) - SETTING_KEYS
    if unknown:
        raise CorpusError(f"{source}: unknown [site] keys {sorted(unknown)}; allowed: {sorted(SETTING_KEYS)}")
    for key, value in site.items():
        if key in NUMBER_SETTINGS:
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < math.inf:
                raise CorpusError(f"{source}: [site] {key} must be a number of 0 or more, e.g. {key} = 16")
        elif not isinstance(value, str):
            raise CorpusError(f'{source}: [site] {key} must be a string in quotes, e.g. {key} = "…"')
    settings = Settings(**site)
    check_base_url(settings.base_url, source)
    papers: list[PaperRef] = []
    seen: set[str] = set()
    for number, entry in enumerate(_paper_entries(data, source), start=1):
        papers.append(_paper_ref(entry, f"{source}: [[paper]] #{number}"))
        if papers[-1].arxiv_id in seen:
            raise CorpusError(
                f"{source}: [[paper]] #{number}: {papers[-1].arxiv_id} is listed twice; remove one"
            )
        seen.add(papers[-1].arxiv_id)
    return Corpus(settings=settings, papers=tuple(papers), publish=_publish(data.get("publish", {}), source))


PUBLISH_KEYS = {f.name for f in fields(Publish)}


def _publish(table: object, source: str) -> Publish:
    if not isinstance(table, dict):
        raise CorpusError(f"{source}: 'publish' must be a table: write [publish] on a line of its own")
    unknown = set(table) - PUBLISH_KEYS
    if unknown:
        raise CorpusError(
            f"{source}: unknown [publish] keys {sorted(unknown)}; allowed: {sorted(PUBLISH_KEYS)}"
        )
    for key, value in table.items():
        if not isinstance(value, bool):
            raise CorpusError(f"{source}: [publish] {key} must be true or false, not {value!r}")
    return Publish(**table)


def check_base_url(base_url: str, source: str = "base_url") -> None:
    """The site lives at a path of its own host: a scheme, a host ("//cdn/") or ".." would load the
    site's scripts from elsewhere or from nowhere."""
    segments = base_url.split("/")[1:-1]
    if (
        not base_url.startswith("/")
        or not base_url.endswith("/")
        or base_url.startswith("//")
        or not all(_BASE_URL_SEGMENT.fullmatch(s) and unquote(s) not in (".", "..") for s in segments)
    ):
        raise CorpusError(
            f"{source}: base_url {base_url!r} must be an absolute path on the site's own host: "
            "it must start and end with '/', without a scheme or host, '.' or '..' segments, spaces, "
            "'?' or '#' (e.g. '/' or '/my-list/')"
        )


def _paper_entries(data: dict, source: str) -> list[dict]:
    entries = data.get("paper", [])
    if isinstance(entries, dict):
        raise CorpusError(
            f"{source}: [paper] must be written [[paper]] (double brackets), once before each entry"
        )
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        found = (
            f"a list of {', '.join(sorted({type(e).__name__ for e in entries}))}"
            if isinstance(entries, list)
            else f"a {type(entries).__name__}"
        )
        raise CorpusError(
            f"{source}: 'paper' must be a list of [[paper]] tables, each with id = \"…\"; found {found}"
        )
    return entries


def _paper_ref(entry: dict, where: str) -> PaperRef:
    unknown = set(entry) - PAPER_KEYS
    if unknown:
        raise CorpusError(f"{where}: unknown keys {sorted(unknown)}; allowed: {sorted(PAPER_KEYS)}")
    if "id" not in entry:
        raise CorpusError(f'{where}: missing id = "…" (an arXiv id such as 2005.11401)')
    if not isinstance(entry["id"], str):
        raise CorpusError(
            f'{where}: id {entry["id"]!r} must be a string in quotes, e.g. id = "2005.11401" '
            "(unquoted, TOML reads it as a number and may drop digits)"
        )
    try:
        arxiv_id, version = split_arxiv_id(str(entry["id"]))
    except ValueError as exc:
        raise CorpusError(f"{where}: {exc}") from exc
    pinned = entry.get("version", version)
    if pinned is not None and not re.fullmatch(r"v\d+", str(pinned)):
        raise CorpusError(f"{where}: version {pinned!r} must look like 'v2'")
    tags = entry.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise CorpusError(f'{where}: tags must be a list of strings, e.g. tags = ["rag"]')
    for tag in tags:
        if len(tag) > MAX_TAG:
            raise CorpusError(f"{where}: tag {tag[:20]!r}… has {len(tag)} characters; at most {MAX_TAG}")
    note = entry.get("note", "")
    if not isinstance(note, str):
        raise CorpusError(f'{where}: note must be a string in quotes, e.g. note = "why it matters"')
    if len(note) > MAX_NOTE:
        raise CorpusError(
            f"{where}: note has {len(note)} characters; at most {MAX_NOTE} (keep the rest elsewhere)"
        )
    return PaperRef(arxiv_id=arxiv_id, version=pinned, tags=tuple(tags), note=note)


def load_corpus(path: Path) -> Corpus:
    if not path.exists():
        raise CorpusError(f"{path}: no such corpus file; create it or pass --corpus FILE")
    return parse_corpus(path.read_text(encoding="utf-8"), str(path))


def add_papers(path: Path, refs: list[PaperRef]) -> list[PaperRef]:
    """Append entries not yet listed; returns those actually added."""
    document = tomlkit.parse(path.read_text(encoding="utf-8"))
    listed = {split_arxiv_id(str(t["id"]))[0] for t in document.get("paper", [])}
    added = []
    for ref in refs:
        if ref.arxiv_id not in listed:
            listed.add(ref.arxiv_id)
            added.append(ref)
    if not added:
        return []
    papers = document.get("paper")
    if papers is None:
        papers = tomlkit.aot()
        document.append("paper", papers)
    for ref in added:
        table = tomlkit.table()
        table.add("id", ref.arxiv_id)
        if ref.version:
            table.add("version", ref.version)
        if ref.tags:
            table.add("tags", list(ref.tags))
        if ref.note:
            table.add("note", ref.note)
        papers.append(table)
    _write_checked(path, tomlkit.dumps(document))
    return added


def remove_papers(path: Path, arxiv_ids: list[str]) -> list[str]:
    """Remove listed entries; returns the ids actually removed."""
    document = tomlkit.parse(path.read_text(encoding="utf-8"))
    wanted = {split_arxiv_id(i)[0] for i in arxiv_ids}
    papers = document.get("paper", [])
    removed = []
    for index in reversed(range(len(papers))):
        arxiv_id = split_arxiv_id(str(papers[index]["id"]))[0]
        if arxiv_id in wanted:
            removed.append(arxiv_id)
            del papers[index]
    if removed:
        _write_checked(path, tomlkit.dumps(document))
    return sorted(removed)


def _write_checked(path: Path, text: str) -> None:
    parse_corpus(text, str(path))  # never leave a corpus file the build would reject
    path.write_text(text, encoding="utf-8")


def lock_path_for(corpus_path: Path) -> Path:
    return corpus_path.with_suffix(".lock")


def load_lock(path: Path) -> dict[str, LockEntry]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {arxiv_id: LockEntry(**entry) for arxiv_id, entry in data["papers"].items()}
    except (ValueError, KeyError, TypeError) as exc:
        raise CorpusError(
            f"{path}: unreadable lock file ({exc}); delete it to resolve versions afresh"
        ) from exc


def write_lock(path: Path, entries: dict[str, LockEntry]) -> None:
    body = {
        "comment": "Written by `python -m builder build`: the version and PDF checksum each paper resolved to.",
        "papers": {i: {"version": e.version, "pdf_sha256": e.pdf_sha256} for i, e in sorted(entries.items())},
    }
    path.write_text(json.dumps(body, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
