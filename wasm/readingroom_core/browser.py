"""Where a built site meets its readers: the Web Worker, the CLI, evaluation and the Node driver.

`open_site` turns a reader (site path -> bytes) into a `Site`; `hit_json` is the one JSON shape of a
search result, which the browser draws and `python -m builder query --json` prints. The worker
(`wasm/runtime/worker.js`) calls `Site.search`, `Site.prepare`, `Site.read_paper_text`, `Site.load_semantic`,
`Site.encode_ids` and `Site.use_text_row_products` and passes only strings, numbers and bytes across, so
JavaScript never sees a Python object or a Python string offset.

Importing this module imports every module of the core: the worker's memory snapshot, taken right
after the import, must hold all the code a restored interpreter will run (the files are not on disk).
"""

from __future__ import annotations

import hashlib
import json
import os
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from readingroom_core import answers
from readingroom_core.engine import Hit, Prepared, SearchEngine, SearchOptions, weak_match
from readingroom_core.filters import Filters
from readingroom_core.querysyntax import QuerySyntaxError, embedding_text
from readingroom_core.sitedata import MANIFEST_FILE, Manifest, PaperRecord, read_manifest
from readingroom_core.tokenizer import WordPieceTokenizer

Reader = Callable[[str], bytes]
# Paper text files a search reads ahead while the query is embedded. Over the 30 dev questions asked in
# turn on the 112-paper site, the papers of the best keyword matches held most of the papers a first-sight
# hybrid top 10 shows: reads left for after the vector 58 -> 18 (2 papers) -> 9 (3) -> 5 (4), for 13, 24
# and 31 more papers read in all (of 112; about 21 KB each as .gz).
READ_AHEAD_PAPERS = 3


def as_bytes(data) -> bytes:
    """A reader's answer as bytes: in the worker, reads return a JavaScript Uint8Array (a JsProxy)."""
    return data.to_bytes() if hasattr(data, "to_bytes") else data


def sha256_hex(data) -> str:
    """The worker checks a paper text it reads synchronously with this: Web Crypto is async only."""
    return hashlib.sha256(as_bytes(data)).hexdigest()


GZIP_MAGIC = b"\x1f\x8b"


def gunzipped(data) -> bytes:
    """A paper text the worker read synchronously from its .gz copy (DecompressionStream is async only).
    Bytes that are not gzip (a host that decoded the copy on its way) come back as they are."""
    raw = as_bytes(data)
    return zlib.decompress(raw, wbits=31) if raw[:2] == GZIP_MAGIC else raw  # 31: a gzip header


def folder_reader(site_dir: str | os.PathLike) -> Reader:
    """A reader over a site folder on disk (CPython, or a folder Node mounts into Pyodide)."""

    def read(relative_path: str) -> bytes:
        with open(os.path.join(site_dir, relative_path), "rb") as data_file:
            return data_file.read()

    return read


def open_folder(site_dir: str | os.PathLike) -> Site:
    """The site built into `site_dir`, with an error that says what to do when there is none."""
    path = os.path.join(site_dir, MANIFEST_FILE)
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path} does not exist: build the site first (`python -m builder build`)")
    return open_site(folder_reader(site_dir))


def open_site(read: Reader, manifest_text: str | bytes | None = None) -> Site:
    """A site from its reader; `manifest_text` when the caller has fetched the manifest already."""
    if manifest_text is None:
        manifest_text = as_bytes(read(MANIFEST_FILE))
    manifest = read_manifest(manifest_text)
    return Site(manifest, SearchEngine(manifest.files, lambda path: as_bytes(read(path))))


def hit_json(hit: Hit, paper: PaperRecord) -> dict:
    """A result as every front end shows it: where it is, how it ranked, and its snippet three ways
    (plain text, highlight offsets, and [text, marked] runs ready to draw)."""
    return {
        "doc_id": hit.doc_id,
        "chunk_id": hit.chunk_id,
        "arxiv_id": hit.arxiv_id,
        "title": hit.title,
        "authors": list(paper.authors),
        "year": paper.year,
        "page_start": hit.page_start,
        "page_end": hit.page_end,
        "section": hit.section,
        "score": hit.score,
        "ranks": hit.ranks,
        "text": hit.text,
        "snippet": hit.snippet,
        "highlights": [list(span) for span in hit.highlights],
        "segments": segments(hit.snippet, hit.highlights),
    }


def segments(snippet: str, highlights) -> list[list]:
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


def request_options(request: dict) -> SearchOptions:
    """A search request's options: what the page sets (k, mode, filters), the rest as the engine's defaults."""
    return SearchOptions(
        k=request.get("k") or 20,
        mode=request.get("mode") or "hybrid",
        filters=request_filters(request.get("filters") or {}),
    )


def request_filters(data: dict) -> Filters:
    """The search form's facet choices (year range, categories, tags) as engine filters."""
    return Filters(
        year_min=data.get("year_min"),
        year_max=data.get("year_max"),
        categories=tuple(data.get("categories") or ()),
        tags=tuple(data.get("tags") or ()),
    )


