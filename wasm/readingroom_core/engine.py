"""The site's search: BM25 and dense retrieval over the built data files, fused, filtered, with snippets.

The browser (Pyodide) and the CLI/eval (CPython) both run this class, so offline numbers are what
visitors get. Papers, the chunk table and the postings load at construction, so keyword results come
first; the vectors load on first dense use (or `load_vectors()`), and each paper's text file only when
one of its chunks is shown or must be checked for a quoted phrase.

Query syntax: free text, "quoted phrases" that must occur in the chunk, and field filters
`year:2021`, `year:2020..2023`, `year:>=2021`, `cat:cs.CL` (or `cat:cs` for the whole archive),
`tag:rag`, `id:2005.11401`, `author:lewis` (`author:"van den"` for spaces). Values of one field are
alternatives (any may match); different fields must all match.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from operator import mul

from readingroom_core.analysis import Query, analyze, contains_phrase, parse_query
from readingroom_core.bm25 import BM25Index
from readingroom_core.fusion import (
    Fused,
    Ranking,
    diversify,
    reciprocal_rank_fusion,
    single_ranking,
    weighted_score_fusion,
    with_paper_prior,
)
from readingroom_core.hnsw import UsearchFile
from readingroom_core.sitedata import read_chunk_table, read_paper_text, read_paper_vector, read_papers
from readingroom_core.snippets import make_snippet

try:
    from math import sumprod as _dot
except ImportError:  # Python < 3.12

    def _dot(a, b):
        return sum(map(mul, a, b))


MODES = ("hybrid", "bm25", "dense")
FUSIONS = ("weighted", "rrf")
RETRIEVERS = ("bm25", "dense")
# A filtered dense query either scores every allowed chunk exactly or over-fetches from the HNSW graph
# (about limit * chunks / allowed results). One fetched result costs about as much as 5 exact scores in
# CPython (20k chunks, k 100..1600), so the scan is chosen when allowed**2 <= 5 * limit * chunks.
EXACT_SCAN_COST_RATIO = 5

Reader = Callable[[str], bytes]


@dataclass(frozen=True)
class Filters:
    year_min: int | None = None
    year_max: int | None = None
    categories: tuple[str, ...] = ()  # "cs.CL", or an archive such as "cs"
    tags: tuple[str, ...] = ()
    paper_ids: tuple[str, ...] = ()  # arXiv ids; a version suffix is ignored
    authors: tuple[str, ...] = ()  # case-insensitive substring of any author name

    def is_empty(self) -> bool:
        return self == Filters()


@dataclass
class SearchOptions:
    k: int = 10
    mode: str = "hybrid"  # "hybrid" | "bm25" | "dense"
    fusion: str = "weighted"  # "weighted" (min-max scores) | "rrf"
    # weighted fusion; BM25 gets 1 - dense_weight. 0.3 measured best over the 54 answerable dev + extra questions and
    # on BEIR (SciFact 0.733 vs 0.725 at 0.6; NFCorpus, ArguAna unchanged); 0.6 lost MRR 0.75 -> 0.63 on extra.
    dense_weight: float = 0.3
    # The paper view (weighted hybrid only, on sites whose papers carry a vector): each result gains
    # paper_weight x its paper's similarity to the query (min-max over the papers), and the opening passage
    # of the paper_openings most similar papers joins the dense candidates with that similarity. Chosen on
    # the tuning questions (dev, extra, tune; `eval --paper-weight 0 --paper-openings 0` turns it off): on
    # tune, paraphrase R@10 0.60 -> 0.71 and MRR 0.47 -> 0.49; extra MRR 0.77 -> 0.80; dev MRR 0.81 -> 0.79.
    # 0.5 did better on tune alone and worse on extra.
    paper_weight: float = 0.3
    paper_openings: int = 3
    rrf_k: int = 60
    # Per retriever, before fusion. 60 instead of 100: the browser's core time per hybrid query fell from
    # p50 19-20 ms to 14-15 ms on the mirror site (the HNSW beam is max(ef, candidates)), and page-level
    # MRR and nDCG@10 stayed within 0.01 on both question sets.
    candidates: int = 60
    # Diversity caps, 0 = unlimited. One chunk per page: over the 54 answerable dev + extra questions this
    # took page-level nDCG@10 from 0.69 to 0.75 (dev) and 0.68 to 0.72 (extra); the old caps of 5 per paper
    # and 2 per section cost 0.05 (dev) and 0.01 (extra), as questions often have several gold pages in one paper.
    per_paper: int = 10  # most chunks of one paper in the top k
    per_section: int = 3  # most chunks of one (paper, section) in the top k
    per_page: int = 1  # most chunks citing one page of a paper (a chunk cites every page it spans)
    ef: int = 64
    filters: Filters = field(default_factory=Filters)


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


@dataclass(frozen=True)
class Prepared:
    """A search up to the point where it needs the query vector (`SearchEngine.prepare`)."""

    options: SearchOptions
    parsed: Query
    allowed: _Allowed | None
    limit: int  # candidates per retriever
    bm25: Ranking | None = None  # None when the keyword side takes no part (dense mode)
    browse: list[Fused] | None = None  # the results of a query of filters alone


class QuerySyntaxError(ValueError):
    """A field filter in the query string has a value it cannot mean."""


# --- query string ------------------------------------------------------------------------------------

_LIST_FIELDS = {"cat": "categories", "tag": "tags", "id": "paper_ids", "author": "authors"}
_FIELD_RE = re.compile(r'(?<!\S)(year|cat|tag|id|author):(?:"([^"]*)"|([^\s"]+))', re.IGNORECASE)
_YEAR_RANGE_RE = re.compile(r"(\d{4})?\.\.(\d{4})?")
_YEAR_COMPARE_RE = re.compile(r"(>=|<=|>|<|=)?(\d{4})")
_ARXIV_VERSION_RE = re.compile(r"v\d+$")


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


def parse_search(query: str) -> tuple[Query, Filters]:
    """Field filters taken out of `query`, and the rest analysed into terms and phrases."""
    values: dict[str, list[str]] = {name: [] for name in _LIST_FIELDS.values()}
    year_min = year_max = None
    for match in _FIELD_RE.finditer(query):
        name = match.group(1).lower()
        value = (match.group(2) if match.group(2) is not None else match.group(3)).strip()
        if not value:
            continue
        if name == "year":
            low, high = parse_year(value)
            year_min = _tighter(year_min, low, max)
            year_max = _tighter(year_max, high, min)
        else:
            values[_LIST_FIELDS[name]].append(value)
    filters = Filters(year_min=year_min, year_max=year_max, **{name: tuple(v) for name, v in values.items()})
    return parse_query(embedding_text(query)), filters


def embedding_text(query: str) -> str:
    """What the query encoder should read: the query without its field filters (year:…, cat:…).

    The browser and the CLI both embed this, so their query vectors agree.
    """
    return " ".join(_FIELD_RE.sub(" ", query).split())


def _tighter(current: int | None, new: int | None, pick: Callable[[int, int], int]) -> int | None:
    if current is None or new is None:
        return new if current is None else current
    return pick(current, new)


def merge_filters(first: Filters, second: Filters) -> Filters:
    """Both filters at once: year bounds intersect, value lists join (each list is a set of alternatives)."""
    return Filters(
        year_min=_tighter(first.year_min, second.year_min, max),
        year_max=_tighter(first.year_max, second.year_max, min),
        categories=tuple(dict.fromkeys((*first.categories, *second.categories))),
        tags=tuple(dict.fromkeys((*first.tags, *second.tags))),
        paper_ids=tuple(dict.fromkeys((*first.paper_ids, *second.paper_ids))),
        authors=tuple(dict.fromkeys((*first.authors, *second.authors))),
    )


def check_options(options: SearchOptions) -> None:
    if options.mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {options.mode!r}")
    if options.fusion not in FUSIONS:
        raise ValueError(f"fusion must be one of {', '.join(FUSIONS)}, got {options.fusion!r}")
    if not 0 <= options.dense_weight <= 1:
        raise ValueError(f"dense_weight must lie in [0, 1], got {options.dense_weight}")
    if options.paper_weight < 0 or options.paper_openings < 0:
        raise ValueError(
            f"paper_weight and paper_openings must be >= 0, got {options.paper_weight} and {options.paper_openings}"
        )
    if options.k < 0 or options.candidates < 1 or options.ef < 1 or options.rrf_k < 0:
        raise ValueError("k must be >= 0, candidates and ef >= 1, rrf_k >= 0")
    if min(options.per_paper, options.per_section, options.per_page) < 0:
        raise ValueError("per_paper, per_section and per_page must be >= 0 (0 = unlimited)")


# --- loading -----------------------------------------------------------------------------------------


def _bare_id(arxiv_id: str) -> str:
    return _ARXIV_VERSION_RE.sub("", arxiv_id.strip().lower())


@dataclass(frozen=True)
class _PaperKeys:
    """What filters look at, normalised once at load so a query compares plain strings."""

    year: int | None
    categories: tuple[str, ...]
    tags: frozenset[str]
    bare_id: str
    authors: tuple[str, ...]

    @classmethod
    def of(cls, paper: dict) -> _PaperKeys:
        return cls(
            year=paper.get("year"),
            categories=tuple(c.lower() for c in paper.get("categories", ())),
            tags=frozenset(t.lower() for t in paper.get("tags", ())),
            bare_id=_bare_id(paper["id"]),
            authors=tuple(a.lower() for a in paper.get("authors", ())),
        )

    def passes(self, filters: Filters) -> bool:
        """Whether the paper meets `filters` (already `normalized`)."""
        if filters.year_min is not None or filters.year_max is not None:
            if self.year is None:
                return False
            if filters.year_min is not None and self.year < filters.year_min:
                return False
            if filters.year_max is not None and self.year > filters.year_max:
                return False
        if filters.categories and not any(
            c == wanted or c.startswith(wanted + ".")
            for wanted in filters.categories
            for c in self.categories
        ):
            return False
        if filters.tags and self.tags.isdisjoint(filters.tags):
            return False
        if filters.paper_ids and self.bare_id not in filters.paper_ids:
            return False
        return not filters.authors or any(
            wanted in author for wanted in filters.authors for author in self.authors
        )


def normalized(filters: Filters) -> Filters:
    """Filters in the form `_PaperKeys.passes` compares: lower case, arXiv ids without version."""
    return Filters(
        year_min=filters.year_min,
        year_max=filters.year_max,
        categories=tuple(c.strip().lower() for c in filters.categories),
        tags=tuple(t.strip().lower() for t in filters.tags),
        paper_ids=tuple(_bare_id(i) for i in filters.paper_ids),
        authors=tuple(a.strip().lower() for a in filters.authors),
    )


@dataclass(frozen=True)
class _Allowed:
    """The chunks a query may return; `docs` lists them when few enough for an exact dense scan."""

    test: Callable[[int], bool]
    count: int
    docs: list[int] | None


class SearchEngine:
    """One site's search; `read(path)` returns a data file's bytes (disk in CPython, fetch in Pyodide)."""

    def __init__(self, manifest: dict, read: Reader):
        files = manifest["files"]
        self.manifest = manifest
        self.read = read
        self._vectors_path: str = files["vectors"]
        self.papers: list[dict] = read_papers(read(files["papers"]), files["papers"])
        table = read_chunk_table(read(files["chunks"]), files["chunks"])
        self.n_chunks: int = table["n"]
        self._page_start: list[int] = table["page_start"]
        self._page_span: list[int] = table["page_span"]
        self._section: list[int] = table["section"]
        self._section_titles: list[str] = table["sections"]
        self._paper_of = self._paper_of_each_chunk()
        self._paper_keys = [_PaperKeys.of(paper) for paper in self.papers]
        self._bm25 = BM25Index(json.loads(read(files["postings"])))
        if self._bm25.n_docs != self.n_chunks:
            raise ValueError(
                f"postings cover {self._bm25.n_docs} chunks but the chunk table lists {self.n_chunks}; rebuild"
            )
        self._vectors: UsearchFile | None = None
        self._row_norms: dict[int, float] = {}
        self._texts: dict[int, dict] = {}
        self._paper_vectors: list[tuple[list[int], float]] | None = None
        self._corrections: dict[tuple[str, str], str | None] = {}  # (term, typed word) -> suggestion

    def _paper_of_each_chunk(self) -> list[int]:
        paper_of = [-1] * self.n_chunks
        for index, paper in enumerate(self.papers):
            first, count = paper["chunks"]
            if first < 0 or first + count > self.n_chunks:
                raise ValueError(
                    f"paper {paper['id']} claims chunks {first}..{first + count - 1} of {self.n_chunks}"
                )
            paper_of[first : first + count] = [index] * count
        if -1 in paper_of:
            raise ValueError(
                f"chunk {paper_of.index(-1)} belongs to no paper; the papers file is inconsistent"
            )
        return paper_of

    @property
    def vectors_loaded(self) -> bool:
        return self._vectors is not None

    def load_vectors(self) -> UsearchFile:
        """Read the HNSW file (the largest download); the browser calls this once keyword results show."""
        if self._vectors is None:
            vectors = UsearchFile.from_bytes(self.read(self._vectors_path))
            if vectors.size != self.n_chunks:
                raise ValueError(
                    f"vector index holds {vectors.size} chunks but the chunk table lists {self.n_chunks}; rebuild"
                )
            self._vectors = vectors
        return self._vectors

    def text_file(self, paper_index: int) -> dict:
        """The paper's text file ({"id", "first", "chunks", "pages"}), fetched once."""
        data = self._texts.get(paper_index)
        if data is None:
            paper = self.papers[paper_index]
            data = read_paper_text(self.read(paper["text"]), paper["text"])
            if data["first"] != paper["chunks"][0] or len(data["chunks"]) != paper["chunks"][1]:
                raise ValueError(f"{paper['text']} does not hold the chunks the papers file lists")
            self._texts[paper_index] = data
        return data

    def chunk(self, doc_id: int) -> dict:
        """The chunk's {"id", "s", "e", "t"} record, from its paper's text file (fetched once)."""
        paper_index = self._paper_of[doc_id]
        return self.text_file(paper_index)["chunks"][doc_id - self.papers[paper_index]["chunks"][0]]

    # --- search ----------------------------------------------------------------------------------------

    def search(self, query: str, query_vector: Sequence[float] | None, options: SearchOptions) -> list[Hit]:
        return self.finish(self.prepare(query, options), query_vector)

    def prepare(self, query: str, options: SearchOptions) -> Prepared:
        """Everything a search does before it needs the query vector (parsing, filters, the keyword
        ranking), so that the browser can run it while the encoder's worker embeds the query."""
        check_options(options)
        parsed, query_filters = parse_search(query)
        filters = merge_filters(options.filters, self._resolve_tags(query_filters))
        limit = max(options.candidates, options.k)
        allowed = self._allowed_by(filters, limit)
        if not parsed.terms and not parsed.phrases and allowed is not None:
            return Prepared(options, parsed, allowed, limit, browse=self._browse(allowed, options.k))
        bm25 = None
        if parsed.phrases:
            # Quoted phrases restrict both retrievers to the chunks verified to hold them.
            phrase_ranking = self._phrase_ranking(parsed, allowed, limit)
            phrase_docs = sorted(doc_id for doc_id, _ in phrase_ranking)
            allowed = _Allowed(set(phrase_docs).__contains__, len(phrase_docs), phrase_docs)
            if options.mode != "dense":
                bm25 = phrase_ranking
        elif options.mode != "dense":
            bm25 = self._bm25.search(parsed.terms, limit, allowed.test if allowed else None)
        return Prepared(options, parsed, allowed, limit, bm25=bm25)

    def unread_papers(self, prepared: Prepared, most: int) -> list[int]:
        """Up to `most` papers whose text files the search will likely show and that are not loaded yet,
        the likeliest first: those of its best keyword matches (or of the passages a filter-only query
        shows). None for a dense-only query: it has no ranking before the vector."""
        if prepared.browse is not None:
            doc_ids = [result.doc_id for result in prepared.browse]
        else:
            doc_ids = [doc_id for doc_id, _ in prepared.bm25 or ()]
        unread = (self._paper_of[doc_id] for doc_id in doc_ids if self._paper_of[doc_id] not in self._texts)
        return list(dict.fromkeys(unread))[:most]

    def finish(self, prepared: Prepared, query_vector: Sequence[float] | None) -> list[Hit]:
        """The prepared search with the query vector: the dense ranking, fusion and the hits."""
        options, parsed, allowed = prepared.options, prepared.parsed, prepared.allowed
        if prepared.browse is not None:
            return [self._hit(result, ()) for result in prepared.browse]
        if options.mode == "dense" and query_vector is None:
            raise ValueError(
                "mode 'dense' needs a query vector; encode the query first or use 'bm25'/'hybrid'"
            )
        rankings: dict[str, Ranking] = {}
        if prepared.bm25 is not None:
            rankings["bm25"] = prepared.bm25
        if options.mode != "bm25" and query_vector is not None:
            rankings["dense"] = self._dense_ranking(query_vector, prepared.limit, options.ef, allowed)
        paper_scores: dict[int, float] = {}
        if options.mode == "hybrid" and options.fusion == "weighted" and len(rankings) == 2:
            paper_scores = self._paper_similarities(query_vector)
            rankings["dense"] = self._with_paper_openings(
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
            section_of=self._section.__getitem__,
            pages_of=self._pages_of,
            per_paper=options.per_paper,
            per_section=options.per_section,
            per_page=options.per_page,
        )
        return [self._hit(result, parsed.terms, similarity.get(result.doc_id)) for result in top]

    def suggest(self, query: str) -> str | None:
        """`query` with each word the corpus never uses replaced by the closest word it does, or None.

        "transfomer attention" -> "transformer attention". Candidates are indexed terms within a small
        edit distance, the most frequent winning; the word shown is the commonest spelling of that term
        in a passage that holds it, so the suggestion reads as text, not as a stem.
        """
        filters = [match.span() for match in _FIELD_RE.finditer(query)]
        changed, pieces, at = False, [], 0
        for match in _WORD_RE.finditer(query):
            if any(start <= match.start() < end for start, end in filters):
                continue
            terms = analyze(match.group())
            if len(terms) != 1 or self._bm25.doc_freq(terms[0]):
                continue
            key = (terms[0], match.group())
            if key not in self._corrections:  # a visitor refining a query types the same word again
                self._corrections[key] = self._correction(*key)
            better = self._corrections[key]
            if better is None:
                continue
            pieces += [query[at : match.start()], better]
            at, changed = match.end(), True
        return "".join([*pieces, query[at:]]) if changed else None

    def _correction(self, term: str, typed: str) -> str | None:
        """A word of the corpus within a small edit distance of `typed`, or None.

        Indexed terms are stems, so each is compared with a prefix of the typed word ("adaptaion" is
        "adapt" + an ending); the nearest few stems are then spelt out from passages that hold them
        and the nearest real word wins, so the suggestion reads as text.
        """
        lower = typed.lower()
        allowed = 1 if len(lower) <= 5 else 2
        letters = set(lower)
        candidates = []
        for known in self._bm25.terms_near(term, max(4, len(lower) - MAX_ENDING), len(lower) + allowed):
            # each letter of `known` the typed word lacks costs an edit: most terms fail here, cheaply
            if known.isalpha() and len(set(known).difference(letters)) <= allowed:
                distance, ending = stem_distance(known, lower, allowed)
                if distance <= allowed:
                    candidates.append((distance, ending, -self._bm25.doc_freq(known), known))
        for *_, known in sorted(candidates)[:SPELLED_CANDIDATES]:
            spelt = [(edit_distance(lower, word, allowed), word) for word in self._spellings(known)]
            distance, word = min(spelt, default=(allowed + 1, ""))
            if distance <= allowed:
                return word.capitalize() if typed[:1].isupper() else word
        return None

    def _spellings(self, term: str) -> set[str]:
        """Words that analyse to `term` in up to five passages holding it, spread over the corpus."""
        doc_ids, _ = self._bm25.postings(term)
        words: set[str] = set()
        for doc_id in dict.fromkeys(doc_ids[(len(doc_ids) - 1) * step // 4] for step in range(5)):
            words.update(
                w.lower() for w in _WORD_RE.findall(self.chunk(doc_id)["t"]) if _analysed(w) == (term,)
            )
        return words

    def _resolve_tags(self, filters: Filters) -> Filters:
        """Typed `tag:` values as the corpus spells them: a unique prefix stands for its tag (tag:rag).

        An unknown or ambiguous value is an error that lists the tags, not an empty result page.
        """
        if not filters.tags:
            return filters
        known = sorted({tag for keys in self._paper_keys for tag in keys.tags})
        resolved = []
        for value in filters.tags:
            wanted = value.strip().lower()
            matches = [wanted] if wanted in known else [tag for tag in known if tag.startswith(wanted)]
            if len(matches) != 1:
                how = "matches several tags" if matches else "is not a tag of this corpus"
                raise QuerySyntaxError(f"tag:{value} {how}; the tags are {', '.join(matches or known)}")
            resolved.append(matches[0])
        return replace(filters, tags=tuple(resolved))

    def _browse(self, allowed: _Allowed, k: int) -> list[Fused]:
        """A query of filters alone: the matching papers' passages with no words to rank them by.

        Each paper offers the first passage of each of its sections, in page order; papers take turns
        (newest first), so one paper shows its sections and many papers show their openings.
        """
        papers = [i for i, paper in enumerate(self.papers) if allowed.test(paper["chunks"][0])]
        papers.sort(key=lambda i: (-(self._paper_keys[i].year or 0), i))
        openings = []
        for turn, paper_index in enumerate(papers):
            first, count = self.papers[paper_index]["chunks"]
            seen_sections: set[int] = set()
            for doc_id in range(first, first + count):
                if self._section[doc_id] not in seen_sections:
                    seen_sections.add(self._section[doc_id])
                    openings.append((len(seen_sections), turn, doc_id))
        openings.sort()
        return [Fused(doc_id, 0.0, dict.fromkeys(RETRIEVERS)) for _, _, doc_id in openings[:k]]

    def _pages_of(self, doc_id: int) -> range:
        start = self._page_start[doc_id]
        return range(start, start + self._page_span[doc_id] + 1)

    def _allowed_by(self, filters: Filters, limit: int) -> _Allowed | None:
        """Decided per paper once per query, so asking about a chunk is one list lookup; None = all."""
        if filters.is_empty():
            return None
        wanted = normalized(filters)
        paper_passes = [keys.passes(wanted) for keys in self._paper_keys]
        spans = [paper["chunks"] for paper, passes in zip(self.papers, paper_passes, strict=True) if passes]
        count = sum(span_count for _, span_count in spans)
        docs = None
        if count * count <= EXACT_SCAN_COST_RATIO * limit * self.n_chunks:
            docs = [doc_id for first, span_count in spans for doc_id in range(first, first + span_count)]
        paper_of = self._paper_of
        return _Allowed(lambda doc_id: paper_passes[paper_of[doc_id]], count, docs)

    def _phrase_ranking(self, query: Query, allowed: _Allowed | None, limit: int) -> Ranking:
        """BM25 ranking of chunks holding every quoted phrase: only chunks with all phrase terms are
        scored, and their text is checked in rank order until `limit` pass, so few text files load."""
        holders: set[int] | None = None
        for term in dict.fromkeys(term for phrase in query.phrases for term in phrase):
            found = self._bm25.postings(term)
            docs = set(found[0]) if found else set()
            holders = docs if holders is None else holders & docs
        if allowed is not None:
            holders = {doc_id for doc_id in holders if allowed.test(doc_id)}
        ranked = self._bm25.search(query.terms, len(holders), holders.__contains__)
        passing = []
        for doc_id, score in ranked:
            text = self.chunk(doc_id)["t"]
            if all(contains_phrase(text, phrase) for phrase in query.phrases):
                passing.append((doc_id, score))
                if len(passing) == limit:
                    break
        return passing

    def _dense_ranking(
        self,
        query_vector: Sequence[float],
        limit: int,
        ef: int,
        allowed: _Allowed | None,
    ) -> Ranking:
        """Nearest chunks as (doc id, cosine similarity), best first, among the allowed ones."""
        vectors = self.load_vectors()
        if allowed is not None and allowed.docs is not None:
            return exact_ranking(vectors, query_vector, allowed.docs, limit, self._row_norms)
        if allowed is None:
            found = vectors.search(query_vector, limit, ef=max(ef, limit))
            return [(key, 1.0 - distance) for key, distance in found]
        # The HNSW search has no filter hook, so fetch more neighbours until enough are allowed,
        # starting from the number the allowed share of the index predicts.
        fetch = min(vectors.size, limit * math.ceil(vectors.size / allowed.count))
        while True:
            found = vectors.search(query_vector, fetch, ef=max(ef, fetch))
            kept = [(key, 1.0 - distance) for key, distance in found if allowed.test(key)]
            if len(kept) >= limit or fetch >= vectors.size:
                return kept[:limit]
            fetch = min(vectors.size, fetch * 2)

    def _paper_similarities(self, query_vector: Sequence[float]) -> dict[int, float]:
        """Cosine of the query and each paper's vector, by paper index; {} on sites without them."""
        if self._paper_vectors is None:
            vectors = [read_paper_vector(paper["vector"]) for paper in self.papers if "vector" in paper]
            self._paper_vectors = (
                [(vector, math.sqrt(_dot(vector, vector)) or 1.0) for vector in vectors]
                if len(vectors) == len(self.papers)
                else []
            )
        return {
            index: _dot(query_vector, vector) / norm
            for index, (vector, norm) in enumerate(self._paper_vectors)
        }

    def _with_paper_openings(
        self, dense: Ranking, paper_scores: dict[int, float], openings: int, allowed: _Allowed | None
    ) -> Ranking:
        """The dense candidates plus the first passage of the `openings` papers most like the query,
        scored by that paper similarity where it beats the passage's own: the opening states what the
        whole paper is about, which is what a question describing the paper in other words asks for."""
        if not openings or not paper_scores:
            return dense
        scores = dict(dense)
        papers = sorted(paper_scores, key=lambda index: (-paper_scores[index], index))
        added = 0
        for index in papers:
            if added == openings:
                break
            doc_id = self.papers[index]["chunks"][0]
            if allowed is not None and not allowed.test(doc_id):
                continue
            scores[doc_id] = max(scores.get(doc_id, -1.0), paper_scores[index])
            added += 1
        return sorted(scores.items(), key=lambda item: (-item[1], item[0]))

    def _fuse(self, rankings: dict[str, Ranking], options: SearchOptions) -> list[Fused]:
        if len(rankings) == 1:
            ((name, ranking),) = rankings.items()
            return single_ranking(name, ranking, RETRIEVERS)
        if options.fusion == "rrf":
            return reciprocal_rank_fusion(rankings, options.rrf_k)
        weights = {"dense": options.dense_weight, "bm25": 1.0 - options.dense_weight}
        return weighted_score_fusion(rankings, weights)

    def _hit(self, result: Fused, query_terms: Iterable[str], similarity: float | None = None) -> Hit:
        doc_id = result.doc_id
        paper = self.papers[self._paper_of[doc_id]]
        chunk = self.chunk(doc_id)
        snippet = make_snippet(chunk["t"], query_terms)
        return Hit(
            doc_id=doc_id,
            chunk_id=chunk["id"],
            arxiv_id=paper["id"],
            title=paper["title"],
            page_start=self._page_start[doc_id],
            page_end=self._page_start[doc_id] + self._page_span[doc_id],
            section=self._section_titles[self._section[doc_id]],
            score=result.score,
            ranks=dict(result.ranks),
            text=chunk["t"],
            snippet=snippet.text,
            highlights=snippet.highlights,
            similarity=similarity,
        )


# Below this cosine, a passage that shares no word with the query is noise, not an answer. On the 112-paper
# mirror site (scripts/calibrate_weak_match.py): the best passage of each of the 60 dev + extra questions
# scores 0.40 to 0.85 (median 0.63); 12 nonsense queries with no word in the corpus score 0.22 to 0.37, 10
# of them under 0.35; "thermodynamics of perceptrons", a true paraphrase with no shared word, 0.43.
WEAK_SIMILARITY = 0.35


def weak_match(hits: Sequence[Hit]) -> bool:
    """Whether nothing matches well: no passage shares a word with the query and none is close in meaning.

    A nonsense query ("zzqx") still gets the 20 nearest passages from the dense side; the page says so
    instead of presenting them as answers.
    """
    if any(hit.ranks.get("bm25") is not None for hit in hits):
        return False
    best = max((hit.similarity for hit in hits if hit.similarity is not None), default=None)
    return best is None or best < WEAK_SIMILARITY


_WORD_RE = re.compile(r"[A-Za-z]{5,}")  # shorter words are too easily another real word
SPELLED_CANDIDATES = 3  # nearest stems spelt out (each may read up to five paper text files)
MAX_ENDING = 4  # letters a stem may leave off its word: "adapt|ation" has 5, most endings are shorter


@lru_cache(maxsize=1 << 15)
def _analysed(word: str) -> tuple[str, ...]:
    """A passage's words repeat: spelling out a suggestion analysed the same words again and again."""
    return tuple(analyze(word))


def stem_distance(stem: str, word: str, limit: int) -> tuple[int, int]:
    """(edit distance of `stem` to the closest prefix of `word`, letters of `word` after that prefix),
    counting only prefixes that leave at most MAX_ENDING letters; distances over `limit` as limit + 1.

    Every indexed term with the typed word's initial and a near length meets this, so it is the cost
    of "did you mean": Hyyrö's bit-parallel form of the (adjacent-transposition) edit distance keeps a
    column of the table in a few integers and reads the distance to each prefix of `word` off it, one
    step per letter of `word` (about ten times fewer Python operations than the table row by row),
    stopping once the letters left could not bring the distance within `limit`.
    """
    over = limit + 1
    first_end = max(1, len(word) - MAX_ENDING)
    if not stem:
        best = min(((j, len(word) - j) for j in range(first_end, len(word) + 1)), default=(over, 0))
        return best if best[0] <= limit else (over, 0)
    mask = (1 << len(stem)) - 1
    last_row = 1 << (len(stem) - 1)
    positions: dict[str, int] = {}  # letter -> bits of its positions in `stem`
    for i, char in enumerate(stem):
        positions[char] = positions.get(char, 0) | (1 << i)
    plus, minus, diagonal, previous_match = mask, 0, 0, 0  # vertical +1/-1 deltas, zero diagonals
    distance = len(stem)  # to the empty prefix
    best = (over, 0)
    for j, char in enumerate(word, start=1):
        match = positions.get(char, 0)
        transposed = (((~diagonal) & match) << 1) & previous_match
        diagonal = ((((match & plus) + plus) ^ plus) | match | minus | transposed) & mask
        horizontal_plus = (minus | ~(diagonal | plus)) & mask
        horizontal_minus = plus & diagonal
        if horizontal_plus & last_row:
            distance += 1
        elif horizontal_minus & last_row:
            distance -= 1
        horizontal_plus = ((horizontal_plus << 1) | 1) & mask
        horizontal_minus = (horizontal_minus << 1) & mask
        plus = (horizontal_minus | ~(diagonal | horizontal_plus)) & mask
        minus = horizontal_plus & diagonal
        previous_match = match
        if j >= first_end and distance <= limit:
            best = min(best, (distance, len(word) - j))
        elif distance - (len(word) - j) > limit:
            return best  # each letter left can lower the distance by one at most: none will do
    return best


def edit_distance(a: str, b: str, limit: int) -> int:
    """Levenshtein distance with adjacent transpositions; anything over `limit` is reported as limit + 1."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, start=1):
        current = [i] + [0] * len(b)
        for j, char_b in enumerate(b, start=1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char_a != char_b))
            if i > 1 and j > 1 and char_a == b[j - 2] and a[i - 2] == char_b:
                current[j] = min(current[j], previous2[j - 2] + 1)
        if min(current) > limit:
            return limit + 1
        previous2, previous = previous, current
    return min(previous[-1], limit + 1)


def exact_ranking(
    vectors: UsearchFile,
    query_vector: Sequence[float],
    doc_ids: Iterable[int],
    limit: int,
    row_norms: dict[int, float],
) -> Ranking:
    """Cosine similarity of the query to each listed chunk's stored row, top `limit`, ties by doc id.

    `row_norms` memoises each row's norm across queries (a third of the work per chunk).
    """
    if len(query_vector) != vectors.dimensions:
        raise ValueError(f"query has {len(query_vector)} dimensions, the index has {vectors.dimensions}")
    norm = math.sqrt(_dot(query_vector, query_vector))
    if not math.isfinite(norm) or norm == 0:
        raise ValueError("query vector is zero or not finite; check the query encoder")
    unit = [x / norm for x in query_vector]
    scored = []
    for doc_id in doc_ids:
        row = vectors.vector(doc_id)
        row_norm = row_norms.get(doc_id)
        if row_norm is None:
            row_norm = row_norms[doc_id] = math.sqrt(_dot(row, row))
        scored.append((doc_id, _dot(unit, row) / row_norm if row_norm else 0.0))
    scored.sort(key=lambda item: (-item[1], item[0]))
    return scored[:limit]
