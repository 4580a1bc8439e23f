"""Whether a query names a work the list cites but does not hold (`formats/missing.py`'s file).

Conservative, since the page then says so above the results: the whole query (less its field filters)
must be one of the names the citing papers give the work ("Chinchilla", "GPT-4"), or its title, or hold
its arXiv id. Words are compared folded and squeezed ("gpt4", "GPT-4" and "gpt 4" are one name), so a
topic query ("scaling laws for language models") names none.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from readingroom_core.analysis import fold
from readingroom_core.formats.missing import MissingWork
from readingroom_core.querysyntax import embedding_text

MAX_SHOWN = 3
MIN_TITLE = 12  # squeezed characters: a shorter "title" is a fragment an entry printed
_ARXIV_ID = re.compile(r"(?<![\d.])(\d{4}\.\d{4,5})(?:v\d+)?(?![\d])")


def squeezed(text: str) -> str:
    """Folded to lowercase letters and digits alone."""
    return "".join(re.findall(r"[a-z0-9]+", fold(text).lower()))


class MissingIndex:
    """The missing works by each squeezed name, title and id."""

    def __init__(self, works: Sequence[MissingWork]) -> None:
        self.works = list(works)
        self.by_key: dict[str, list[int]] = {}
        for index, work in enumerate(self.works):
            keys = {squeezed(name) for name in work.names}
            if len(squeezed(work.title)) >= MIN_TITLE:
                keys.add(squeezed(work.title))
            for key in keys - {""}:
                self.by_key.setdefault(key, []).append(index)
        self.by_id = {work.arxiv_id: index for index, work in enumerate(self.works) if work.arxiv_id}

    def match(self, query: str) -> list[MissingWork]:
        """The works `query` names, most cited first (at most MAX_SHOWN)."""
        text = embedding_text(query).replace('"', " ")
        found = list(self.by_key.get(squeezed(text), []))
        found += [self.by_id[i] for i in _ARXIV_ID.findall(query) if i in self.by_id]
        unique = sorted(set(found), key=lambda index: (-len(self.works[index].cited_by), index))
        return [self.works[index] for index in unique[:MAX_SHOWN]]
