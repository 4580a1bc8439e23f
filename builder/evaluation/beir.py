"""BEIR evaluation (`python -m builder eval-beir`): score the site's own search on a BEIR dataset.

Each BEIR document becomes one paper with one chunk of an in-memory site, built by the same code as a
real build (postings, quantised USearch file, chunk table, texts file), and every test query runs
through the real `SearchEngine` with the browser's quantised ONNX query encoder. So the numbers are
what a visitor's search would score, diversity caps aside (off here: a BEIR doc is a whole "paper").

BEIR conventions followed: documents are `title + " " + text`, only queries with qrels are scored,
and a hit whose doc id equals the query id is dropped before scoring (BEIR's `ignore_identical_ids`,
which matters for ArguAna, where queries are arguments from the corpus itself).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from builder.evaluation.metrics import evaluate
from builder.offline import load_onnxruntime_first
from builder.paths import DEFAULT_CACHE
from builder.scratch import write_atomically
from builder.writers.texts import preset_dictionary, texts_file_bytes
from readingroom_core.formats.chunks import ChunkTable, chunk_table_bytes
from readingroom_core.formats.manifest import DataFiles
from readingroom_core.formats.papers import PaperRecord, papers_bytes
from readingroom_core.formats.texts import PageRange, PaperText, TextChunk

MODES = ("bm25", "dense", "hybrid")
MEASURES = (("ndcg", 10), ("recall", 100))
DEFAULT_CANDIDATES = 200  # per retriever before fusion: Recall@100 needs more than 100 to fuse from
DEFAULT_K = 100
QUERY_ENCODERS = ("browser", "model")


@dataclass(frozen=True)
class BeirDataset:
    name: str
    doc_ids: list[str]
    titles: list[str]
    bodies: list[str]
    queries: dict[str, str]  # query id -> text, only queries that have qrels
    qrels: dict[str, dict[str, int]]  # query id -> {doc id: grade}

    @property
    def doc_texts(self) -> list[str]:
        """What is indexed and embedded, as BEIR's dense models see it."""
        return [f"{title} {body}".strip() for title, body in zip(self.titles, self.bodies, strict=True)]


@dataclass
class Timings:
    embed_docs_s: float = 0.0  # 0 when every vector came from the cache
    docs_embedded: int = 0
    build_site_s: float = 0.0
    encode_queries_s: float = 0.0
    search_s: dict[str, float] = field(default_factory=dict)  # per mode, all queries


@dataclass(frozen=True)
class EvalSettings:
    candidates: int = DEFAULT_CANDIDATES
    k: int = DEFAULT_K
    fusion: str | None = None  # None: the engine's default
    dense_weight: float | None = None  # None: the engine's default
    ignore_identical_ids: bool = True
    query_encoder: str = "browser"
    max_queries: int | None = None


@dataclass
class BeirResult:
    dataset: str
    queries: int
    docs: int
    scores: dict[str, dict[str, float]]  # mode -> {"ndcg@10": ..., "recall@100": ...}
    runs: dict[str, dict[str, list[str]]]  # mode -> query id -> ranked doc ids (for per-query analysis)
    timings: Timings
    settings: dict


# --- loading -----------------------------------------------------------------------------------------


def _read_jsonl(path: Path) -> list[dict]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def read_qrels(path: Path) -> dict[str, dict[str, int]]:
    """`query-id<TAB>corpus-id<TAB>score` rows after a header line (CRLF or LF)."""
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as handle:
        lines = [line.rstrip("\r\n") for line in handle]
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 3:
            raise ValueError(f"{path}:{number}: expected query-id, corpus-id, score separated by tabs")
        query_id, doc_id, grade = parts
        qrels.setdefault(query_id, {})[doc_id] = int(grade)
    return qrels


def load_dataset(data_dir: Path, split: str = "test") -> BeirDataset:
    """corpus.jsonl, queries.jsonl and qrels/<split>.tsv of one BEIR dataset folder."""
    data_dir = Path(data_dir)
    paths = [data_dir / "corpus.jsonl", data_dir / "queries.jsonl", data_dir / "qrels" / f"{split}.tsv"]
    missing = [str(path) for path in paths if not path.exists()]
    if missing:
        raise FileNotFoundError(
            f"not a BEIR dataset folder (missing {', '.join(missing)}); expected corpus.jsonl, "
            f"queries.jsonl and qrels/{split}.tsv"
        )
    corpus = _read_jsonl(paths[0])
    all_queries = {row["_id"]: row["text"] for row in _read_jsonl(paths[1])}
    qrels = read_qrels(paths[2])
    unknown = sorted(set(qrels) - set(all_queries))
    if unknown:
        raise ValueError(
            f"{paths[2]} judges {len(unknown)} queries missing from queries.jsonl, e.g. {unknown[0]}"
        )
    return BeirDataset(
        name=data_dir.resolve().name,
        doc_ids=[row["_id"] for row in corpus],
        titles=[row.get("title") or "" for row in corpus],
        bodies=[row.get("text") or "" for row in corpus],
        queries={query_id: all_queries[query_id] for query_id in qrels},
        qrels=qrels,
    )


