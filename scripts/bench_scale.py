"""Scale benchmark: synthetic reading lists of 1,000 and 10,000 papers, built and measured as visitors get them.

    python scripts/bench_scale.py --work /tmp/scale [--sizes 1000 10000] [--record]

Each list is made by tests/support/synthetic_list.py from the mirror's real text (sentences recombined
under new ids) and real vectors with a calibrated perturbation (no encoder run: labelled
"perturbed real vectors" in the output), then built by the real `python -m builder build --offline`
from the build cache it wrote. Per size it reports:
- the site's total size on disk (every file as stored);
- in chromium (bench_browser's profiles and probes, scripts/scale_browser.py), on loopback and throttled
  (20 Mbit/s, 40 ms, as bench_browser.SLOW_LINE): start-up bytes to the first keyword result and to
  semantic-ready, the time to each, cold and reloaded from the HTTP cache; bytes and requests per
  first-sight query (median, p95); query latency (first sight, and warm: each question again); the
  workers' heaps after start-up and after the questions;
- through the search core in CPython (the code the browser runs): recall@10 of the dense side against
  exhaustive search over the float vectors and against the exhaustive search over the layout's own int8
  rows, and the top-10 overlap of BM25 with exhaustive BM25 (every posting read): the default options
  against `SearchOptions.exhaustive()`. Diversity caps are off for both, so the figures compare retrievers.
Everything browser-side is read from the network log and DevTools, so any layout is measured alike.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # tests/support: the harness
import numpy as np
from measurements import REPO_ROOT, add_record_option, begin
from scale_browser import measure_profile, spread
from support.synthetic_list import (
    calibrate_sigma,
    cosine_summary,
    load_source,
    nearest_cosines,
    real_nearest,
    write_list,
)

from builder.commands.serve import serve_in_thread
from builder.paths import DEV_QUESTIONS, SHARED_MIRROR
from builder.query_encoder import OnnxQueryEncoder
from readingroom_core.browser import open_folder
from readingroom_core.options import SearchOptions
from readingroom_core.querysyntax import embedding_text
from readingroom_core.readers.dense import fine_query

K = 10
QUESTION_SETS = [DEV_QUESTIONS, *sorted((REPO_ROOT / "tests" / "data").glob("questions-*.jsonl"))]
ROWS_AT_ONCE = 65_536  # int8 rows turned to float64 at a time for the exact scan (192 MB)
VECTORS_NOTE = (
    "perturbed real vectors: each chunk has the real vector of a mirror chunk plus Gaussian noise, "
    "sized per mirror chunk by its own nearest-neighbour cosine times sigma, calibrated to the mirror's "
    "median cosine to the nearest neighbour; not encoder output"
)


def read_questions(paths: list[Path]) -> list[str]:
    seen: dict[str, None] = {}
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                seen.setdefault(json.loads(line)["query"], None)
    return list(seen)


def generate(source, size: int, folder: Path) -> dict:
    """The list's corpus and cache (kept: a second run reuses them), its vectors, and the calibration."""
    rng = np.random.default_rng(size)
    copies = math.ceil(size / len(source.papers))
    started = time.monotonic()
    sigma = calibrate_sigma(source.vectors, source.noise, copies, rng)
    made = write_list(source, size, folder, sigma)
    np.save(folder / "vectors.npy", made.vectors)
    (folder / "chunk_ids.json").write_text(json.dumps(made.chunk_ids))
    sample = rng.choice(len(made.vectors), min(600, len(made.vectors)), replace=False)
    generation = {
        "papers": size,
        "chunks": made.chunks,
        "vectors": VECTORS_NOTE,
        "sigma": round(sigma, 4),
        "nearest_neighbour_cosine_mirror": cosine_summary(real_nearest(source.vectors, 600, rng)),
        "nearest_neighbour_cosine_synthetic": cosine_summary(
            nearest_cosines(made.vectors[sample], made.vectors, sample)
        ),
        "generate_s": round(time.monotonic() - started, 1),
    }
    (folder / "generation.json").write_text(json.dumps(generation, indent=1))
    return generation


