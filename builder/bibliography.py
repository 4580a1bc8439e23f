"""The one writer of a paper's BibTeX entry and CSL-JSON item, for every place the site cites a paper:
results, paper pages, Ask's sources and the exports.

The build renders each paper's entry once from its site record (`builder/site/references.py` writes
them into the references file, the paper page embeds its own), so the browser only joins entries it is
handed, and Python (the build, tests) and the page can never write two forms of one paper. Entries are
arXiv's own shape: `@misc` with `eprint` naming the version the site indexed, `archivePrefix = {arXiv}`,
`primaryClass` and a versioned `url`. The title keeps only true acronyms and names braced, so a
bibliography style may set the rest in its own case: a word with a capital after its first letter
("QLoRA", "GPT-3", "LLMs"), or one the abstract writes capitalised inside a sentence and never in lower
case ("Adam", "Wikipedia").
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

ARXIV = "https://arxiv.org"

_COMPOUND_RE = re.compile(r"[^\W_]+(?:[-'’][^\W_]+)*")
_WORD_RE = re.compile(r"[^\W\d_][^\W_]*")
_SENTENCE_END = re.compile(r"[.!?:]\s*$")
_LATEX_SPECIAL = re.compile(r"([%&$#_])")


@dataclass(frozen=True)
class Reference:
    """What a citation names of a paper: its site record's fields, the abstract for the names."""

    arxiv_id: str
    version: str
    title: str
    authors: tuple[str, ...] = ()
    year: int | None = None
    primary_class: str = ""
    abstract: str = ""

    @classmethod
    def of(cls, record: Any) -> Reference:
        """From a `PaperRecord` (or anything with its field names)."""
        categories = tuple(getattr(record, "categories", ()) or ())
        return cls(
            arxiv_id=record.id,
            version=record.version or "",
            title=record.title,
            authors=tuple(record.authors),
            year=record.year,
            primary_class=getattr(record, "primary_category", "") or (categories[0] if categories else ""),
            abstract=getattr(record, "abstract", "") or "",
        )

    @property
    def versioned_id(self) -> str:
        return f"{self.arxiv_id}{self.version}"


def abs_url(reference: Reference) -> str:
    return f"{ARXIV}/abs/{reference.versioned_id}"


def citation_keys(references: Sequence[Reference]) -> list[str]:
    """Readable keys ("hu2021lora"), one per reference in order, made unique across the list by a
    letter ("hu2021lorab"), so an entry's key is the same in every file that holds it."""
    keys: list[str] = []
    taken: set[str] = set()
    for reference in references:
        stem = readable_key(reference)
        key, suffix = stem, ord("b")
        while key in taken:
            key, suffix = f"{stem}{chr(suffix)}", suffix + 1
        taken.add(key)
        keys.append(key)
    return keys


def readable_key(reference: Reference) -> str:
    """First author's surname, year and first title word of four letters or more."""
    first = reference.authors[0].split() if reference.authors else []
    surname = _ascii(first[-1]).lower() if first else ""
    word = next(iter(re.findall(r"[a-z0-9]{4,}", _ascii(reference.title).lower())), "")
    return f"{surname or 'arxiv'}{reference.year or ''}{word}"


def _ascii(text: str) -> str:
    folded = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^A-Za-z0-9 ]", "", folded)


def bibtex_value(text: str) -> str:
    """A field's text with what would break BibTeX or LaTeX taken out (braces, backslashes) or escaped."""
    cleaned = re.sub(r"[{}\\]", "", str(text))
    return " ".join(_LATEX_SPECIAL.sub(r"\\\1", cleaned).split())


def braced_title(title: str, abstract: str = "") -> str:
    """The title's BibTeX value: acronyms and names in braces, everything else left to the style."""
    names = _names(abstract)

    def brace(match: re.Match[str]) -> str:
        word = match.group()
        if _keeps_case(word) or word.lower() in names and word[:1].isupper():
            return "{" + word + "}"
        return word

    return _COMPOUND_RE.sub(brace, bibtex_value(title))


def _keeps_case(compound: str) -> bool:
    """An acronym or a made-up spelling: a part with a capital after its first letter ("BERT",
    "QLoRA", "NV-Embed", "LLMs") or a capital beside a digit ("T5", "GPT-4")."""
    for part in re.split(r"[-'’]", compound):
        if any(c.isupper() for c in part[1:]) or (part[:1].isupper() and any(c.isdigit() for c in part)):
            return True
    return False


def _names(abstract: str) -> set[str]:
    """Words the abstract writes capitalised inside a sentence, between lower case words, and never in
    lower case ("We introduce Adam, an algorithm"), by lower case: a run of capitalised words is the
    spelled-out acronym ("Direct Preference Optimization (DPO)"), not a name."""
    words = list(_WORD_RE.finditer(abstract))
    capitalised: set[str] = set()
    plain: set[str] = set()
    for index, match in enumerate(words):
        word = match.group()
        if word.islower():
            plain.add(word)
            continue
        if not (len(word) > 1 and word[:1].isupper() and word[1:].islower()) or index == 0:
            continue
        before, after = words[index - 1], words[index + 1] if index + 1 < len(words) else None
        inside = not _SENTENCE_END.search(abstract[before.end() : match.start()])
        if inside and before.group()[:1].islower() and (after is None or not after.group()[:1].isupper()):
            capitalised.add(word.lower())
    return capitalised - plain


def bibtex_entry(reference: Reference, key: str) -> str:
    """One `@misc` entry as arXiv's own export writes it, the version the site indexed in it."""
    fields = [
        ("title", "{" + braced_title(reference.title, reference.abstract) + "}"),
        ("author", " and ".join(bibtex_value(a) for a in reference.authors)),
        ("year", str(reference.year or "")),
        ("eprint", reference.versioned_id),
        ("archivePrefix", "arXiv"),
        ("primaryClass", reference.primary_class),
        ("url", abs_url(reference)),
    ]
    body = ",\n".join(
        f"  {name} = {value if value.startswith('{') else '{' + value + '}'}"
        for name, value in fields
        if value
    )
    return f"@misc{{{key},\n{body}\n}}"


def csl_item(reference: Reference, key: str) -> dict[str, Any]:
    """The paper as a CSL-JSON item (Zotero, pandoc-citeproc): an arXiv preprint, versioned."""
    item: dict[str, Any] = {
        "id": key,
        "type": "article",
        "title": reference.title,
        "author": [_csl_name(name) for name in reference.authors],
        "publisher": "arXiv",
        "number": f"arXiv:{reference.versioned_id}",
        "URL": abs_url(reference),
        "DOI": f"10.48550/arXiv.{reference.arxiv_id}",
    }
    if reference.year:
        item["issued"] = {"date-parts": [[reference.year]]}
    return item


def _csl_name(name: str) -> dict[str, str]:
    words = name.split()
    if len(words) < 2:
        return {"literal": name}
    return {"family": words[-1], "given": " ".join(words[:-1])}


def rendered(references: Iterable[Reference]) -> dict[str, dict[str, Any]]:
    """Every reference's key, BibTeX entry and CSL-JSON item, by arXiv id, keys unique across them."""
    listed = list(references)
    return {
        reference.arxiv_id: {
            "key": key,
            "bibtex": bibtex_entry(reference, key),
            "csl": csl_item(reference, key),
        }
        for reference, key in zip(listed, citation_keys(listed), strict=True)
    }


def bibtex_file(entries: Iterable[Mapping[str, Any]]) -> str:
    """A .bib file of rendered entries (`rendered`'s values), one blank line apart."""
    return "\n\n".join(entry["bibtex"] for entry in entries) + "\n"