# --- embedding and the in-memory site ----------------------------------------------------------------


def corpus_fingerprint(doc_ids: Sequence[str], texts: Sequence[str]) -> str:
    digest = hashlib.sha256()
    for doc_id, text in zip(doc_ids, texts, strict=True):
        digest.update(f"{doc_id}\0{text}\0".encode())
    return digest.hexdigest()


def embedding_cache_path(cache_dir: Path, dataset: str, weights_sha256: str, fingerprint: str) -> Path:
    """Keyed by model weights and exact corpus text, so a changed model or corpus is never reused."""
    return Path(cache_dir) / "beir" / f"{dataset}-{weights_sha256[:12]}-{fingerprint[:12]}.npy"


def embed_corpus(model, texts: Sequence[str], cache_path: Path, progress: bool) -> tuple[np.ndarray, bool]:
    """Unit float32 rows for `texts`, from the cache when it holds them; (vectors, whether computed)."""
    from builder.embedding import encode, save_npy

    if cache_path.exists():
        vectors = np.load(cache_path)
        if vectors.shape[0] == len(texts):
            return vectors, False
    vectors = encode(model, texts, batch_size=64, progress=progress)
    cache_path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(cache_path, lambda scratch: save_npy(scratch, vectors))
    return vectors, True


def build_site(dataset: BeirDataset, vectors: np.ndarray) -> tuple[DataFiles, dict[str, bytes]]:
    """(data files by role, {path: bytes}) of a site whose papers are the BEIR docs, one chunk each,
    written by the real build's writers."""
    from builder.site.search_files import search_index_files

    texts = dataset.doc_texts
    files: dict[str, bytes] = {}
    paper_texts = [
        PaperText(doc_id, (TextChunk(f"{doc_id}#0", 0, len(text), text),), (PageRange(1, 0, len(text)),))
        for doc_id, text in zip(dataset.doc_ids, texts, strict=True)
    ]
    dictionary = preset_dictionary(texts)
    texts_file, located = texts_file_bytes(paper_texts, dictionary)
    papers = [
        PaperRecord(
            id=doc_id,
            title=title,
            first_chunk=doc_number,
            chunk_count=1,
            text_bytes=(head_bytes, text_bytes),
            text_sha256=head_sha,
        )
        for doc_number, (doc_id, title, (head_bytes, text_bytes, head_sha)) in enumerate(
            zip(dataset.doc_ids, dataset.titles, located, strict=True)
        )
    ]
    index = search_index_files(
        texts, vectors, name=lambda folder, stem, suffix, _: f"{folder}/{stem}{suffix}"
    )
    roles = DataFiles(
        papers="data/papers.json",
        chunks="data/chunks.bin",
        texts="data/texts.bin",
        text_dictionary="data/text-dictionary.bin",
        **index.roles,
    )
    files[roles.texts] = texts_file
    files[roles.text_dictionary] = dictionary
    files[roles.papers] = papers_bytes(papers)
    files[roles.chunks] = chunk_table_bytes(ChunkTable.from_rows([(1, 1, "")] * len(texts)))
    files.update(index.files)
    return roles, files


# --- queries -----------------------------------------------------------------------------------------


def query_encoder(
    kind: str, model, model_dir: Path, cache_dir: Path
) -> Callable[[list[str]], list[list[float]]]:
    """`browser`: the shipped int8 ONNX encoder + stdlib tokenizer; `model`: sentence-transformers."""
    if kind == "model":
        from builder.embedding import encode

        return lambda texts: encode(model, texts).astype(float).tolist()
    if kind != "browser":
        raise ValueError(f"query encoder must be one of {', '.join(QUERY_ENCODERS)}, got {kind!r}")
    from builder.embedding import weights_sha256
    from builder.query_encoder import OnnxQueryEncoder, cached_query_encoder

    files = cached_query_encoder(model_dir, weights_sha256(model_dir), cache_dir)
    return OnnxQueryEncoder.from_dir(files.config.parent).encode


def ranked_doc_ids(
    hits, doc_ids: Sequence[str], query_id: str, k: int, ignore_identical_ids: bool
) -> list[str]:
    ranked = [doc_ids[hit.doc_id] for hit in hits]
    if ignore_identical_ids:
        ranked = [doc_id for doc_id in ranked if doc_id != query_id]
    return ranked[:k]


