"""How much retrieval quality does each int8 quantization of the vector index keep?

Embeds raw PDF page text of the mirror in ~175-word passages (cached per text in the temp folder: the first
run over all 112 papers embeds ~6,900 passages, ~20 min on the 2 shared cores here; `--papers gold` is ~4x
smaller), then compares exact
float32 search with usearch's own i8 cast, a calibrated global scale, a float query scored against the
int8 rows (asymmetric), and rescoring of a few times k candidates. Reports nDCG@10 on the dev questions
as a ratio to exact float32, HNSW recall@10 against exact search on the same vectors, and top-10 recall
against exact float32 with random passages as queries.

    python scripts/quantization_study.py [--mirror ../shared/arxiv-mirror] [--questions FILE] \
        [--papers all|gold] [--queries 1000] [--timing-rows 20000]

Conclusion (Nov 2026, all papers): global scale at the 99.99th percentile of |x_i| with the query kept
in float keeps nDCG@10 and reaches ~0.987 top-10 recall vs exact float32 at ef 64 (usearch's own i8
cast: ~0.95). builder/writers/hnsw.py and readingroom_core/readers/hnsw.py use that as their default.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from builder.offline import use_offline_environment  # noqa: E402
from builder.paths import DEV_QUESTIONS, SHARED_MIRROR  # noqa: E402

use_offline_environment()

CACHE_DIR = Path(tempfile.gettempdir()) / "readingroom-quantization-study"
PASSAGE_WORDS = 175
K = 10


@dataclass(frozen=True)
class Passage:
    arxiv_id: str
    page: int  # 1-based
    text: str


@dataclass(frozen=True)
class Question:
    query: str
    relevant: frozenset[tuple[str, int]]  # (arxiv_id, page)


def load_questions(path: Path) -> list[Question]:
    """Dev questions with at least one gold page; negatives have nothing to rank."""
    questions = []
    for line in path.read_text().splitlines():
        row = json.loads(line)
        pages = frozenset((r["arxiv_id"], p) for r in row["relevant"] for p in r["pages"])
        if pages:
            questions.append(Question(row["query"], pages))
    return questions


def split_page(words: list[str]) -> list[str]:
    """Near-equal pieces of about PASSAGE_WORDS words, so no passage straddles a page."""
    pieces = max(1, round(len(words) / PASSAGE_WORDS))
    bounds = [round(i * len(words) / pieces) for i in range(pieces + 1)]
    return [" ".join(words[a:b]) for a, b in zip(bounds, bounds[1:], strict=False) if b > a]


def load_passages(pdf_dir: Path, paper_ids: list[str]) -> list[Passage]:
    import pymupdf

    passages = []
    for arxiv_id in paper_ids:
        with pymupdf.open(pdf_dir / f"{arxiv_id}.pdf") as doc:
            for number, page in enumerate(doc, start=1):
                words = page.get_text().split()
                passages += [Passage(arxiv_id, number, text) for text in split_page(words)]
    return passages


def text_digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def embed_cached(texts: list[str]) -> np.ndarray:
    """Unit float32 MiniLM embeddings; every text is cached by its hash, so any subset reruns quickly."""
    cache_path = CACHE_DIR / "minilm-embeddings.npz"
    known: dict[str, np.ndarray] = {}
    if cache_path.exists():
        with np.load(cache_path) as stored:
            known = dict(zip(stored["digests"].tolist(), stored["vectors"], strict=True))
    missing = {text_digest(t): t for t in texts if text_digest(t) not in known}
    if missing:
        from sentence_transformers import SentenceTransformer

        from builder.paths import bundled_model_dir

        model = SentenceTransformer(str(bundled_model_dir()), device="cpu", local_files_only=True)
        started = time.perf_counter()
        vectors = model.encode(list(missing.values()), batch_size=64, normalize_embeddings=True)
        print(f"embedded {len(missing)} texts in {time.perf_counter() - started:.0f} s")
        known.update(zip(missing, vectors.astype(np.float32), strict=True))
        CACHE_DIR.mkdir(parents=True, exist_ok=True)
        np.savez(cache_path, digests=np.array(list(known)), vectors=np.stack(list(known.values())))
    return np.stack([known[text_digest(t)] for t in texts])


@dataclass(frozen=True)
class QuerySet:
    """Dev questions followed by random passages used as queries (their own passage is excluded)."""

    vectors: np.ndarray  # unit float32
    dev: int  # the first `dev` rows are dev questions
    self_rows: np.ndarray  # passage row of each random query, -1 for dev questions


def top_keys(scores: np.ndarray, queries: QuerySet, k: int = K) -> np.ndarray:
    """Best `k` rows by descending score, skipping each random query's own passage."""
    scores = scores.copy()
    own = queries.self_rows >= 0
    scores[np.flatnonzero(own), queries.self_rows[own]] = -np.inf
    best = np.argpartition(-scores, k, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(scores, best, axis=1), axis=1, kind="stable")
    return np.take_along_axis(best, order, axis=1)


