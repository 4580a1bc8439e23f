"""A paper's reference list as records: each entry's text, the page it is printed on, the arXiv ids it
names and the first page of the paper's body that cites it.

The parse stage marks the bibliography (`ParsedPaper.references_span`) and keeps it out of the chunks;
this module cuts that span into entries (one paragraph each, numbered `[12]` entries split apart,
a paragraph that carries on over a page break joined back) so the citation graph and `suggest` can
read them. The records are kept in the build's cache beside the parsed text
(`references/<REFERENCES_VERSION>/<parsed text id>.json`, the parse stage's `parsed_text_id`); this
module is the format's one owner.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from builder.config import CorpusError, split_arxiv_id
from builder.models import FetchedPaper, ParsedPaper
from builder.scratch import write_text_atomically
from builder.stages.parse import parsed_text_id

REFERENCES_VERSION = "2"  # part of the cache key: it moves whenever the entries read differently

# An arXiv id as references print it: "arXiv:1706.03762", "arXiv preprint arXiv:2001.08361",
# "CoRR, abs/1706.03762", "arxiv.org/pdf/2106.09685v2", old-style "hep-th/9901001" or "cs.CL/0112017";
# a line break may have left a space after the dot ("abs/1706. 03762"). A bare new-style id counts too
# where nothing glued to it says it is a DOI or a number of another kind.
_ARXIV_PREFIXED = re.compile(
    r"(?:arxiv(?:\s*preprint)?(?:\s*arxiv)?\s*[:.]?\s*|abs/|pdf/)"
    r"(\d{4}\.\s?\d{4,5}|[a-z][a-z\-]*(?:\.[A-Z]{2})?/\d{7})(v\d+)?",
    re.IGNORECASE | re.ASCII,
)
_ARXIV_BARE = re.compile(r"(?<![\w./-])(\d{4}\.\d{4,5})(v\d+)?(?![\w/-]|\.\d)", re.ASCII)
_OLD_ARCHIVES = "hep-th|hep-ph|hep-ex|hep-lat|gr-qc|quant-ph|cond-mat|astro-ph|math-ph|nucl-th|nlin|physics|math|cs|q-bio|stat"
_ARXIV_OLD_BARE = re.compile(
    rf"(?<![\w./-])((?:{_OLD_ARCHIVES})(?:\.[A-Z]{{2}})?/\d{{7}})(v\d+)?(?!\d)", re.ASCII
)
_NUMBERED = re.compile(r"(?:^|(?<=\s))\[(\d{1,4})\]\s")
_UNHEADED = re.compile(r"(?:^|(?<=\n\n))\[1\] (?=.{20,2000}?\[2\] )", re.DOTALL)
_CONTINUATION = re.compile(
    r"^(?:[a-z(\d]|In |URL|https?:|doi|arXiv|pp\.|Proceedings|Advances|Journal|Conference|Association|"
    r"Transactions|International|Annual|Workshop)"
)
_SURNAME = re.compile(r"[^\W\d_][\w'’\-]+", re.UNICODE)
_YEAR = re.compile(r"(?<!\d)(19[5-9]\d|20[0-4]\d)(?!\d)")


@dataclass(frozen=True)
class Reference:
    """One entry of a reference list. `cited_on`: the first page of the body (before the list) that
    cites it, by its number or by its first author and year, where that can be found."""

    text: str
    page: int
    label: str = ""  # the entry's number where the list is numbered ("12" for "[12]")
    arxiv_ids: tuple[str, ...] = ()
    cited_on: int | None = None

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Reference:
        return cls(data["text"], data["page"], data["label"], tuple(data["arxiv_ids"]), data["cited_on"])


@dataclass(frozen=True)
class PaperReferences:
    """The reference list of one paper of the reading list."""

    arxiv_id: str
    references: tuple[Reference, ...]

    def to_json(self) -> dict[str, Any]:
        return {"arxiv_id": self.arxiv_id, "references": [asdict(r) for r in self.references]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PaperReferences:
        return cls(data["arxiv_id"], tuple(Reference.from_json(r) for r in data["references"]))


def arxiv_ids_in(text: str) -> tuple[str, ...]:
    """The plausible arXiv ids a reference names, without versions, in order of appearance."""
    found: list[str] = []
    for pattern in (_ARXIV_PREFIXED, _ARXIV_BARE, _ARXIV_OLD_BARE):
        for match in pattern.finditer(text):
            try:
                arxiv_id, _ = split_arxiv_id(match[1].replace(" ", ""))
            except CorpusError:
                continue
            if arxiv_id not in found:
                found.append(arxiv_id)
    return tuple(found)


def references_span(parsed: ParsedPaper) -> tuple[int, int] | None:
    """The parse stage's bibliography span, else a numbered list without a heading (physics papers
    often end in "[1] … [2] …" with none): from the last paragraph that opens with "[1]" and is
    followed by "[2]", to the end."""
    if parsed.references_span:
        return parsed.references_span
    starts = [m.start() for m in _UNHEADED.finditer(parsed.text)]
    if not starts:
        return None
    return max(0, starts[-1] - 2), len(parsed.text)  # from the blank line a heading would stand on


def entries_of(parsed: ParsedPaper) -> list[tuple[str, int]]:
    """The reference list cut into entries: (text with whitespace collapsed, start offset in `text`)."""
    span = references_span(parsed)
    if not span:
        return []
    start, end = span
    entries: list[tuple[str, int]] = []
    offset = start
    numbered = False  # in a numbered list, a paragraph without its "[n]" carries on the entry before it
    for index, paragraph in enumerate(parsed.text[start:end].split("\n\n")):
        here, offset = offset, offset + len(paragraph) + 2
        if index == 0 or not paragraph.strip():
            continue  # the heading
        numbered = numbered or bool(_NUMBERED.match(paragraph))
        pieces = _numbered_pieces(paragraph)
        if (
            entries
            and not _NUMBERED.match(paragraph)
            and (numbered or _CONTINUATION.match(paragraph.lstrip()))
        ):
            text, at = entries.pop()
            entries.append((f"{text} {pieces[0][0]}", at))
            pieces = pieces[1:]
        entries += [(text, here + at) for text, at in pieces]
    return [(text, at) for text, at in entries if len(text) >= 12]


def _numbered_pieces(paragraph: str) -> list[tuple[str, int]]:
    """A paragraph split at every `[n]` that starts an entry: several numbered entries may share one."""
    cuts = [m.start() for m in _NUMBERED.finditer(paragraph)]
    if not cuts or cuts[0] != 0:
        cuts = [0, *cuts]
    ends = [*cuts[1:], len(paragraph)]
    return [(" ".join(paragraph[a:b].split()), a) for a, b in zip(cuts, ends, strict=True)]


def read_references(parsed: ParsedPaper) -> PaperReferences:
    """Every entry of the paper's reference list with its page, ids and first citing page."""
    span = references_span(parsed)
    body = parsed.text[: span[0]] if span else ""
    references = []
    for text, at in entries_of(parsed):
        numbered = _NUMBERED.match(text + " ")
        label = numbered[1] if numbered else ""
        cited_at = _numbered_mention(body, label) if label else _author_year_mention(body, text)
        references.append(
            Reference(
                text=text,
                page=parsed.page_at(at),
                label=label,
                arxiv_ids=arxiv_ids_in(text),
                cited_on=parsed.page_at(cited_at) if cited_at is not None else None,
            )
        )
    return PaperReferences(parsed.arxiv_id, tuple(references))


