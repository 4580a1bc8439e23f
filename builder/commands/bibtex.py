"""Read arXiv ids out of a BibTeX file, so a researcher can seed the reading list from a .bib."""

from __future__ import annotations

import re
from dataclasses import dataclass

from builder.config import CorpusError, split_arxiv_id

ENTRY_START = re.compile(r"@(\w+)\s*\{", re.ASCII)
FIELD_NAME = re.compile(r"\s*,?\s*([A-Za-z][\w\-]*)\s*=\s*", re.ASCII)
BARE_VALUE = re.compile(r"[^,}]*")
ARXIV_IN_TEXT = re.compile(
    r"(?:arxiv(?:\.org/(?:abs|pdf)/|\s*:\s*|\s+preprint\s+arxiv\s*:\s*))"
    r"(\d{4}\.\d{4,5}(?:v\d+)?|[a-z\-]+(?:\.[A-Z]{2})?/\d{7}(?:v\d+)?)",
    re.IGNORECASE | re.ASCII,
)


@dataclass(frozen=True)
class BibEntry:
    key: str
    kind: str
    fields: dict[str, str]


def parse_bibtex(text: str) -> list[BibEntry]:
    """The entries in `text`, read front to back in one pass: an entry's body (and a `@comment`'s,
    `@preamble`'s or `@string`'s, which are skipped) is never searched again for entries inside it."""
    entries = []
    position = 0
    while match := ENTRY_START.search(text, position):
        body, position = _braced(text, match.end() - 1)
        kind = match[1].lower()
        if kind in ("comment", "preamble", "string"):
            continue
        key, _, rest = body.partition(",")
        entries.append(BibEntry(key=key.strip(), kind=kind, fields=_fields(rest)))
    return entries


def _braced(text: str, open_at: int) -> tuple[str, int]:
    """Contents of the brace group opening at `open_at`, and the index after its closing brace."""
    depth = 0
    for index in range(open_at, len(text)):
        if text[index] == "{":
            depth += 1
        elif text[index] == "}":
            depth -= 1
            if depth == 0:
                return text[open_at + 1 : index], index + 1
    return text[open_at + 1 :], len(text)


def _fields(body: str) -> dict[str, str]:
    fields: dict[str, str] = {}
    position = 0
    while match := FIELD_NAME.match(body, position):
        name, position = match[1].lower(), match.end()
        if position < len(body) and body[position] == "{":
            value, position = _braced(body, position)
        elif position < len(body) and body[position] == '"':
            end = body.find('"', position + 1)
            end = len(body) if end < 0 else end
            value, position = body[position + 1 : end], end + 1
        else:
            bare = BARE_VALUE.match(body, position)  # up to the next ',' or '}'
            value, position = (bare[0], bare.end()) if bare else ("", position)
        fields[name] = " ".join(value.split())
    return fields


def arxiv_id_of(entry: BibEntry) -> tuple[str, str | None] | None:
    """The entry's arXiv id from `eprint` (with archivePrefix arXiv), or from a journal/url/note mention;
    None when it has none; CorpusError (naming the entry) when what it names is no plausible id."""
    eprint = entry.fields.get("eprint", "")
    prefix = entry.fields.get("archiveprefix", entry.fields.get("eprinttype", "arxiv")).lower()
    problem = None
    if eprint and prefix == "arxiv":
        try:
            return split_arxiv_id(eprint)
        except CorpusError as exc:
            problem = CorpusError(f"{entry.key}: eprint names {exc}")
    for name in ("journal", "url", "note", "howpublished", "volume", "booktitle"):
        found = ARXIV_IN_TEXT.search(entry.fields.get(name, ""))
        if found:
            try:
                return split_arxiv_id(found[1])
            except CorpusError as exc:
                problem = problem or CorpusError(f"{entry.key}: {name} names {exc}")
    if problem:
        raise problem
    return None