@dataclass
class Site:
    """One opened site: its manifest, its engine, and (once semantic search loads) its query tokenizer."""

    manifest: Manifest
    engine: SearchEngine
    tokenizer: WordPieceTokenizer | None = None
    papers_by_id: dict[str, PaperRecord] = field(init=False)
    # What `prepare` did for the next `search`: (the request without its vector, the prepared search, the
    # suggestion)
    _prepared: tuple[dict, Prepared, str | None] | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.papers_by_id = {paper.id: paper for paper in self.engine.papers}

    def hit_json(self, hit: Hit) -> dict:
        return hit_json(hit, self.papers_by_id[hit.arxiv_id])

    def load_semantic(self) -> None:
        """Vectors and tokenizer (in the browser the files were fetched, with progress, already).

        The whole graph is checked here, once: a damaged one would otherwise load fine and then fail
        every query that walks into the damage."""
        self.engine.load_vectors().check_graph()
        files = self.manifest.files
        read = self.engine.read
        self.tokenizer = WordPieceTokenizer.from_data(
            read(files.vocab).decode("utf-8"),
            json.loads(read(files.char_classes)),
            max_length=self.manifest.encoder["max_length"],
        )

    def vector_rows(self) -> bytes:
        """The stored rows as signed int8 bytes, row `slot` at `slot * dimensions` (`use_text_row_products`)."""
        return self.engine.load_vectors().int8_rows()

    def use_text_row_products(self, bind: Callable[[str], Callable[[str], str]]) -> None:
        """Let the HNSW search take its integer dot products from the worker's typed arrays.

        `bind(query)` gets the query's integers as comma-separated text and returns a function from
        comma-separated row slots (of `vector_rows`) to their products, comma-separated: exact integers,
        so results are the same as with Python's own products (hnsw.RowProducts); the core checks that
        before it uses them.
        """

        def row_products(fine: list[int]) -> Callable[[Sequence[int]], list[int]]:
            products = bind(",".join(map(str, fine)))

            def of(slots: Sequence[int]) -> list[int]:
                return list(map(int, products(",".join(map(str, slots))).split(","))) if slots else []

            return of

        self.engine.load_vectors().use_row_products(row_products)

    def encode_ids(self, query: str) -> list[int]:
        """Token ids of the query text the model should see: field filters such as year:2021 removed."""
        if self.tokenizer is None:
            raise RuntimeError("load_semantic() first: the tokenizer comes with the semantic files")
        text = embedding_text(query)
        return self.tokenizer.encode(self.manifest.model.query_prefix + text) if text else []

    def prepare(self, request_json: str) -> str:
        """Do the part of `search(request_json)` that needs no query vector now, while the encoder's worker
        embeds the query, and keep it for that search. Returns, as JSON, the papers (indexes) whose text
        files the reply will likely show and that are not loaded yet, likeliest first: the worker reads
        them (`read_paper_text`) while it waits for the vector."""
        request = json.loads(request_json)
        try:
            prepared = self.engine.prepare(request["query"], request_options(request))
        except (QuerySyntaxError, ValueError):
            return "[]"  # `search` reports it
        self._prepared = (request, prepared, self._suggestion(request))
        return json.dumps(self.engine.unread_papers(prepared, READ_AHEAD_PAPERS))

    def read_paper_text(self, paper_index: int) -> None:
        self.engine.text_file(paper_index)

    def _suggestion(self, request: dict) -> str | None:
        return self.engine.suggest(request["query"]) if request.get("suggest", True) else None

    def search(self, request_json: str) -> str:
        """One search request from the page, as JSON: {query, k, mode, filters, vector (or null)}.

        The reply is {"hits": [hit_json, ...], "weak": bool} or {"error": message} for a query the engine
        rejects; "weak" says that no passage matches the query's words and none is close in meaning.
        """
        request = json.loads(request_json)
        kept, self._prepared = self._prepared, None
        try:
            if kept and kept[0] == {key: value for key, value in request.items() if key != "vector"}:
                _, prepared, suggestion = kept
            else:
                prepared = self.engine.prepare(request["query"], request_options(request))
                suggestion = self._suggestion(request)
            hits = self.engine.finish(prepared, request.get("vector"))
        except (QuerySyntaxError, ValueError) as error:
            return json.dumps({"error": str(error)})
        weak = bool(hits) and bool(embedding_text(request["query"])) and weak_match(hits)
        return json.dumps(
            {"hits": [self.hit_json(hit) for hit in hits], "weak": weak, "suggestion": suggestion}
        )

    # --- ask mode: evidence and citation checks (readingroom_core.answers), JSON in and out ---------

    def ask_retrieval_query(self, request_json: str) -> str:
        """The text whose vector `ask_evidence` wants: {question, history} -> the retrieval query."""
        return answers.retrieval_text(json.loads(request_json))

    def ask_evidence(self, request_json: str) -> str:
        """{question, history, budget, vector (or null)} -> the evidence JSON (`answers.evidence`), each
        source with its paper's authors, year and categories (for the BibTeX export); or {"error"}."""
        request = json.loads(request_json)
        try:
            found = answers.evidence(self.engine, request, request.get("vector"))
        except (answers.PromptTooLong, QuerySyntaxError, ValueError) as error:
            return json.dumps({"error": str(error)})
        for source in found["sources"]:
            paper = self.papers_by_id[source["arxiv_id"]]
            source.update(authors=list(paper.authors), year=paper.year, categories=list(paper.categories))
        return json.dumps(found)

    def verify_answer(self, request_json: str) -> str:
        """{answer, evidence: {sources, pages}} -> `answers.verify`'s JSON."""
        request = json.loads(request_json)
        return json.dumps(answers.verify(request["answer"], request["evidence"]))