def run_queries(
    engine,
    dataset: BeirDataset,
    query_vectors: dict[str, list[float]],
    mode: str,
    settings: EvalSettings,
    progress: bool,
) -> dict[str, list[str]]:
    """Ranked BEIR doc ids per query for one mode, through the engine's public `search`."""
    from tqdm import tqdm

    from readingroom_core.querysyntax import free_text

    options = search_options(settings, mode)
    run = {}
    for query_id in tqdm(query_vectors, desc=mode, unit="query", disable=not progress):
        # BEIR queries are plain text: their quote marks and colons must not read as phrases or filters
        hits = engine.search(free_text(dataset.queries[query_id]), query_vectors[query_id], options)
        run[query_id] = ranked_doc_ids(
            hits, dataset.doc_ids, query_id, settings.k, settings.ignore_identical_ids
        )
    return run


def evaluate_dataset(
    dataset: BeirDataset,
    settings: EvalSettings,
    cache_dir: Path = DEFAULT_CACHE,
    model_dir: Path | None = None,
    progress: bool = False,
    log: Callable[[str], None] = lambda message: None,
) -> BeirResult:
    """Embed (or reuse) the corpus, build the in-memory site, run every query in every mode, score."""
    load_onnxruntime_first()

    from builder.embedding import load_model, weights_sha256
    from builder.paths import bundled_model_dir
    from readingroom_core.engine import SearchEngine

    timings = Timings()
    model_dir = Path(model_dir) if model_dir else bundled_model_dir()
    model = load_model(model_dir)
    texts = dataset.doc_texts
    cache_path = embedding_cache_path(
        cache_dir, dataset.name, weights_sha256(model_dir), corpus_fingerprint(dataset.doc_ids, texts)
    )
    log(f"{dataset.name}: {len(texts)} docs, {len(dataset.qrels)} queries; embeddings {cache_path}")
    started = time.perf_counter()
    vectors, computed = embed_corpus(model, texts, cache_path, progress)
    if computed:
        timings.embed_docs_s, timings.docs_embedded = time.perf_counter() - started, len(texts)

    started = time.perf_counter()
    roles, files = build_site(dataset, vectors)
    engine = SearchEngine(roles, files.__getitem__)
    engine.load_vectors()
    timings.build_site_s = time.perf_counter() - started

    query_ids = list(dataset.qrels)[: settings.max_queries]
    encode = query_encoder(settings.query_encoder, model, model_dir, cache_dir)
    started = time.perf_counter()
    encoded = encode([dataset.queries[query_id] for query_id in query_ids])
    timings.encode_queries_s = time.perf_counter() - started
    query_vectors = dict(zip(query_ids, encoded, strict=True))

    qrels = {query_id: dataset.qrels[query_id] for query_id in query_ids}
    scores, runs = {}, {}
    for mode in MODES:
        started = time.perf_counter()
        runs[mode] = run_queries(engine, dataset, query_vectors, mode, settings, progress)
        timings.search_s[mode] = time.perf_counter() - started
        scores[mode] = evaluate(runs[mode], qrels, MEASURES)
        log(f"{mode}: {scores[mode]} ({timings.search_s[mode]:.1f} s)")
    return BeirResult(
        dataset=dataset.name,
        queries=len(query_ids),
        docs=len(texts),
        scores=scores,
        runs=runs,
        timings=timings,
        settings=effective_settings(settings),
    )


def search_options(settings: EvalSettings, mode: str):
    """Engine options for one mode: the site's fusion defaults unless overridden, diversity caps off."""
    from readingroom_core.options import SearchOptions

    defaults = SearchOptions()
    return SearchOptions(
        # One extra so dropping the query's own doc still leaves k results.
        k=settings.k + int(settings.ignore_identical_ids),
        mode=mode,
        fusion=settings.fusion or defaults.fusion,
        dense_weight=defaults.dense_weight if settings.dense_weight is None else settings.dense_weight,
        candidates=max(settings.candidates, settings.k + 1),
        per_paper=0,
        per_section=0,
        per_page=0,
    )


def effective_settings(settings: EvalSettings) -> dict:
    """What the hybrid runs used, engine defaults filled in, for reports."""
    options = search_options(settings, "hybrid")
    return {
        "candidates": options.candidates,
        "k": settings.k,
        "fusion": options.fusion,
        "dense_weight": options.dense_weight,
        "rrf_k": options.rrf_k,
        "postings_prefix": options.postings_prefix,
        "scan": options.scan,
        "rescore": options.rescore,
        "ignore_identical_ids": settings.ignore_identical_ids,
        "query_encoder": settings.query_encoder,
    }
