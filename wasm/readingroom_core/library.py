"""The whole reading list as verification sees it: which ids it holds, and where a quote lies in it.

A citation that leaves the sources (a paper of the list that was not a source, or a page of a source's
paper that was not among the passages) is "outside the sources" when the site holds the quote, and
"invented" only when it does not hold the paper. Finding the quote must stay cheap however large the
list: the quote's own words are a BM25 search (keyword side only, no vector), the few best passages
name candidate pages, and only those pages' text is checked, through the engine's one text access
(`PaperTexts.page_texts`: the groups of chunks that cover those pages).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from readingroom_core.analysis import bare_id
from readingroom_core.engine import SearchEngine
from readingroom_core.options import SearchOptions
from readingroom_core.verification import Found, page_holding

CANDIDATE_PASSAGES = 6  # BM25 passages whose pages are checked for one quote
QUERY_WORDS = 32  # a quote's first words make its query (a BM25 query of a whole page would be slow)
_WORD_RE = re.compile(r"[^\W_]+")


@dataclass
class CorpusLibrary:
    """`verification.Library` over a site's search engine."""

    engine: SearchEngine
    _index: dict[str, int] = field(init=False)

    def __post_init__(self) -> None:
        self._index = {bare_id(paper.id): n for n, paper in enumerate(self.engine.papers)}

    def holds(self, arxiv_id: str) -> bool:
        return bare_id(arxiv_id) in self._index

    def locate(self, quote: str, arxiv_id: str | None, page: int = 0) -> Found | None:
        if arxiv_id is not None and page > 0 and self.holds(arxiv_id):
            cited = self._index[bare_id(arxiv_id)]
            texts = self.engine.texts.page_texts(cited, [page, page + 1])
            if page_holding(quote, texts) == page:
                return Found(self.engine.papers[cited].id, page)  # the cited page, first
        words = _WORD_RE.findall(quote)[:QUERY_WORDS]
        if not words:
            return None
        query = " ".join(word.lower() for word in words)
        if arxiv_id is not None:
            if not self.holds(arxiv_id):
                return None
            query = f"id:{bare_id(arxiv_id)} {query}"
        options = SearchOptions(k=CANDIDATE_PASSAGES, mode="bm25", per_page=1, per_paper=0)
        hits = self.engine.search(query, None, options)
        # the next page too, for a quote across a break
        pages = [
            (self._index[bare_id(hit.arxiv_id)], range(hit.page_start, hit.page_end + 2)) for hit in hits
        ]
        wanted: dict[int, set[int]] = {}
        for paper, numbers in pages:
            wanted.setdefault(paper, set()).update(numbers)
        self.engine.texts.read_pages(wanted)
        for hit, (paper, numbers) in zip(hits, pages, strict=True):
            holding = page_holding(quote, self.engine.texts.page_texts(paper, numbers))
            if holding is not None and holding <= hit.page_end:
                return Found(hit.arxiv_id, holding)
        return None
