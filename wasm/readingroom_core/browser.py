"""Where a built site meets its readers: the Web Worker, the CLI, evaluation and the Node driver.

`open_site` turns a reader (site path -> bytes) into a `Site`; `hit_json` is the one JSON shape of a
search result, which the browser draws and `python -m builder query --json` prints. The worker
(`wasm/runtime/worker.js`, its messages typed in `wasm/runtime/protocol.js`) calls `Site.prepare`,
`Site.dense_ahead`, `Site.search`, `Site.discard`, `Site.load_semantic`, `Site.encode_ids` and
`Site.word_piece_rows`; it hands `open_site` a synchronous range reader (a Range request, or a slice of a
whole file where the host ignores Range). Requests and replies cross as JSON text, vectors, word-piece
rows and dot products as typed arrays (their bytes), so JavaScript never sees a Python object or a Python
string offset. Every string that arrives is made `well_formed` first (a lone surrogate from a stream
would otherwise fail each later turn that encodes it).

Importing this module imports every module of the core: the worker's memory snapshot, taken right
after the import, must hold all the code a restored interpreter will run (the files are not on disk).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from readingroom_core import answers
from readingroom_core.engine import Hit, Prepared, SearchEngine
from readingroom_core.filters import Filters
from readingroom_core.formats.manifest import MANIFEST_FILE, Manifest, read_manifest
from readingroom_core.formats.missing import read_missing
from readingroom_core.formats.papers import PaperRecord
from readingroom_core.formats.versioned import gunzipped as unpacked
from readingroom_core.formats.wordpieces import read_word_piece_directory
from readingroom_core.in_context import page_in_context
from readingroom_core.library import CorpusLibrary
from readingroom_core.options import SearchOptions
from readingroom_core.querysyntax import QuerySyntaxError, embedding_text
from readingroom_core.ranges import DamagedData, RangeRead, folder_range_reader, folder_reader
from readingroom_core.readers.missing import MissingIndex
from readingroom_core.readers.wordpieces import WordPieceRows
from readingroom_core.tokenizer import WordPieceTokenizer
from readingroom_core.weakmatch import weak_match
from readingroom_core.wellformed import loads, well_formed

Reader = Callable[[str], bytes]
# The best keyword matches whose texts a search reads ahead while the query is embedded (their papers'
# heads, or their groups where the heads are kept): they hold most of the passages a first-sight hybrid
# top 10 shows, and a group costs about 2 KB.
READ_AHEAD_CHUNKS = 10


def as_bytes(data: Any) -> bytes:
    """Bytes from the worker arrive as a JavaScript typed array (a JsProxy); CPython callers pass bytes."""
    converted: bytes = data.to_bytes() if hasattr(data, "to_bytes") else data
    return converted


def sha256_hex(data: Any) -> str:
    """The worker checks a file it reads synchronously with this: Web Crypto is async only."""
    return hashlib.sha256(as_bytes(data)).hexdigest()


def gunzipped(data: Any) -> bytes:
    """A file the worker read synchronously from its .gz copy (DecompressionStream is async only). Bytes
    that are not gzip (a host that decoded the copy on its way) come back as they are."""
    return unpacked(as_bytes(data))


def query_vector(data: Any) -> list[float] | None:
    """The query vector as the engine takes it. The worker hands the encoder's Float32Array over as it
    is (its float32 bytes); CPython callers pass a list of floats, or None for no vector."""
    if data is None:
        return None
    raw = as_bytes(data)
    if isinstance(raw, bytes | bytearray | memoryview):
        return array("f", bytes(raw)).tolist()
    return list(raw)


def open_folder(site_dir: str | os.PathLike[str]) -> Site:
    """The site built into `site_dir`, with an error that says what to do when there is none."""
    path = os.path.join(site_dir, MANIFEST_FILE)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} does not exist: build the site first (`python -m builder build`)")
    return open_site(folder_reader(site_dir), read_range=folder_range_reader(site_dir))


def open_site(
    read: Reader,
    manifest_text: str | bytes | None = None,
    read_range: RangeRead | None = None,
    announce: Callable[[str], Any] | None = None,
) -> Site:
    """A site from its readers (whole files, and ranges of them); `manifest_text` when the caller has
    fetched the manifest already. Without `read_range` ranges are sliced from whole files; `announce`
    (the worker's) hears every batch of ranges before it is read, as JSON [[path, start, end], ...]
    (`ranges.Announce`)."""
    if manifest_text is None:
        manifest_text = as_bytes(read(MANIFEST_FILE))
    manifest = read_manifest(manifest_text)
    ranged = None
    if read_range is not None:
        ranged = lambda path, start, end: as_bytes(read_range(path, start, end))  # noqa: E731
    heard = None
    if announce is not None:
        heard = lambda ranges: announce(json.dumps(ranges))  # noqa: E731  (JSON: no proxies to free)
    return Site(manifest, SearchEngine(manifest.files, lambda path: as_bytes(read(path)), ranged, heard))


def hit_json(hit: Hit, paper: PaperRecord) -> dict[str, Any]:
    """A result as every front end shows it: where it is, how it ranked, its snippet as plain text (the
    CLI prints it) and as [text, marked] runs (the page draws them)."""
    return {
        "doc_id": hit.doc_id,
        "chunk_id": hit.chunk_id,
        "arxiv_id": hit.arxiv_id,
        "version": paper.version,  # links and citations name the version the site indexed
        "title": hit.title,
        "authors": list(paper.authors),
        "year": paper.year,
        "page_start": hit.page_start,
        "page_end": hit.page_end,
        "section": hit.section,
        "score": hit.score,
        "ranks": hit.ranks,
        "snippet": hit.snippet,
        "segments": segments(hit.snippet, hit.highlights),
    }


def segments(snippet: str, highlights: Sequence[tuple[int, int]]) -> list[list[Any]]:
    """Snippet as [text, marked] runs, so JavaScript never has to map Python string offsets."""
    runs, at = [], 0
    for start, end in highlights:
        if start > at:
            runs.append([snippet[at:start], False])
        runs.append([snippet[start:end], True])
        at = end
    if at < len(snippet):
        runs.append([snippet[at:], False])
    return runs


def request_options(request: dict[str, Any]) -> SearchOptions:
    """A search request's options: what the page sets (k, mode, filters), the rest as the engine's defaults."""
    return SearchOptions(
        k=request.get("k") or 20,
        mode=request.get("mode") or "hybrid",
        filters=request_filters(request.get("filters") or {}),
    )


def request_filters(data: dict[str, Any]) -> Filters:
    """The search form's facet choices (year range, categories, tags) as engine filters."""
    return Filters(
        year_min=data.get("year_min"),
        year_max=data.get("year_max"),
        categories=tuple(data.get("categories") or ()),
        tags=tuple(data.get("tags") or ()),
    )


@dataclass(frozen=True)
class PreparedSearch:
    """A search request parsed once and run up to the point where it needs the query vector."""

    query: str
    prepared: Prepared
    suggestion: str | None


@dataclass
class Site:
    """One opened site: its manifest, its engine, and (once semantic search loads) its query tokenizer and
    the encoder's word-piece rows."""

    manifest: Manifest
    engine: SearchEngine
    tokenizer: WordPieceTokenizer | None = None
    word_pieces: WordPieceRows | None = None
    papers_by_id: dict[str, PaperRecord] = field(init=False)
    # Searches `prepare` parsed, by the id it gave them, until `discard`: the worker may have several
    # under way (a query typed on while the previous one waits for its vector).
    _searches: dict[int, PreparedSearch] = field(init=False, default_factory=dict)
    _search_ids: Iterator[int] = field(init=False, default_factory=itertools.count)
    _missing: MissingIndex | None = field(init=False, default=None)  # read at the first search

    def __post_init__(self) -> None:
        self.papers_by_id = {paper.id: paper for paper in self.engine.papers}

    def hit_json(self, hit: Hit) -> dict[str, Any]:
        return hit_json(hit, self.papers_by_id[hit.arxiv_id])

    def load_semantic(self) -> None:
        """The dense directory, the tokenizer and the word-piece directory (in the browser the files were
        fetched, with progress, already); the lists, rows and word pieces a query needs are read by range
        when it runs."""
        self.engine.load_vectors()
        files = self.manifest.files
        read = self.engine.read
        self.word_pieces = WordPieceRows(
            read_word_piece_directory(read(files.word_pieces), files.word_pieces), self.engine.blocks
        )
        self.tokenizer = WordPieceTokenizer.from_data(
            read(files.vocab).decode("utf-8"),
            json.loads(read(files.char_classes)),
            max_length=self.manifest.encoder["max_length"],
        )

    def ranged_files(self) -> str:
        """The site paths of the index files read by range (JSON), in the order the worker fetches them
        whole, as many as fit the site's bound."""
        return json.dumps(self.engine.ranged_files())

    def encode_ids(self, query: str) -> list[int]:
        """Token ids of the query text the model should see: field filters such as year:2021 removed."""
        if self.tokenizer is None:
            raise RuntimeError("load_semantic() first: the tokenizer comes with the semantic files")
        text = embedding_text(well_formed(query))
        return self.tokenizer.encode(self.manifest.model.query_prefix + text) if text else []

    def word_piece_rows(self, ids_json: str) -> bytes:
        """The encoder's inputs for token ids [id, ...] (JSON): their codes (int8, a row of `dims` each),
        then their scales (little-endian float32), read by range."""
        if self.word_pieces is None:
            raise RuntimeError(
                "load_semantic() first: the word-piece directory comes with the semantic files"
            )
        codes, scales = self.word_pieces.read(loads(ids_json))
        return codes + scales

    def prepare(self, request_json: str) -> str:
        """Parse a search request ({query, k, mode, filters}) and do the part of the search that needs no
        query vector, while the encoder's worker embeds the query.

        Returns JSON: {"search": id, "read_ahead": [[path, start, end], ...]}, the id for `search` and the
        ranges of the texts the reply will likely show that are not kept yet, likeliest first (the worker
        fetches them while it waits for the vector, and `search` reads them from there); or {"error":
        message} for a query the engine rejects, and then nothing is kept.
        """
        request = loads(request_json)
        query = request["query"]
        try:
            prepared = self.engine.prepare(query, request_options(request))
        except (QuerySyntaxError, ValueError) as error:
            return json.dumps({"error": str(error)})
        except DamagedData as error:  # a quoted phrase is checked in the passage texts
            return self._texts_damaged(error)
        search_id = next(self._search_ids)
        self._searches[search_id] = PreparedSearch(query, prepared, self.engine.suggest(query))
        read_ahead = [
            [block.path, block.start, block.end]
            for block in self.engine.read_ahead(prepared, READ_AHEAD_CHUNKS)
        ]
        return json.dumps({"search": search_id, "read_ahead": read_ahead})

    def dense_ahead(self, request_json: str, vector: Any) -> None:
        """The dense side of a search request ({query, k, mode, filters}), run by the worker as soon as the
        encoder answers, while `prepare` may still be fetching the keyword side: the lists and rows the
        query needs travel beside its postings rather than after them, and `search` finds them kept. A
        request the engine rejects is `prepare`'s to answer, and a failure to read the dense side is
        `search`'s (which falls back to keyword results), so neither is raised here."""
        request = loads(request_json)
        try:
            self.engine.dense_ahead(request["query"], request_options(request), query_vector(vector))
        except (QuerySyntaxError, ValueError, DamagedData):
            pass

    def search(self, search_id: int, vector: Any = None) -> str:
        """Finish the prepared search `search_id` with the query vector (None: keyword side only).

        The reply is {"hits": [hit_json, ...], "weak": bool, "suggestion": str | None, "embeds": bool,
        "missing": [work, ...]} (`missing_json`)
        or {"error": message} for a request the engine rejects (dense mode without a vector); "weak" says
        that the best matches are weak in words and in meaning (`weakmatch`); "embeds" that the query has
        text to embed (without, semantic search would change nothing). The search stays prepared until
        `discard`, so that a failed semantic side can be answered again keyword-only.
        """
        kept = self._searches[search_id]
        try:
            hits = self.engine.finish(kept.prepared, query_vector(vector))
        except (QuerySyntaxError, ValueError) as error:
            return json.dumps({"error": str(error)})
        except DamagedData as error:
            return self._texts_damaged(error)
        engine = self.engine
        terms = kept.prepared.parsed.terms
        embeds = bool(embedding_text(kept.query))
        weak = embeds and weak_match(hits, terms, engine.doc_freq, engine.n_chunks)
        hits_json = [self.hit_json(hit) for hit in hits]
        reply = {"hits": hits_json, "weak": weak, "suggestion": kept.suggestion, "embeds": embeds}
        reply["missing"] = self.missing_json(kept.query)
        return json.dumps(reply)

    def missing_json(self, query: str) -> list[dict[str, Any]]:
        """The works the list cites but lacks that `query` names (`readers.missing`), each with the list
        papers that cite it and the page where each does, for the page's "not on this list" note."""
        if self._missing is None:
            path = self.manifest.files.missing
            self._missing = MissingIndex(read_missing(self.engine.read(path), path) if path else [])
        return [
            {
                "arxiv_id": work.arxiv_id,
                "title": work.title,
                "names": list(work.names),
                "cited_by": [
                    {"arxiv_id": citing, "title": self.papers_by_id[citing].title, "page": page}
                    for citing, page in work.cited_by
                    if citing in self.papers_by_id
                ],
            }
            for work in self._missing.match(query)
        ]

    def _texts_damaged(self, error: DamagedData) -> str:
        """The reply for damaged passage texts: both search modes read them for the hits they show, so it
        is this search's error, named for the texts file; damage elsewhere (the dense side's files) is
        raised on, for the worker to answer keyword-only."""
        texts = self.manifest.files.texts
        if not texts or not str(error).startswith(texts):
            raise error
        message = f"{error}: the passage texts are damaged, so this search cannot show its passages; rebuild the site"
        return json.dumps({"error": message, "damaged": texts})

    def discard(self, search_id: int) -> None:
        """Forget a prepared search once its reply has gone."""
        self._searches.pop(search_id, None)

    def page_in_context(self, request_json: str) -> str:
        """{arxiv_id, page, chunk_id?, quote?} -> `in_context.page_in_context`'s JSON: the page's text with
        the passage or quote marked, for the reading view."""
        request = loads(request_json)
        try:
            found = page_in_context(
                self.engine,
                str(request["arxiv_id"]),
                int(request["page"]),
                str(request.get("chunk_id") or ""),
                str(request.get("quote") or ""),
            )
        except DamagedData as error:
            return self._texts_damaged(error)
        return json.dumps(found)

    # --- ask mode: evidence and citation checks (readingroom_core.answers), JSON in and out ---------

    def ask_retrieval_query(self, request_json: str) -> str:
        """The text whose vector `ask_evidence` wants: {question, history} -> the retrieval query."""
        return answers.retrieval_text(loads(request_json))

    def ask_evidence(self, request_json: str, vector: Any = None) -> str:
        """{question, history, budget} and the retrieval query's vector (or None) -> the evidence JSON
        (`answers.evidence`), each source with its paper's authors, year and categories (for the BibTeX
        export); or {"error"}."""
        request = loads(request_json)
        try:
            found = answers.evidence(self.engine, request, query_vector(vector))
        except (answers.PromptTooLong, QuerySyntaxError, ValueError) as error:
            return json.dumps({"error": str(error)})
        except DamagedData as error:
            return self._texts_damaged(error)
        for source in found["sources"]:
            paper = self.papers_by_id[source["arxiv_id"]]
            source.update(authors=list(paper.authors), year=paper.year, categories=list(paper.categories))
        self.engine.forget_past_texts()
        return json.dumps(found)

    def verify_answer(self, request_json: str) -> str:
        """{answer, evidence: {sources, pages}} -> `answers.verify`'s JSON, with the whole reading list
        at hand for citations outside the sources, each citation with its paper's version ("" when the
        list lacks it)."""
        request = loads(request_json)
        library = CorpusLibrary(self.engine)
        verdict = answers.verify(request["answer"], request["evidence"], library)
        for citation in verdict.get("citations", []):  # its links name the version the site indexed
            paper = self.papers_by_id.get(citation.get("arxiv_id", ""))  # none for an id with its version
            citation["version"] = paper.version if paper else ""
        self.engine.forget_past_texts()
        return json.dumps(verdict)