def _numbered_mention(body: str, label: str) -> int | None:
    """Where the body first cites entry `label`: "[12]", "[3, 12]", "[10-14]"."""
    number = int(label)
    for match in re.finditer(r"\[(\d{1,4}(?:\s*[,;–-]\s*\d{1,4})*)\]", body):
        if any(_covers(part, number) for part in re.split(r"\s*[,;]\s*", match[1])):
            return match.start()
    return None


def _covers(part: str, number: int) -> bool:
    """The part "12", or the range "10-14", holds `number`."""
    bounds = re.split(r"\s*[–-]\s*", part)
    return all(b.isdigit() for b in bounds) and int(bounds[0]) <= number <= int(bounds[-1])


def _author_year_mention(body: str, text: str) -> int | None:
    """Where the body first cites an author-year entry: its first author's surname, then its year
    within a few words ("Vaswani et al. (2017)", "(Vaswani et al., 2017)")."""
    surname, year = first_surname(text), entry_year(text)
    if not surname or not year:
        return None
    match = re.search(rf"\b{re.escape(surname)}\b[^()\[\]]{{0,40}}?\(?{year}", body)
    return match.start() if match else None


def first_surname(text: str) -> str:
    """The first author's surname: "J. Devlin, M.-W. Chang" and "Devlin, J., Chang" → "Devlin";
    "Jacob Devlin, Ming-Wei Chang" → "Devlin"."""
    text = _NUMBERED.sub("", text, count=1).strip()
    first = re.split(r",| and |(?<!\b[A-Z])\. (?=[A-Z][a-z])", text, maxsplit=1)[0]
    words = [w for w in _SURNAME.findall(first) if len(w) > 1 and not w.isupper()]
    if not words:
        return ""
    if re.match(r"^\s*[^\W\d_][\w'’\-]+,\s*[A-Z]\.", text):  # "Devlin, J."
        return words[0]
    return words[-1]


def entry_year(text: str) -> str:
    """The entry's year: the first plausible one outside ids and URLs."""
    cleaned = _ARXIV_PREFIXED.sub(" ", re.sub(r"https?://\S+", " ", text))
    match = _YEAR.search(cleaned)
    return match[1] if match else ""


def _cache_path(paper: FetchedPaper, cache_dir: Path) -> Path:
    return Path(cache_dir) / "references" / REFERENCES_VERSION / f"{parsed_text_id(paper)}.json"


def cached_references(paper: FetchedPaper, parsed: ParsedPaper, cache_dir: Path) -> PaperReferences:
    """The paper's references from the cache, else read from its parsed text and kept there."""
    path = _cache_path(paper, cache_dir)
    if path.exists():
        return PaperReferences.from_json(json.loads(path.read_text(encoding="utf-8")))
    references = read_references(parsed)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomically(path, json.dumps(references.to_json(), ensure_ascii=False))
    return references