def build(folder: Path) -> float:
    started = time.monotonic()
    command = [sys.executable, "-m", "builder", "build", "--corpus", str(folder / "corpus.toml")]
    command += ["--out", str(folder / "site"), "--cache", str(folder / "cache"), "--offline", "--no-progress"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"build of {folder} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
    report = json.loads((folder / "site" / "build-report.json").read_text())
    if report.get("embedded_chunks"):
        raise SystemExit(
            f"{folder}: the build embedded {report['embedded_chunks']} chunks; the cache was not used"
        )
    return round(time.monotonic() - started, 1)


def site_size(site: Path) -> dict:
    files = [path for path in site.rglob("*") if path.is_file()]
    data = [path for path in files if "data" in path.relative_to(site).parts[:1]]
    return {
        "files": len(files),
        "bytes": sum(path.stat().st_size for path in files),
        "data_bytes": sum(path.stat().st_size for path in data),
    }


def overlap(found: list, truth: list) -> float:
    return len(set(found) & set(truth)) / max(len(truth), 1)


def quality(site_dir: Path, questions: list[str], folder: Path, cross_checks: int = 1) -> dict:
    """Dense recall@10 and BM25 top-10 overlap of the default search against `SearchOptions.exhaustive()`,
    through the search core. The dense side is its retriever alone (no filter, phrase or named paper
    reorders it): its exhaustive top 10 is the exact cosine over every stored int8 row (numpy, over the
    rows the core reads, computed as the core computes it), and the core's own exhaustive scan (every row
    in pure Python: minutes a question at 10,000 papers) must give the same top 10 for the first
    `cross_checks` questions. BM25 is compared through whole searches, by the passages found and by
    their exact scores (the ranking loss: what the bounded top 10 scores against the exhaustive one, and
    how far below the exhaustive 10th the passages it ranks instead lie)."""
    site = open_folder(site_dir)
    queries = OnnxQueryEncoder.from_site(site_dir, site.manifest).encode(
        [embedding_text(q) for q in questions]
    )
    vectors = np.load(folder / "vectors.npy")
    chunk_ids = json.loads((folder / "chunk_ids.json").read_text())
    uncapped = SearchOptions(k=K, per_paper=0, per_section=0, per_page=0)
    exhaustive = uncapped.exhaustive()
    engine = site.engine
    reads = layout_reads(engine, questions, queries)  # first: every_row fills the block cache
    dense_lists = engine.load_vectors()
    rows = np.array(dense_lists.every_row(), dtype=np.int8)  # by doc id
    dense_exact, dense_layout, bm25, bm25_score_share, bm25_misses = [], [], [], [], []
    for number, (query, vector) in enumerate(zip(questions, queries, strict=True)):
        dense = [doc for doc, _ in dense_lists.search(list(vector), K, uncapped.scan, uncapped.rescore)]
        truth = [chunk_ids[row] for row in np.argsort(-(vectors @ vector))[:K]]
        dense_exact.append(overlap([engine.chunk(doc).id for doc in dense], truth))
        scan = exact_int8_top(rows, vector)
        if number < cross_checks:
            core = dense_lists.search(list(vector), K, exhaustive.scan, exhaustive.rescore)
            if [doc for doc, _ in core] != scan:
                raise RuntimeError(f"the core's exhaustive dense search disagrees with numpy's on {query!r}")
        dense_layout.append(overlap(dense, scan))
        bounded = engine.search(query, vector, replace(uncapped, mode="bm25"))
        full = engine.search(query, vector, replace(exhaustive, mode="bm25"))
        bm25.append(overlap([hit.chunk_id for hit in bounded], [hit.chunk_id for hit in full]))
        if full:
            bm25_score_share.append(sum(hit.score for hit in bounded) / sum(hit.score for hit in full))
            in_full = {hit.chunk_id for hit in full}
            bm25_misses += [hit.score / full[-1].score for hit in bounded if hit.chunk_id not in in_full]
    return {
        "questions": len(questions),
        "dense_exhaustive_cross_checked_by_the_core": min(cross_checks, len(questions)),
        "dense_recall_at_10_vs_exact_float": round(float(np.mean(dense_exact)), 4),
        "dense_recall_at_10_vs_layout_exhaustive": round(float(np.mean(dense_layout)), 4),
        "bm25_top10_overlap_vs_exhaustive": round(float(np.mean(bm25)), 4),
        "bm25_top10_score_share_of_exhaustive": round(float(np.mean(bm25_score_share)), 4),
        "bm25_passages_ranked_instead": {
            "count": len(bm25_misses),
            "score_of_exhaustive_10th": {  # the low end is the loss: 1 would be a tie
                name: round(float(np.quantile(bm25_misses, q)), 4) if bm25_misses else None
                for name, q in (("p5", 0.05), ("p25", 0.25), ("median", 0.5))
            },
        },
        "core_ranged_reads_per_hybrid_query": reads,
    }


def exact_int8_top(rows: np.ndarray, vector: np.ndarray) -> list[int]:
    """The top K doc ids by the cosine `readers.dense` computes over the int8 rows, in the same float
    operations (the products are exact integers), ties by doc id."""
    fine = np.array(fine_query(vector), dtype=np.float64)
    products = np.concatenate(
        [rows[at : at + ROWS_AT_ONCE].astype(np.float64) @ fine for at in range(0, len(rows), ROWS_AT_ONCE)]
    )
    squares = np.einsum("ij,ij->i", rows.astype(np.int32), rows.astype(np.int32)).astype(np.float64)
    with np.errstate(divide="ignore"):
        inverse_rows = np.where(squares > 0, 1 / np.sqrt(squares), 0.0)
    cosines = 1.0 - (1.0 - products * (1 / math.sqrt(float(fine @ fine))) * inverse_rows)
    return [int(doc) for doc in np.lexsort((np.arange(len(rows)), -cosines))[:K]]


def layout_reads(engine, questions: list[str], queries: np.ndarray) -> dict | None:
    """Requests and bytes the core's own range reader counts per default hybrid query (layouts that
    read by range count them in `engine.blocks`); None for a layout that loads everything up front."""
    blocks = getattr(engine, "blocks", None)
    if blocks is None:
        return None
    requests, sizes = [], []
    for query, vector in zip(questions, queries, strict=True):
        blocks.reset_counts()
        engine.search(query, vector, SearchOptions(k=K))
        requests.append(blocks.requests)
        sizes.append(blocks.bytes_read)
    return {"requests": spread(requests), "bytes": spread(sizes)}


def in_chromium(site: Path, questions: list[str], throttled_questions: int) -> dict:
    from playwright.sync_api import sync_playwright

    server, url = serve_in_thread(site)
    try:
        with sync_playwright() as playwright:
            return {
                "loopback": measure_profile(playwright, url, questions, throttled=False),
                "throttled": measure_profile(
                    playwright, url, questions[:throttled_questions], throttled=True
                ),
            }
    finally:
        server.shutdown()
        server.server_close()


def measure_size(
    source, size: int, work: Path, questions: list[str], throttled_questions: int, cross_checks: int
) -> dict:
    folder = work / f"list-{size}"
    if (folder / "generation.json").exists():
        generation = json.loads((folder / "generation.json").read_text())
    else:
        generation = generate(source, size, folder)
    print(f"{size} papers: {generation['chunks']} chunks generated", file=sys.stderr, flush=True)
    build_s = build(folder)
    print(f"{size} papers: built in {build_s} s", file=sys.stderr, flush=True)
    result = {"generation": generation, "build_s": build_s, "site": site_size(folder / "site")}
    result["quality"] = quality(folder / "site", questions, folder, cross_checks)
    result["browser"] = in_chromium(folder / "site", questions, throttled_questions)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--work", type=Path, required=True, help="folder for the lists, caches and sites")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000], help="papers per list")
    parser.add_argument("--mirror", type=Path, default=SHARED_MIRROR, help="the arXiv mirror (the source)")
    parser.add_argument("--corpus", type=Path, default=REPO_ROOT / "corpus" / "readingroom.toml")
    parser.add_argument("--cache", type=Path, required=True, help="a warm build cache of the mirror's corpus")
    parser.add_argument(
        "--questions", type=Path, nargs="+", default=QUESTION_SETS, help="JSONL, 'query' per line"
    )
    parser.add_argument(
        "--throttled-questions", type=int, default=30, help="questions asked over the slow line"
    )
    parser.add_argument(
        "--cross-checks",
        type=int,
        default=1,
        help="questions whose exhaustive dense top 10 the core's own mode (pure Python: slow at scale) "
        "must give as numpy does",
    )
    add_record_option(parser)
    args = parser.parse_args(argv)
    bench_run = begin("scale", argv)
    questions = read_questions(args.questions)
    source = load_source(args.corpus, args.mirror, args.cache)
    results = {
        "source": {"papers": len(source.papers), "chunks": len(source.vectors)},
        "sizes": {
            str(size): measure_size(
                source, size, args.work, questions, args.throttled_questions, args.cross_checks
            )
            for size in args.sizes
        },
    }
    print(json.dumps(results, indent=1))
    if args.record:
        bench_run.save(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
