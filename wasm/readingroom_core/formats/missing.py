"""The missing-works file, `data/missing.*.json`: works the list's papers cite that the list does not
hold, each with its arXiv id where an entry prints one, its title, the names the citing papers give it
("Chinchilla") and which papers of the list cite it on which page.

`{"v", "works": [[arxiv_id or null, title, [name…], [[citing id, page or null]…]]…]}`, most cited first,
at most MAX_WORKS works (the list's most cited), so the file stays a few tens of kB however long the
list. Written by builder/writers/missing.py, read by readers/missing.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from readingroom_core.formats.versioned import FORMAT_VERSION, compact_json, load_versioned

MAX_WORKS = 400
MIN_CITING = 2  # a work one paper cites is that paper's detail, not a gap in the list


@dataclass(frozen=True)
class MissingWork:
    """A work cited and not held: `cited_by` pairs each citing list paper with its first citing page."""

    arxiv_id: str | None
    title: str
    names: tuple[str, ...]
    cited_by: tuple[tuple[str, int | None], ...]

    def to_row(self) -> list[object]:
        return [self.arxiv_id, self.title, list(self.names), [list(pair) for pair in self.cited_by]]

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> MissingWork:
        arxiv_id, title, names, cited_by = row
        return cls(arxiv_id, title, tuple(names), tuple((citing, page) for citing, page in cited_by))


def missing_bytes(works: Sequence[MissingWork]) -> bytes:
    return compact_json({"v": FORMAT_VERSION, "works": [work.to_row() for work in works[:MAX_WORKS]]})


def read_missing(data: bytes | str, what: str = "missing-works file") -> list[MissingWork]:
    return [MissingWork.from_row(row) for row in load_versioned(data, what)["works"]]
