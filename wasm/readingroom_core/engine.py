"""The site's search: BM25 and dense retrieval over the built data files, fused, filtered, with snippets.

The browser (Pyodide) and the CLI/eval (CPython) both run this class, so offline numbers are what
visitors get. Papers, the chunk table and the postings directory load at construction, so keyword
results come first; the dense directory loads on first dense use (or `load_vectors()`). Everything else
is read by range as queries need it (`ranges`): each query term's dictionary block and a bounded prefix
of its impact-ordered postings (`readers.postings`), the nearest coarse lists' codes and the int8 rows
of the best candidates (`readers.dense`), and a chunk's text when it is shown, cited or checked for a
quoted phrase (`readers.texts`: its paper's head, then its group of chunks).

The engine runs a search, as its options ask (`options`), from the parts each module owns: the query
string (`querysyntax`), which chunks filters allow (`filters`), the two retrievers (`readers.postings`,
`readers.dense`), the paper view (`paperview`), fusion and diversity (`fusion`), snippets (`snippets`)
and "did you mean" (`spelling`).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from readingroom_core.analysis import contains_phrase
from readingroom_core.filters import Allowed, PaperFilter, merge_filters
from readingroom_core.formats.chunks import read_chunk_table
from readingroom_core.formats.dense import read_dense_directory
from readingroom_core.formats.manifest import DataFiles
from readingroom_core.formats.postings import read_term_directory
from readingroom_core.formats.texts import TextChunk
from readingroom_core.fusion import (
    Fused,
    Ranking,
    diversify,
    reciprocal_rank_fusion,
    single_ranking,
    weighted_score_fusion,
    with_paper_prior,
)
from readingroom_core.lru import LastResult
from readingroom_core.navigation import PaperFinder, named_first
from readingroom_core.options import SearchOptions, check_options
from readingroom_core.packedrows import PackedRows
from readingroom_core.paperview import PaperView
from readingroom_core.querysyntax import Query, embedding_text, parse_search
from readingroom_core.ranges import Announce, Block, BlockReader, RangeRead, whole_file_ranges
from readingroom_core.readers.dense import DenseLists
from readingroom_core.readers.papers import read_paper_table, read_paper_vectors
from readingroom_core.readers.postings import TermIndex
from readingroom_core.readers.texts import PaperTexts
from readingroom_core.snippets import make_snippet
from readingroom_core.spelling import Speller

RETRIEVERS = ("bm25", "dense")
# Candidates a phrase check names in its first batch (their texts' heads and groups; later batches double),
# and the most it checks: the phrase's matches among the best 256 keyword candidates that hold its words
# (at 10,000 papers a title's words are in thousands of chunks, and each check may read a group of text).
PHRASE_TEXTS_FIRST = 8
PHRASE_CHECKS = 256

Reader = Callable[[str], bytes]


@dataclass
class Hit:
    doc_id: int
    chunk_id: str
    arxiv_id: str
    title: str
    page_start: int
    page_end: int
    section: str
    score: float
    ranks: dict[str, int | None]  # 1-based rank per retriever, None where it did not return the chunk
    text: str
    snippet: str
    highlights: list[tuple[int, int]]  # offsets into snippet
    similarity: float | None = None  # cosine of query and passage, where the dense side returned it
    named: bool = False  # the opening passage of the paper the query names (navigation)


@dataclass(frozen=True)
class Prepared:
    """A search up to the point where it needs the query vector (`SearchEngine.prepare`)."""

    options: SearchOptions
    parsed: Query
    allowed: Allowed | None
    limit: int  # candidates per retriever
    bm25: Ranking | None = None  # None when the keyword side takes no part (dense mode)
    browse: list[Fused] | None = None  # the results of a query of filters alone
    named: int | None = None  # opening doc id of the paper the query names (navigation), shown first


class SearchEngine:
    """One site's search; `read(path)` returns a data file's bytes and `read_range(path, start, end)` a
    range of one (disk in CPython, fetch in Pyodide; without it ranges are sliced from whole files)."""

    def __init__(
        self,
        files: DataFiles,
        read: Reader,
        read_range: RangeRead | None = None,
        announce: Announce | None = None,
    ) -> None:
        self.files = files
        self.read = read
        self.blocks = BlockReader(read_range or whole_file_ranges(read), announce)
        table = files.paper_table or files.papers
        self.papers = read_paper_table(read(table), table)
        self.chunks = read_chunk_table(read(files.chunks), files.chunks)
        self.n_chunks = self.chunks.n
        self._paper_of = self._paper_of_each_chunk()
        self._filter = PaperFilter(self.papers, self._paper_of)
        self._bm25 = TermIndex(read_term_directory(read(files.postings), files.postings), self.blocks)
        if self._bm25.n_docs != self.n_chunks:
            raise ValueError(
                f"postings cover {self._bm25.n_docs} chunks but the chunk table lists {self.n_chunks}; rebuild"
            )
        self._vectors: DenseLists | None = None
        if not files.texts or not files.text_dictionary:
            raise ValueError("the site lists no paper texts (files.texts, files.text_dictionary); rebuild it")
        self.texts = PaperTexts(
            files.texts, read(files.text_dictionary), self.papers, self._paper_of, self.blocks
        )
        self._paper_view = PaperView(self.papers, self._paper_vectors if files.paper_vectors else None)
        self.speller = Speller(self._bm25, lambda doc_id: self.chunk(doc_id).text, self.texts.read)
        self._finder = PaperFinder(self.papers)
        self._last_phrase_holders: LastResult[tuple[Any, ...], Ranking] = LastResult()

    def _paper_of_each_chunk(self) -> array[int]:
        paper_of = array("i", [-1]) * self.n_chunks
        for index, paper in enumerate(self.papers):
            first, count = paper.first_chunk, paper.chunk_count
            if first < 0 or first + count > self.n_chunks:
                raise ValueError(
                    f"paper {paper.id} claims chunks {first}..{first + count - 1} of {self.n_chunks}"
                )
            paper_of[first : first + count] = array("i", [index]) * count
        if -1 in paper_of:
            raise ValueError(
                f"chunk {paper_of.index(-1)} belongs to no paper; the papers file is inconsistent"
            )
        return paper_of

    def _paper_vectors(self) -> PackedRows:
        return read_paper_vectors(
            self.read(self.files.paper_vectors), len(self.papers), self.files.paper_vectors
        )

    @property
    def keyword_index(self) -> TermIndex:
        """The ranged BM25 index (for measuring it against its exhaustive reading: prefix 0)."""
        return self._bm25

    @property
    def vectors_loaded(self) -> bool:
        return self._vectors is not None

    def load_vectors(self) -> DenseLists:
        """Read the dense directory (the centroids) and the papers' vectors; the browser calls this once
        keyword results show."""
        if self._vectors is None:
            if not self.files.dense:
                raise ValueError("the site lists no dense index (files.dense); rebuild it")
            vectors = DenseLists(
                read_dense_directory(self.read(self.files.dense), self.files.dense), self.blocks
            )
            if vectors.size != self.n_chunks:
                raise ValueError(
                    f"vector index holds {vectors.size} chunks but the chunk table lists {self.n_chunks}; rebuild"
                )
            self._vectors = vectors
            self._paper_view.load()
        return self._vectors

    def ranged_files(self) -> list[str]:
        """The index files a query reads ranges of (the dense index's once loaded), in the order a browser
        that can fetch only some of them whole should take them: first those whose reads a query waits
        on, a round trip each (the forward index, the groups of its common terms' frequencies scattered
        over the forward file, the dense lists), and last the dictionary, whose blocks are read while the
        encoder embeds the query (commit 3fb530f measured the order). The encoder's word-piece table is the
        encoder's, not the list's."""
        terms = self._bm25.directory
        dense = self._vectors.directory if self._vectors is not None else None
        files = [terms.forward_index[0], terms.forward]
        files += [dense.lists_file, dense.list_of_file, dense.rows_file] if dense else []
        files += [terms.pages, self.texts.path, terms.terms]
        return [path for path in files if path]

    def chunk(self, doc_id: int) -> TextChunk:
        """The chunk's text and span (its paper's head, then its group of chunks, each read once while kept)."""
        return self.texts.chunk(doc_id)

    # --- search ----------------------------------------------------------------------------------------

    def search(self, query: str, query_vector: Sequence[float] | None, options: SearchOptions) -> list[Hit]:
        return self.finish(self.prepare(query, options), query_vector)

    def prepare(self, query: str, options: SearchOptions) -> Prepared:
        """Everything a search does before it needs the query vector (parsing, filters, the keyword
        ranking), so that the browser can run it while the encoder's worker embeds the query."""
        parsed, allowed, limit = self._scope(query, options)
        if not parsed.terms and not parsed.phrases and allowed is not None:
            return Prepared(options, parsed, allowed, limit, browse=self._browse(allowed, options.k))
        named = self._finder.find(embedding_text(query))
        opening = self.papers[named.paper].first_chunk if named else None
        if opening is not None and allowed is not None and not allowed.test(opening):
            opening = None  # the filters rule the paper out
        if named and opening is not None and named.how == "bare id":  # the paper's passages, no others
            docs = self.papers[named.paper].doc_ids
            only = Allowed(docs.__contains__, len(docs), list(docs))
            return Prepared(options, parsed, only, limit, browse=self._browse(only, options.k), named=opening)
        bm25 = None
        if parsed.phrases:
            # Quoted phrases restrict both retrievers to the chunks verified to hold them.
            phrase_ranking = self._phrase_ranking(parsed, allowed, limit)
            phrase_docs = sorted(doc_id for doc_id, _ in phrase_ranking)
            allowed = Allowed(set(phrase_docs).__contains__, len(phrase_docs))
            if options.mode != "dense":
                bm25 = phrase_ranking
        elif options.mode != "dense":
            bm25 = self._bm25.search(
                parsed.terms,
                limit,
                allowed.test if allowed else None,
                _share(options.postings_prefix, allowed, self.n_chunks),
            )
        return Prepared(options, parsed, allowed, limit, bm25=bm25, named=opening)

    def dense_ahead(self, query: str, options: SearchOptions, query_vector: Sequence[float] | None) -> None:
        """The dense side of `finish`, run as soon as the query vector is in: in the browser its lists and
        rows are then fetched while `prepare` still fetches the keyword side's blocks, and `finish` finds
        its ranking kept (`DenseLists.search` keeps the last). A phrase query's dense side waits for the
        phrase check, which decides the chunks it may rank; a query of filters alone has none."""
        parsed, allowed, limit = self._scope(query, options)
        if query_vector is None or options.mode == "bm25" or parsed.phrases:
            return
        if not parsed.terms and allowed is not None:
            return
        self._dense_ranking(query_vector, limit, options, allowed, widen=True)
        if options.mode == "hybrid" and options.fusion == "weighted":
            self._paper_view.similarities(query_vector)

    def _scope(self, query: str, options: SearchOptions) -> tuple[Query, Allowed | None, int]:
        """The parsed query, the chunks its filters and the options' allow, and how many to rank."""
        check_options(options)
        parsed, query_filters = parse_search(query, self._filter.tags)
        allowed = self._filter.allowed(merge_filters(options.filters, query_filters))
        return parsed, allowed, max(options.candidates, options.k)

    def read_ahead(self, prepared: Prepared, most: int) -> list[Block]:
        """What reading the texts of the `most` chunks the search will likeliest show would fetch next
        (heads not kept, else groups): its best keyword matches, or the passages a filter-only query
        shows. Empty for a dense-only query: it has no ranking before the vector."""
        if prepared.browse is not None:
            doc_ids = [result.doc_id for result in prepared.browse]
        else:
            doc_ids = [doc_id for doc_id, _ in prepared.bm25 or ()]
            if prepared.named is not None:
                doc_ids.insert(0, prepared.named)
        return self.texts.unread(doc_ids[:most])

    def finish(self, prepared: Prepared, query_vector: Sequence[float] | None) -> list[Hit]:
        """The prepared search with the query vector: the dense ranking, fusion and the hits."""
        hits = self._finished(prepared, query_vector)
        self.forget_past_texts()
        return hits

    def forget_past_texts(self) -> None:
        """Text heads and groups past their bounds, the least recently used: once a step is done, never
        within one (`PaperTexts.trim`)."""
        self.texts.trim()

    def _finished(self, prepared: Prepared, query_vector: Sequence[float] | None) -> list[Hit]:
        options, allowed = prepared.options, prepared.allowed
        if prepared.browse is not None:
            self.texts.read(result.doc_id for result in prepared.browse)
            return [
                self._hit(result, (), named=result.doc_id == prepared.named) for result in prepared.browse
            ]
        if options.mode == "dense" and query_vector is None:
            raise ValueError(
                "mode 'dense' needs a query vector; encode the query first or use 'bm25'/'hybrid'"
            )
        rankings: dict[str, Ranking] = {}
        if prepared.bm25 is not None:
            rankings["bm25"] = prepared.bm25
        if options.mode != "bm25" and query_vector is not None:
            # The chunks a quoted phrase allows hold the query's own words, so those the dense side can rank
            # lie in the nearest lists; the chunks a filter allows (a paper, a year) may lie in any list, so
            # for a filter the scan widens until enough are found. Widened for a phrase, '"attention is all
            # you need"' read every list at 10,000 papers; unwidened, nearly every phrase query there keeps
            # its top 10 (commit 38c53cb).
            widen = not prepared.parsed.phrases
            rankings["dense"] = self._dense_ranking(query_vector, prepared.limit, options, allowed, widen)
        paper_scores: dict[int, float] = {}
        if (
            options.mode == "hybrid"
            and options.fusion == "weighted"
            and len(rankings) == 2
            and query_vector is not None
        ):
            paper_scores = self._paper_view.similarities(query_vector)
            rankings["dense"] = self._paper_view.with_openings(
                rankings["dense"], paper_scores, options.paper_openings, allowed
            )
        similarity = dict(rankings.get("dense", ()))
        fused = with_paper_prior(
            self._fuse(rankings, options), self._paper_of.__getitem__, paper_scores, options.paper_weight
        )
        top = diversify(
            fused,
            options.k,
            paper_of=self._paper_of.__getitem__,
            section_of=self.chunks.section.__getitem__,
            pages_of=self._pages_of,
            per_paper=options.per_paper,
            per_section=options.per_section,
            per_page=options.per_page,
        )
        if prepared.named is not None:
            top = named_first(top, fused, prepared.named, options.k)
        self.texts.read(result.doc_id for result in top)
        return [
            self._hit(
                result, prepared.parsed.terms, similarity.get(result.doc_id), result.doc_id == prepared.named
            )
            for result in top
        ]

    def doc_freq(self, term: str) -> int:
        """How many passages hold `term` (the weak-match check weighs the query's words by it)."""
        return self._bm25.doc_freq(term)

    def suggest(self, query: str) -> str | None:
        """`query` with each word the corpus never uses replaced by the closest word it does, or None."""
        return self.speller.suggest(query)

    def _browse(self, allowed: Allowed, k: int) -> list[Fused]:
        """A query of filters alone: the matching papers' passages with no words to rank them by.

        Each paper offers the first passage of each of its sections, in page order; papers take turns
        (newest first), so one paper shows its sections and many papers show their openings.
        """
        papers = [i for i, paper in enumerate(self.papers) if allowed.test(paper.first_chunk)]
        papers.sort(key=lambda i: (-(self.papers[i].year or 0), i))
        section = self.chunks.section
        openings = []
        for turn, paper_index in enumerate(papers):
            seen_sections: set[int] = set()
            for doc_id in self.papers[paper_index].doc_ids:
                if section[doc_id] not in seen_sections:
                    seen_sections.add(section[doc_id])
                    openings.append((len(seen_sections), turn, doc_id))
        openings.sort()
        return [Fused(doc_id, 0.0, dict.fromkeys(RETRIEVERS)) for _, _, doc_id in openings[:k]]

    def _pages_of(self, doc_id: int) -> range:
        return range(self.chunks.page_start[doc_id], self.chunks.page_end(doc_id) + 1)

    def _phrase_ranking(self, query: Query, allowed: Allowed | None, limit: int) -> Ranking:
        """BM25 ranking of chunks holding every quoted phrase: only chunks with all phrase terms are
        scored, and their text is checked in rank order until `limit` pass (of the first `PHRASE_CHECKS`),
        so few texts load. The texts are read in batches that double (`PHRASE_TEXTS_FIRST`, then twice as
        many): one at a time, a quoted title at 10,000 papers needed more fetch rounds than the browser
        allows a step."""
        key = (tuple(map(tuple, query.phrases)), tuple(query.terms), allowed)
        ranked = self._last_phrase_holders.get(key, lambda: self._phrase_holders(query, allowed))
        passing: list[tuple[int, float]] = []
        at, window = 0, PHRASE_TEXTS_FIRST
        while at < min(len(ranked), PHRASE_CHECKS) and len(passing) < limit:
            batch = ranked[at : min(at + window, PHRASE_CHECKS)]
            self.texts.read(doc_id for doc_id, _ in batch)
            for doc_id, score in batch:
                text = self.chunk(doc_id).text
                if all(contains_phrase(text, phrase) for phrase in query.phrases):
                    passing.append((doc_id, score))
                    if len(passing) == limit:
                        break
            at, window = at + window, 2 * window
        return passing

    def _phrase_holders(self, query: Query, allowed: Allowed | None) -> Ranking:
        """BM25 ranking of the allowed chunks that hold every term of every phrase (the texts are checked
        after: this is kept for the runs of the step that fetch them)."""
        holding = [term for phrase in query.phrases for term in phrase]
        return self._bm25.rank_holders(holding, query.terms, allowed.test if allowed else None)

    def _dense_ranking(
        self,
        query_vector: Sequence[float],
        limit: int,
        options: SearchOptions,
        allowed: Allowed | None,
        widen: bool,
    ) -> Ranking:
        """Nearest chunks as (doc id, cosine similarity), best first, among the allowed ones."""
        return self.load_vectors().search(
            query_vector,
            limit,
            options.scan,
            options.rescore,
            allowed.test if allowed else None,
            widen,
            allowed.docs if allowed else None,
        )

    def _fuse(self, rankings: dict[str, Ranking], options: SearchOptions) -> list[Fused]:
        if len(rankings) == 1:
            ((name, ranking),) = rankings.items()
            return single_ranking(name, ranking, RETRIEVERS)
        if options.fusion == "rrf":
            return reciprocal_rank_fusion(rankings, options.rrf_k)
        weights = {"dense": options.dense_weight, "bm25": 1.0 - options.dense_weight}
        return weighted_score_fusion(rankings, weights)

    def _hit(
        self, result: Fused, query_terms: Iterable[str], similarity: float | None = None, named: bool = False
    ) -> Hit:
        doc_id = result.doc_id
        paper = self.papers[self._paper_of[doc_id]]
        chunk = self.chunk(doc_id)
        snippet = make_snippet(chunk.text, query_terms)
        return Hit(
            doc_id=doc_id,
            chunk_id=chunk.id,
            arxiv_id=paper.id,
            title=paper.title,
            page_start=self.chunks.page_start[doc_id],
            page_end=self.chunks.page_end(doc_id),
            section=self.chunks.section_of(doc_id),
            score=result.score,
            ranks=dict(result.ranks),
            text=chunk.text,
            snippet=snippet.text,
            highlights=snippet.highlights,
            similarity=similarity,
            named=named,
        )


def _share(prefix: int, allowed: Allowed | None, n_docs: int) -> int:
    """Postings to read per term when a filter allows `allowed.count` of `n_docs`: as many more as the
    filter leaves out, so a filtered query still meets about as many allowed documents."""
    if prefix <= 0 or allowed is None or allowed.count <= 0:
        return prefix
    return prefix * math.ceil(n_docs / allowed.count)
