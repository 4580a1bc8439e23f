"""How much the ranged indexes' bounds cost in ranking, and what they save in bytes: the study behind
`formats.postings.DEFAULT_PREFIX` and `readers.dense.DEFAULT_SCAN` / `DEFAULT_RESCORE`.

For each question set and each bound it reports, against the exhaustive search over the same files
(every posting read; every list probed and every row rescored):
- BM25: the mean top-10 overlap, and the bytes and requests a first-sight query reads (fresh site);
- dense: recall@10 of the exhaustive int8 scan's top 10 (numpy over the stored rows, as the scale bench
  computes it and checks it against the core's own exhaustive scan), and the same bytes and requests.

    python scripts/ranged_search_study.py --site site --questions tests/data/questions-tune.jsonl
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "wasm")]

import numpy as np  # noqa: E402
from bench_scale import exact_int8_top  # noqa: E402

from builder.evaluation.evaluate import load_questions  # noqa: E402
from builder.offline import load_onnxruntime_first, use_offline_environment  # noqa: E402
from builder.query_encoder import OnnxQueryEncoder  # noqa: E402
from readingroom_core.analysis import analyze  # noqa: E402
from readingroom_core.browser import open_folder  # noqa: E402
from readingroom_core.querysyntax import embedding_text  # noqa: E402

K = 10
PREFIXES = (256, 512, 1024, 2048, 4096)
DENSE_BOUNDS = (
    (2048, 120),
    (2304, 140),
    (2560, 120),
    (2560, 140),
    (2560, 160),
    (3072, 120),
    (4096, 120),
    (4096, 200),
    (0, 140),
)  # (scan, rescore)


def first_sight(site_dir: Path, run) -> tuple[list, int, int]:
    """`run(engine)` on a freshly opened site (nothing read yet), with the ranged bytes and requests."""
    engine = open_folder(site_dir).engine
    engine.load_vectors()
    engine.blocks.reset_counts()
    found = run(engine)
    return found, engine.blocks.bytes_read, engine.blocks.requests


def keyword_study(site_dir: Path, queries: list[str]) -> list[dict]:
    exact = [
        first_sight(site_dir, lambda e, q=q: e.keyword_index.search(analyze(q), K, prefix=0))[0]
        for q in queries
    ]
    rows = []
    for prefix in (*PREFIXES, 0):
        overlaps, sizes, requests = [], [], []
        for query, truth in zip(queries, exact, strict=True):
            found, size, count = first_sight(
                site_dir, lambda e, q=query, p=prefix: e.keyword_index.search(analyze(q), K, prefix=p)
            )
            expected = {doc for doc, _ in truth}
            overlaps.append(len(expected & {doc for doc, _ in found}) / len(expected) if expected else 1.0)
            sizes.append(size)
            requests.append(count)
        rows.append(
            summary({"postings_prefix": prefix, "overlap@10": statistics.mean(overlaps)}, sizes, requests)
        )
    return rows


def stored_rows(site_dir: Path) -> np.ndarray:
    """Every passage's int8 row, by doc id, from the rows file and the lists' doc ids."""
    directory = open_folder(site_dir).engine.load_vectors().directory
    rows = np.fromfile(site_dir / directory.rows_file, dtype=np.int8).reshape(-1, directory.dims)
    lists = (site_dir / directory.lists_file).read_bytes()
    ids = [np.frombuffer(lists[e.start : e.start + 4 * e.count], "<u4") for e in directory.lists]
    by_doc = np.empty_like(rows)
    by_doc[np.concatenate(ids)] = rows
    return by_doc


def dense_study(site_dir: Path, vectors: list[list[float]]) -> list[dict]:
    rows = stored_rows(site_dir)
    exact = [exact_int8_top(rows, np.array(vector)) for vector in vectors]
    rows = []
    for scan, rescore in DENSE_BOUNDS:
        recalls, sizes, requests = [], [], []
        for vector, truth in zip(vectors, exact, strict=True):
            found, size, count = first_sight(
                site_dir, lambda e, v=vector, s=scan, r=rescore: e.load_vectors().search(v, K, s, r)
            )
            recalls.append(len(set(truth) & {d for d, _ in found}) / K)
            sizes.append(size)
            requests.append(count)
        rows.append(
            summary(
                {"scan": scan, "rescore": rescore, "recall@10": statistics.mean(recalls)}, sizes, requests
            )
        )
    return rows


def summary(row: dict, sizes: list[int], requests: list[int]) -> dict:
    ordered = sorted(sizes)
    return {
        **{key: round(value, 4) if isinstance(value, float) else value for key, value in row.items()},
        "kb_median": round(statistics.median(sizes) / 1024, 1),
        "kb_p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] / 1024, 1),
        "requests_median": statistics.median(requests),
    }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--site", type=Path, required=True)
    parser.add_argument("--questions", type=Path, action="append", required=True)
    parser.add_argument("--dense", action="store_true", help="the dense study too (needs the encoder)")
    args = parser.parse_args()
    use_offline_environment()
    load_onnxruntime_first()
    report = {}
    site = open_folder(args.site)
    for path in args.questions:
        queries = [question.query for question in load_questions(path)]
        entry = {"questions": len(queries), "bm25": keyword_study(args.site, queries)}
        if args.dense:
            encoder = OnnxQueryEncoder.from_site(args.site, site.manifest)
            vectors = [list(map(float, v)) for v in encoder.encode([embedding_text(q) for q in queries])]
            entry["dense"] = dense_study(args.site, vectors)
        report[path.name] = entry
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