def drop_self(found: np.ndarray, queries: QuerySet, k: int = K) -> np.ndarray:
    """Search results with one spare hit: remove each query's own passage, keep `k`."""
    rows = []
    for hits, own in zip(found, queries.self_rows, strict=True):
        rows.append([h for h in hits if h != own][:k])
    return np.array(rows)


def cosine_scores(query: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Cosine of each query with each row; rows may be int8 (asymmetric when the query is float)."""
    rows = rows.astype(np.float64)
    norms = np.linalg.norm(rows, axis=1)
    norms[norms == 0] = 1
    query = query.astype(np.float64)
    query = query / np.maximum(np.linalg.norm(query, axis=1, keepdims=True), 1e-300)
    return (query @ rows.T) / norms


def ndcg_at_k(found: np.ndarray, passages: list[Passage], questions: list[Question], k: int = K) -> float:
    """Mean binary nDCG@k; a passage is relevant when its (paper, page) is a gold page."""
    discounts = 1 / np.log2(np.arange(2, k + 2))
    values = []
    passages_per_page = Counter((p.arxiv_id, p.page) for p in passages)
    for hits, question in zip(found, questions, strict=False):
        gains = [(passages[h].arxiv_id, passages[h].page) in question.relevant for h in hits[:k]]
        relevant_total = sum(passages_per_page[page] for page in question.relevant)
        ideal = discounts[: min(k, relevant_total)].sum()
        values.append(float(np.dot(gains, discounts[: len(gains)]) / ideal) if ideal else 0.0)
    return float(np.mean(values))


def recall_at_k(found: np.ndarray, reference: np.ndarray, k: int = K) -> float:
    return float(np.mean([len(set(f[:k]) & set(r[:k])) / k for f, r in zip(found, reference, strict=True)]))


def usearch_cast(vectors: np.ndarray) -> np.ndarray:
    """usearch 2.26's own f32 -> i8 rule for cosine: trunc(clamp(x * 127 / |x|))."""
    unit = vectors / np.linalg.norm(vectors.astype(np.float64), axis=1, keepdims=True)
    return np.trunc(np.clip(unit * 127, -127, 127))


def usearch_cast_index(vectors: np.ndarray):
    """usearch given float vectors: it applies its own i8 cast."""
    from usearch.index import Index

    index = Index(ndim=vectors.shape[1], metric="cos", dtype="i8", connectivity=16, expansion_add=128)
    index.add(np.arange(len(vectors), dtype=np.uint64), vectors, threads=1)
    return index


def usearch_search(index, queries: np.ndarray, count: int, ef: int) -> np.ndarray:
    index.expansion_search = ef
    return index.search(queries, count + 1, threads=1).keys.astype(np.int64)


def rescore(candidates: np.ndarray, query: np.ndarray, rows: np.ndarray, queries: QuerySet) -> np.ndarray:
    """Re-rank each query's candidates by its float query against their int8 rows."""
    found = []
    for hits, vector, own in zip(candidates, query, queries.self_rows, strict=True):
        hits = np.array([h for h in hits if h != own])
        scores = cosine_scores(vector[None, :], rows[hits])[0]
        found.append(hits[np.argsort(-scores, kind="stable")[:K]])
    return np.array(found)


@dataclass(frozen=True)
class Row:
    method: str
    ef: int | None
    found: np.ndarray
    same_vector_reference: np.ndarray  # exact search with the method's own scoring
    bytes_per_vector: float


def reader_search(path: Path, query: np.ndarray, ef: int) -> tuple[np.ndarray, float]:
    """Our stdlib reader with a float query; returns keys (one spare hit) and mean ms per query."""
    from readingroom_core.readers.hnsw import UsearchFile

    reader = UsearchFile.from_bytes(path.read_bytes())
    started = time.perf_counter()
    found = np.array([[key for key, _ in reader.search(q.tolist(), K + 1, ef)] for q in query])
    return found, (time.perf_counter() - started) * 1000 / len(query)


def study(
    passages: list[Passage],
    vectors: np.ndarray,
    questions: list[Question],
    queries: QuerySet,
    percentiles: list[float],
    reader_percentiles: list[float],
    efs: list[int],
) -> list[Row]:
    from usearch.index import Index

    from builder.writers.hnsw import IndexParams, calibrate_scale, quantize, write_index

    float_query = queries.vectors
    exact = top_keys(cosine_scores(float_query, vectors), queries)
    rows = [Row("exact f32 (brute force)", None, exact, exact, 4 * vectors.shape[1])]

    default_index = usearch_cast_index(vectors)
    default_path = CACHE_DIR / "index-usearch-cast.usearch"
    default_index.save(str(default_path))
    int8_bytes = default_path.stat().st_size / len(vectors)
    default_rows = np.stack(default_index.get(np.arange(len(vectors), dtype=np.uint64)))
    exact_default = top_keys(cosine_scores(usearch_cast(float_query), default_rows), queries)
    for ef in efs:
        found = drop_self(usearch_search(default_index, float_query, K, ef), queries)
        rows.append(Row("usearch i8 (127/unit)", ef, found, exact_default, int8_bytes))

    for percentile in percentiles:
        path = CACHE_DIR / f"index-p{percentile}.usearch"
        params = write_index(
            path,
            np.arange(len(vectors)),
            vectors,
            IndexParams(scale=calibrate_scale(vectors, percentile), percentile=percentile),
        )
        int8_rows = quantize(vectors, params.scale)
        int8_query = quantize(float_query, params.scale)
        clipped = float(np.mean(np.abs(np.rint(vectors * params.scale)) > 127))
        label = f"p{percentile} (scale {params.scale:.0f}, {clipped:.2%} clipped)"
        exact_symmetric = top_keys(cosine_scores(int8_query.astype(np.float64), int8_rows), queries)
        exact_asymmetric = top_keys(cosine_scores(float_query, int8_rows), queries)
        rows.append(
            Row(f"{label} float query, exact scan", None, exact_asymmetric, exact_asymmetric, int8_bytes)
        )
        index = Index.restore(str(path))
        for ef in efs:
            found = drop_self(usearch_search(index, int8_query, K, ef), queries)
            rows.append(Row(f"{label} int8 query", ef, found, exact_symmetric, int8_bytes))
            for factor in (4, 10):
                candidates = usearch_search(index, int8_query, factor * K, max(ef, factor * K))
                found = rescore(candidates, float_query, int8_rows, queries)
                label_rescore = f"{label} int8 query + rescore {factor}k"
                rows.append(Row(label_rescore, ef, found, exact_asymmetric, int8_bytes))
            if percentile in reader_percentiles:
                found, ms = reader_search(path, float_query, ef)
                rows.append(
                    Row(
                        f"{label} float query, HNSW (reader, {ms:.0f} ms/q)",
                        ef,
                        drop_self(found, queries),
                        exact_asymmetric,
                        int8_bytes,
                    )
                )
    return rows


def reader_timing(vectors: np.ndarray, queries: np.ndarray, rows: int, efs: list[int]) -> str:
    """CPython µs per query of the stdlib reader on `rows` vectors (real ones, repeated with jitter)."""
    from builder.writers.hnsw import write_index
    from readingroom_core.readers.hnsw import UsearchFile, quantize_query

    rng = np.random.default_rng(1)
    picked = vectors[rng.integers(0, len(vectors), rows)]
    jittered = picked + rng.normal(scale=0.02, size=picked.shape)
    path = CACHE_DIR / f"timing-{rows}.usearch"
    params = write_index(path, np.arange(rows), jittered.astype(np.float32))
    data = path.read_bytes()
    started = time.perf_counter()
    reader = UsearchFile.from_bytes(data)
    lines = [
        f"reader on {rows} vectors ({len(data) / 1e6:.1f} MB): load {time.perf_counter() - started:.2f} s"
    ]
    float_queries = [q.tolist() for q in queries]
    int8_queries = [quantize_query(q, params.scale) for q in float_queries]
    for ef in efs:
        timings = []
        for search, batch in ((reader.search, float_queries), (reader.search_quantized, int8_queries)):
            started = time.perf_counter()
            for query in batch:
                search(query, K, ef)
            timings.append((time.perf_counter() - started) * 1e6 / len(batch))
        lines.append(
            f"ef {ef}: float query {timings[0]:,.0f} µs/query, int8 query {timings[1]:,.0f} µs/query"
        )
    return "\n".join(lines)


def report(rows: list[Row], passages: list[Passage], questions: list[Question], queries: QuerySet) -> str:
    dev = slice(0, queries.dev)
    rest = slice(queries.dev, None)
    exact_ndcg = ndcg_at_k(rows[0].found[dev], passages, questions)
    lines = [
        f"exact f32 nDCG@10 = {exact_ndcg:.4f} on {queries.dev} dev questions; "
        f"{len(queries.vectors) - queries.dev} random passages as queries",
        "| method | ef | nDCG@10 / exact f32 | HNSW recall@10 (same vectors) | recall@10 vs f32 | B/vector |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        ratio = ndcg_at_k(row.found[dev], passages, questions) / exact_ndcg
        hnsw = recall_at_k(row.found, row.same_vector_reference)
        versus_f32 = recall_at_k(row.found[rest], rows[0].found[rest])
        lines.append(
            f"| {row.method} | {row.ef or '-'} | {ratio:.4f} | {hnsw:.4f} | {versus_f32:.4f} | "
            f"{row.bytes_per_vector:.1f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mirror", type=Path, default=SHARED_MIRROR, help="pdf/<id>.pdf of the papers")
    parser.add_argument("--questions", type=Path, default=DEV_QUESTIONS, help="dev questions with gold pages")
    parser.add_argument("--papers", choices=["all", "gold"], default="all")
    parser.add_argument("--queries", type=int, default=1000, help="random passages used as queries")
    parser.add_argument("--percentiles", type=float, nargs="+", default=[99.0, 99.9, 99.99, 100.0])
    parser.add_argument(
        "--reader-percentiles",
        type=float,
        nargs="*",
        default=[99.99],
        help="percentiles whose file is also searched by the stdlib reader (slow)",
    )
    parser.add_argument("--ef", type=int, nargs="+", default=[32, 64, 128])
    parser.add_argument(
        "--timing-rows", type=int, default=20000, help="index size for reader timing; 0 skips"
    )
    parser.add_argument("--timing-queries", type=int, default=100)
    args = parser.parse_args()

    questions = load_questions(args.questions)
    gold = sorted({paper for q in questions for paper, _ in q.relevant})
    everything = sorted(p.stem for p in (args.mirror / "pdf").glob("*.pdf"))
    passages = load_passages(args.mirror / "pdf", everything if args.papers == "all" else gold)
    vectors = embed_cached([p.text for p in passages])
    question_vectors = embed_cached([q.query for q in questions])
    picks = np.random.default_rng(0).choice(len(passages), size=args.queries, replace=False)
    queries = QuerySet(
        vectors=np.concatenate([question_vectors, vectors[picks]]),
        dev=len(questions),
        self_rows=np.concatenate([np.full(len(questions), -1), picks]),
    )
    print(f"{len(passages)} passages from {len(set(p.arxiv_id for p in passages))} papers")
    rows = study(passages, vectors, questions, queries, args.percentiles, args.reader_percentiles, args.ef)
    print(report(rows, passages, questions, queries))
    if args.timing_rows:
        print(reader_timing(vectors, queries.vectors[: args.timing_queries], args.timing_rows, args.ef))


if __name__ == "__main__":
    main()
