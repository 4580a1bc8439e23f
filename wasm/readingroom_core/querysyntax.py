"""The search box's grammar, the one place that reads a query string.

A query is free text, "quoted phrases" that must occur in the chunk, and field filters `year:2021`,
`year:2020..2023`, `year:>=2021`, `cat:cs.CL` (or `cat:cs` for the whole archive), `tag:rag`,
`id:2005.11401`, `author:lewis` (`author:"van den"` for spaces). A field filter starts a word; its
value runs to the next space, or between double quotes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from readingroom_core.analysis import analyze
from readingroom_core.filters import Filters, narrower

QUOTE_MARKS = '"\u201c\u201d\u201e'
_FIELD_NAME = r"(?<!\S)(year|cat|tag|id|author):"
_FIELD_RE = re.compile(rf'{_FIELD_NAME}(?:"([^"]*)"|([^\s"]+))', re.IGNORECASE)
_FIELD_NAME_RE = re.compile(_FIELD_NAME, re.IGNORECASE)
_QUOTED_RE = re.compile(rf"[{QUOTE_MARKS}]([^{QUOTE_MARKS}]*)[{QUOTE_MARKS}]")
_QUOTE_MARK_RE = re.compile(f"[{QUOTE_MARKS}]")
_LIST_FIELDS = {"cat": "categories", "tag": "tags", "id": "paper_ids", "author": "authors"}
_YEAR_RANGE_RE = re.compile(r"(\d{4})?\.\.(\d{4})?")
_YEAR_COMPARE_RE = re.compile(r"(>=|<=|>|<|=)?(\d{4})")


class QuerySyntaxError(ValueError):
    """A field filter in the query string has a value it cannot mean."""


@dataclass(frozen=True)
class Query:
    """An analysed query: every term (for scoring) and the quoted phrases (for phrase checks)."""

    terms: list[str] = field(default_factory=list)  # distinct, in first-seen order, phrases included
    phrases: list[list[str]] = field(default_factory=list)  # two or more terms each, no joined compounds


def parse_query(query: str) -> Query:
    """Split free text into terms and "quoted phrases".

    An unmatched quote is ignored (the user is still typing), and a quoted single word is a plain term.
    """
    phrases: list[list[str]] = []
    position = 0
    ordered_terms: list[str] = []
    for match in _QUOTED_RE.finditer(query):
        ordered_terms.extend(analyze(query[position : match.start()]))
        ordered_terms.extend(analyze(match.group(1)))
        phrase = analyze(match.group(1), joined_compounds=False)
        if len(phrase) >= 2:
            phrases.append(phrase)
        position = match.end()
    ordered_terms.extend(analyze(query[position:]))
    return Query(terms=list(dict.fromkeys(ordered_terms)), phrases=phrases)


def parse_year(value: str) -> tuple[int | None, int | None]:
    """(first, last) year, inclusive, of `2021`, `2020..2023`, `2020..`, `..2023`, `>=2021`, `<2022`."""
    span = _YEAR_RANGE_RE.fullmatch(value)
    if span and (span.group(1) or span.group(2)):
        low, high = (int(year) if year else None for year in span.groups())
        return low, high
    compare = _YEAR_COMPARE_RE.fullmatch(value)
    if not compare:
        raise QuerySyntaxError(
            f"year:{value} is not a year filter; write year:2021, year:2020..2023, year:>=2021 or year:<2022"
        )
    operator, year = compare.group(1) or "=", int(compare.group(2))
    return {
        "=": (year, year),
        ">=": (year, None),
        ">": (year + 1, None),
        "<=": (None, year),
        "<": (None, year - 1),
    }[operator]


def parse_search(query: str, known_tags: Sequence[str]) -> tuple[Query, Filters]:
    """Field filters taken out of `query`, and the rest analysed into terms and phrases.

    A `tag:` value is read as the corpus spells its tags (`known_tags`, lower case): a unique prefix
    stands for its tag (tag:rag), and an unknown or ambiguous value is an error that lists the tags,
    not an empty result page.
    """
    values: dict[str, list[str]] = {name: [] for name in _LIST_FIELDS.values()}
    year_min = year_max = None
    for match in _FIELD_RE.finditer(query):
        name = match.group(1).lower()
        value = (match.group(2) if match.group(2) is not None else match.group(3)).strip()
        if not value:
            continue
        if name == "year":
            low, high = parse_year(value)
            year_min = narrower(year_min, low, max)
            year_max = narrower(year_max, high, min)
        else:
            values[_LIST_FIELDS[name]].append(value)
    values["tags"] = [_known_tag(value, known_tags) for value in values["tags"]]
    filters = Filters(year_min=year_min, year_max=year_max, **{name: tuple(v) for name, v in values.items()})
    return parse_query(embedding_text(query)), filters


def _known_tag(value: str, known_tags: Sequence[str]) -> str:
    wanted = value.strip().lower()
    matches = [wanted] if wanted in known_tags else [tag for tag in known_tags if tag.startswith(wanted)]
    if len(matches) != 1:
        how = "matches several tags" if matches else "is not a tag of this corpus"
        raise QuerySyntaxError(f"tag:{value} {how}; the tags are {', '.join(matches or known_tags)}")
    return matches[0]


def embedding_text(query: str) -> str:
    """What the query encoder should read: the query without its field filters (year:…, cat:…).

    The browser and the CLI both embed this, so their query vectors agree.
    """
    return " ".join(_FIELD_RE.sub(" ", query).split())


def field_spans(query: str) -> list[tuple[int, int]]:
    """[start, end) of each field filter in `query`: text that is no words of the query."""
    return [match.span() for match in _FIELD_RE.finditer(query)]


def free_text(query: str) -> str:
    """`query` with its syntax made plain words: quote marks become spaces and a field name loses its
    colon (`year:2021` reads as `year 2021`). For query sets written as plain text (BEIR), whose
    quotes and colons mean nothing to this grammar."""
    return _FIELD_NAME_RE.sub(r"\1 ", _QUOTE_MARK_RE.sub(" ", query))
