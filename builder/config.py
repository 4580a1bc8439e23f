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
# The title heads every page, names every browser tab and sits in manifest.json, which every visit
# downloads: a list's name with a subtitle is well under 200 characters.
MAX_SITE_TITLE = 200
MAX_DESCRIPTION = 2_000  # characters: like a note, a paragraph on the front page (and its meta tag)
# Characters refused in the corpus file's text: C0 and C1 controls (a NUL; an ESC, which recolours the
# terminal `list` prints to) and the bidirectional overrides and isolates, which show text in another
# order than the one it is stored in. A note and the description may hold tabs and line breaks.
ONE_LINE_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
MULTI_LINE_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
SETTING_LIMITS = {"title": MAX_SITE_TITLE, "description": MAX_DESCRIPTION}

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
        else:
            check_text(value, f"{source}: [site] {key}", SETTING_LIMITS.get(key), lines=key == "description")
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
    note = entry.get("note", "")
    if not isinstance(note, str):
        raise CorpusError(f'{where}: note must be a string in quotes, e.g. note = "why it matters"')
    where = f"{where} ({arxiv_id})"
    check_tags(tags, where)
    check_text(note, f"{where}: note", MAX_NOTE, lines=True)
    return PaperRef(arxiv_id=arxiv_id, version=pinned, tags=tuple(tags), note=note)


def check_tags(tags: list[str], where: str) -> None:
    """A tag is a search filter: a blank one would be an option that shows nothing, the empty one
    equal to "all"."""
    for tag in tags:
        if len(tag) > MAX_TAG:
            raise CorpusError(f"{where}: tag {tag[:20]!r}… has {len(tag)} characters; at most {MAX_TAG}")
        if not tag.strip():
            raise CorpusError(f"{where}: tag {tag!r} is blank; give it a word or remove it")
        check_text(tag, f"{where}: tag {tag!r}")


def check_text(value: str, field: str, limit: int | None = None, lines: bool = False) -> None:
    """A text of the corpus file within its length limit and free of the characters that would be
    written raw into every page and every terminal; `field` names it ("FILE: [site] title")."""
    if limit is not None and len(value) > limit:
        raise CorpusError(f"{field} has {len(value)} characters; at most {limit} (keep the rest elsewhere)")
    found = (MULTI_LINE_UNSAFE if lines else ONE_LINE_UNSAFE).search(value)
    if found:
        kind = "a control character" if found[0] <= "\x9f" else "a bidirectional override"
        raise CorpusError(
            f"{field} holds U+{ord(found[0]):04X} ({kind}) at character {found.start() + 1}; remove it"
        )


def load_corpus(path: Path) -> Corpus:
    return parse_corpus(read_corpus_text(path), str(path))


def read_corpus_text(path: Path) -> str:
    if not path.exists():
        raise CorpusError(f"{path}: no such corpus file; create it or pass --corpus FILE")
    return read_text(path, "corpus file", "pass --corpus FILE with the reading list's .toml file")


def read_text(path: Path, what: str, fix: str) -> str:
    """A file people edit, as UTF-8 text; a folder, an unreadable file or other bytes are a CorpusError
    naming the file and the place."""
    if path.is_dir():
        raise CorpusError(f"{path} is a folder, not a {what}; {fix}")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise CorpusError(f"{path}: cannot read the {what} ({exc.strerror}); {fix}") from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise CorpusError(
            f"{path}: the {what} is not UTF-8 text (byte 0x{data[exc.start]:02x} on line {line}); "
            "save it as UTF-8"
        ) from exc


def add_papers(path: Path, refs: list[PaperRef]) -> list[PaperRef]:
    """Append entries not yet listed; returns those actually added."""
    text = read_corpus_text(path)
    parse_corpus(text, str(path))  # the entries below are of the shapes it checks
    document = tomlkit.parse(text)
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
    text = read_corpus_text(path)
    parse_corpus(text, str(path))  # the entries below are of the shapes it checks
    document = tomlkit.parse(text)
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
    """The versions and checksums a build resolved, checked for the shape `write_lock` gives them: any
    other (a hand edit, a merge gone wrong) is a CorpusError naming the file and the entry."""
    if not path.exists():
        return {}
    fix = "delete it to resolve versions afresh"
    text = read_text(path, "lock file", fix)
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise CorpusError(f"{path}: the lock file is not JSON ({exc}); {fix}") from exc
    papers = data.get("papers") if isinstance(data, dict) else None
    if not isinstance(papers, dict):
        if not isinstance(data, dict):
            found = f"a JSON {_json_kind(data)}"
        else:
            found = f'"papers" as a JSON {_json_kind(papers)}' if "papers" in data else 'no "papers"'
        raise CorpusError(
            f'{path}: the lock file must be {{"papers": {{ID: {{"version", "pdf_sha256"}}, …}}}}; '
            f"found {found}; {fix}"
        )
    entries = {}
    for arxiv_id, entry in papers.items():
        if not _lock_entry_shaped(arxiv_id, entry):
            raise CorpusError(
                f'{path}: entry {arxiv_id!r} must be {{"version": "vN", "pdf_sha256": "<64 hex digits>"}} '
                f"under an arXiv id, found {_shortened(json.dumps(entry))}; remove the entry "
                "or delete the file to resolve versions afresh"
            )
        entries[arxiv_id] = LockEntry(**entry)
    return entries


def _json_kind(value: object) -> str:
    kinds = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return kinds.get(type(value), "number")


def _shortened(text: str, most: int = 80) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"


def _lock_entry_shaped(arxiv_id: str, entry: object) -> bool:
    try:
        named = split_arxiv_id(arxiv_id) == (arxiv_id, None)
    except CorpusError:
        return False
    return (
        named
        and isinstance(entry, dict)
        and set(entry) == {"version", "pdf_sha256"}
        and isinstance(entry["version"], str)
        and re.fullmatch(r"v\d+", entry["version"], re.ASCII) is not None
        and isinstance(entry["pdf_sha256"], str)
        and re.fullmatch(r"[0-9a-fA-F]{64}", entry["pdf_sha256"]) is not None
    )


def write_lock(path: Path, entries: dict[str, LockEntry]) -> None:
    body = {
        "comment": "Written by `python -m builder build`: the version and PDF checksum each paper resolved to.",
        "papers": {i: {"version": e.version, "pdf_sha256": e.pdf_sha256} for i, e in sorted(entries.items())},
    }
    path.write_text(json.dumps(body, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
