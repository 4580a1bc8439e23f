"""Whole-mirror build bench: build times, embed throughput, artifact sizes, quantization quality.

1. builds, each a fresh `python -m builder build` process (its wall time includes start-up), with the
   stage times from its build report:
   - cold: the reading list from the mirror into an empty cache;
   - no change: the same list again on that warm cache (nothing is fetched, parsed or embedded);
   - one paper added: a copy of the cache loses the last paper's parse and vectors, then the list is
     built again;
2. embedding throughput on a sample of the mirror's chunks (`--embed-sample`, default 1,000): the
   builder's DocumentEncoder (onnxruntime, fused fp32) at several batch sizes against
   sentence-transformers itself (torch, batches of 64 by character length), the reference it matches, in
   interleaved rounds (the machine is shared: compare the ratios, wall and CPU time), with the min
   cosine between their vectors;
3. bytes of every artifact, raw and gzipped, by kind;
4. quantization: for the dev questions, page-level nDCG@10 of dense retrieval with the shipped
   int8 HNSW index (our reader) vs exact float32 search over the same chunks with the same (ONNX)
   query vectors; HNSW recall@10 vs exact search on the same int8 vectors, for the dev questions
   and for 1,000 chunk texts used as queries; and ONNX vs sentence-transformers query vectors.
Prints one JSON object.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import shutil
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from builder.offline import load_onnxruntime_first, use_offline_environment  # noqa: E402

use_offline_environment()
load_onnxruntime_first()

import numpy as np  # noqa: E402
from measurements import add_record_option, begin  # noqa: E402

from builder import config, embedding, pipeline  # noqa: E402
from builder.embedding import document_encoder_path  # noqa: E402
from builder.evaluation import metrics  # noqa: E402
from builder.evaluation.evaluate import load_questions  # noqa: E402
from builder.paths import DEV_QUESTIONS, REPO_ROOT, resolve_model_dir  # noqa: E402
from builder.query_encoder import OnnxQueryEncoder  # noqa: E402
from builder.writers.hnsw import hnsw_path  # noqa: E402
from readingroom_core.formats.chunks import read_chunk_table  # noqa: E402
from readingroom_core.formats.manifest import Manifest, read_manifest  # noqa: E402
from readingroom_core.formats.papers import read_papers  # noqa: E402
from readingroom_core.ranges import folder_reader  # noqa: E402
from readingroom_core.readers.hnsw import UsearchFile  # noqa: E402


def run_build(corpus: Path, out: Path, cache: Path, mirror: Path) -> tuple[float, dict]:
    """Wall seconds of one `python -m builder build` process, and its build report."""
    command = [sys.executable, "-m", "builder", "build", "--corpus", str(corpus), "--out", str(out)]
    command += ["--cache", str(cache), "--mirror", str(mirror), "--offline", "--no-progress"]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if done.returncode:
        raise SystemExit(f"build of {corpus} failed:\n{done.stdout}\n{done.stderr}")
    return seconds, json.loads((out / "build-report.json").read_text())


def build_row(seconds: float, report: dict) -> dict:
    return {
        "seconds": round(seconds, 1),
        "stage_seconds": report["seconds"],
        "embedded_chunks": report["embedded_chunks"],
    }


def embedding_throughput(
    corpus: Path, site: Path, cache: Path, mirror: Path, sample: int, rounds: int = 3
) -> dict:
    """DocumentEncoder batch sizes vs sentence-transformers (the vectors it must match) on the same chunk texts."""
    loaded = config.load_corpus(corpus)
    options = pipeline.BuildOptions(corpus, site, cache, mirror=mirror, offline=True, progress=False)
    ingested = pipeline.ingest(loaded, options)
    texts = [c.indexed_text for p in ingested.papers for c in p.chunks]
    texts = random.Random(0).sample(texts, min(sample, len(texts)))
    model_dir = resolve_model_dir(loaded.settings.model)
    identity = embedding.identify(loaded.settings.model, model_dir, "", "")
    encoder = embedding.DocumentEncoder(model_dir, identity, document_encoder_path(cache, identity))
    encoder.encode(texts[:1])  # start it (session, sanity check) outside the timings
    model = embedding.load_model(model_dir)

    def sentence_transformers(batch: list[str]) -> np.ndarray:  # longest first, batches of 64
        order = sorted(range(len(batch)), key=lambda i: (-len(batch[i]), i))
        out = np.zeros((len(batch), identity.dims), np.float32)
        for start in range(0, len(order), 512):
            rows = order[start : start + 512]
            out[rows] = embedding.encode(model, [batch[i] for i in rows], 64)
        return out

    def ours(batch_size: int):
        sized = embedding.DocumentEncoder(model_dir, identity, encoder.onnx_path, batch=batch_size)
        sized.encode(texts[:1])
        return sized.encode

    methods = {"sentence_transformers_torch_b64": sentence_transformers}
    methods.update({f"onnxruntime_fused_b{size}": ours(size) for size in (1, 4, 16)})
    reference = sentence_transformers(texts)
    rows: dict[str, dict[str, list[float]]] = {m: {"rate": [], "wall": [], "cpu": []} for m in methods}
    for _ in range(rounds):
        base_wall = base_cpu = 0.0
        for name, method in methods.items():
            wall, cpu = time.perf_counter(), time.process_time()
            vectors = method(texts)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            if name == "sentence_transformers_torch_b64":
                base_wall, base_cpu = wall, cpu
            rows[name]["rate"].append(len(texts) / wall)
            rows[name]["wall"].append(base_wall / wall)
            rows[name]["cpu"].append(base_cpu / cpu)
            rows[name]["min_cosine"] = [float(np.min(np.sum(vectors * reference, axis=1)))]
    return {
        "chunks": len(texts),
        "mean_tokens": round(float(np.mean([c.n_tokens for p in ingested.papers for c in p.chunks])), 1),
        "rounds": rounds,
        "engine_in_builds": f"{identity.engine}, batch {embedding.DOCUMENT_BATCH}",
        "methods": {
            name: {
                "chunks_per_second_median": round(statistics.median(row["rate"]), 2),
                "speedup_wall_median": round(statistics.median(row["wall"]), 2),
                "speedup_cpu_time_median": round(statistics.median(row["cpu"]), 2),
                "min_cosine_to_sentence_transformers": round(min(row["min_cosine"]), 7),
            }
            for name, row in rows.items()
        },
    }


def artifact_sizes(site: Path, manifest: Manifest) -> dict:
    kinds: dict[str, dict[str, int]] = defaultdict(lambda: {"files": 0, "bytes": 0, "gzip": 0})
    read = folder_reader(site)
    for artifact in manifest.artifacts:
        data = read(artifact.path)
        row = kinds[artifact.path.rsplit("/", 1)[1].split(".")[0]]
        row["files"] += 1
        row["bytes"] += len(data)
        row["gzip"] += len(gzip.compress(data, 9))
    return dict(kinds)


def chunk_rows(site: Path, manifest: Manifest) -> list[tuple[str, int, int]]:
    table = read_chunk_table(folder_reader(site)(manifest.files.chunks))
    papers = read_papers(folder_reader(site)(manifest.files.papers))
    return [
        (paper.id, table.page_start[doc], table.page_end(doc)) for paper in papers for doc in paper.doc_ids
    ]


def page_ndcg(ranked_docs, rows, question) -> float:
    """Page-level nDCG@10 as `builder.evaluation.evaluate` defines it (each gold page credited once)."""
    credited, items = set(), []
    for rank, doc in enumerate(ranked_docs):
        paper, start, end = rows[doc]
        gold = [(p, g) for p, g in sorted(question.gold_pages) if p == paper and start <= g <= end]
        fresh = [pair for pair in gold if pair not in credited]
        if fresh:
            credited.add(fresh[0])
            items.append(f"{fresh[0][0]} p.{fresh[0][1]}")
        else:
            items.append(f"miss {rank}")
    return metrics.ndcg_at_k(items, {f"{p} p.{g}": 1 for p, g in question.gold_pages}, 10)


def hnsw_recall(index: UsearchFile, stored: np.ndarray, queries: np.ndarray, ef: int, exclude=None) -> float:
    found = total = 0
    for n, query in enumerate(queries):
        skip = {exclude[n]} if exclude is not None else set()
        exact = [d for d in np.argsort(-(stored @ query), kind="stable")[:11] if d not in skip][:10]
        approx = [key for key, _ in index.search(list(query), 11, ef) if key not in skip][:10]
        found += len(set(exact) & set(approx))
        total += 10
    return round(found / total, 4)


def quantization_figures(corpus: Path, site: Path, cache: Path, mirror: Path) -> dict:
    manifest = read_manifest((site / "manifest.json").read_bytes())
    loaded = config.load_corpus(corpus)
    options = pipeline.BuildOptions(corpus, site, cache, mirror=mirror, offline=True, progress=False)
    ingested = pipeline.ingest(loaded, options)
    vectors = pipeline.embed_papers(
        ingested.papers, loaded, options, ingested.report
    ).chunks  # all from cache
    rows = chunk_rows(site, manifest)
    assert len(rows) == len(vectors)
    index = UsearchFile.from_bytes(hnsw_path(site).read_bytes())  # beside the site: the same rows
    stored = np.array([index.vector(doc) for doc in range(len(rows))], dtype=np.float64)
    stored /= np.maximum(np.linalg.norm(stored, axis=1, keepdims=True), 1e-12)

    questions = [q for q in load_questions(DEV_QUESTIONS) if q.gold_pages]
    texts = [q.query for q in questions]
    onnx = np.array(OnnxQueryEncoder.from_site(site, manifest).encode(texts))
    st = embedding.encode(embedding.load_model(resolve_model_dir(loaded.settings.model)), texts)

    def exact(query, k=20, matrix=vectors):
        return list(np.argsort(-(matrix @ query), kind="stable")[:k])

    ef = manifest.index.expansion_search
    f32 = np.mean([page_ndcg(exact(q), rows, question) for q, question in zip(onnx, questions, strict=True)])
    hnsw = np.mean(
        [
            page_ndcg([key for key, _ in index.search(list(q), 20, ef)], rows, question)
            for q, question in zip(onnx, questions, strict=True)
        ]
    )
    int8 = np.mean(
        [
            page_ndcg(exact(q, matrix=stored), rows, question)
            for q, question in zip(onnx, questions, strict=True)
        ]
    )
    with_st = np.mean(
        [page_ndcg(exact(q), rows, question) for q, question in zip(st, questions, strict=True)]
    )
    sample = random.Random(0).sample(range(len(rows)), min(1000, len(rows)))
    return {
        "dev_questions": len(questions),
        "ndcg@10_exact_f32": round(float(f32), 4),
        "ndcg@10_int8_exact": round(float(int8), 4),
        "ndcg_ratio_int8_exact_vs_f32": round(float(int8 / f32), 4),
        "ndcg@10_int8_hnsw": round(float(hnsw), 4),
        "ndcg_ratio_int8_hnsw_vs_f32": round(float(hnsw / f32), 4),
        "ndcg@10_exact_f32_sentence_transformers_queries": round(float(with_st), 4),
        "ndcg_ratio_onnx_vs_sentence_transformers_queries": round(float(f32 / with_st), 4),
        "min_cosine_onnx_vs_sentence_transformers_queries": round(
            float(np.min(np.sum(onnx * st, axis=1))), 5
        ),
        "hnsw_recall@10_vs_exact_same_vectors_dev": hnsw_recall(index, stored, onnx, ef),
        "hnsw_recall@10_vs_exact_same_vectors_1000_chunks": hnsw_recall(
            index, stored, vectors[sample], ef, exclude=sample
        ),
        "ef": ef,
    }


def drop_paper_from_cache(cache: Path, arxiv_id: str) -> None:
    """Make a warm cache forget one paper, as if it had never been on the list."""
    stem = arxiv_id.replace("/", "_")
    for path in cache.glob(f"embeddings/*/{stem}.*"):
        path.unlink()
    for path in cache.glob("parsed/*/*.json"):
        if json.loads(path.read_text(encoding="utf-8"))["arxiv_id"] == arxiv_id:
            path.unlink()


def measure(args: argparse.Namespace) -> dict:
    """The three builds, then the throughput and quantization figures the options ask for."""
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    corpus = args.work / "readingroom.toml"
    shutil.copy(args.corpus, corpus)
    cache, site = args.work / "cache", args.work / "site"

    cold = run_build(corpus, site, cache, args.mirror)
    unchanged = run_build(corpus, args.work / "site-unchanged", cache, args.mirror)
    warm_cache = args.work / "cache-incremental"
    shutil.copytree(cache, warm_cache)
    drop_paper_from_cache(warm_cache, config.load_corpus(corpus).papers[-1].arxiv_id)
    added = run_build(corpus, args.work / "site-added", warm_cache, args.mirror)

    manifest = read_manifest((site / "manifest.json").read_bytes())
    result = {
        "papers": cold[1]["papers"],
        "pages": cold[1]["pages"],
        "chunks": cold[1]["chunks"],
        "cold_build": build_row(*cold),
        "embed_chunks_per_second_in_cold_build": round(
            cold[1]["embedded_chunks"] / cold[1]["seconds"]["embed"], 1
        ),
        "no_change_rebuild": build_row(*unchanged),
        "one_paper_added_rebuild": build_row(*added),
        "artifact_bytes": artifact_sizes(site, manifest),
    }
    print(json.dumps(result, indent=1), flush=True)
    if args.embed_sample:
        result["embedding_throughput"] = embedding_throughput(
            corpus, site, cache, args.mirror, args.embed_sample
        )
    if not args.no_quantization:
        result["quantization"] = quantization_figures(corpus, site, cache, args.mirror)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mirror", type=Path, required=True)
    parser.add_argument("--corpus", type=Path, default=REPO_ROOT / "corpus" / "readingroom.toml")
    parser.add_argument("--work", type=Path, default=Path("/tmp/readingroom-bench"))
    parser.add_argument(
        "--embed-sample", type=int, default=1000, help="chunks for the throughput rounds (0: skip)"
    )
    parser.add_argument("--no-quantization", action="store_true", help="skip the quantization figures")
    add_record_option(parser)
    args = parser.parse_args(argv)
    bench_run = begin("build", argv)
    result = measure(args)
    print(json.dumps(result, indent=1))
    if args.record:
        bench_run.save(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
