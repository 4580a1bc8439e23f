"""The query encoder's size and quality: this checkout's export against the int8 format and fp32.

    python scripts/bench_encoder.py --site site/ [--beir-sample 300] [--work DIR] [--json]

Three query encoders: fp32 sentence-transformers (the model itself), int8 with absmax steps everywhere
(`export_query_encoder(..., coarse_steps=False)`, the baseline the coarse steps are held to) and the export this checkout ships
(builder/query_encoder/). For each ONNX encoder it reports bytes (raw, gzip -9, what a host that
compresses sends, and the site's .gz copy), and the cosine of its query vectors to fp32 (min and mean) per
query set: the dev questions, the extra, tune and report questions (tests/data) and a seeded sample of the queries of
each BEIR set under ../shared (SciFact, NFCorpus, ArguAna). Retrieval is dense only, on the site's own
vectors and search core (readingroom_core, as the browser runs it): page-level nDCG@10, recall@10 and
MRR per question set, with the ratio of each ONNX encoder to fp32 and of the new encoder to int8. Query vectors are computed as the CLI computes them (OnnxQueryEncoder: the stdlib tokenizer, one
query per run); `embedding_text` strips field filters first, as in the browser.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import statistics
import sys
import tempfile
from pathlib import Path

from builder.offline import load_onnxruntime_first, use_offline_environment  # noqa: E402

use_offline_environment()
load_onnxruntime_first()

import numpy as np  # noqa: E402
from measurements import add_record_option, begin  # noqa: E402

from builder.evaluation.evaluate import load_questions, page_ranking, score_ranking  # noqa: E402
from builder.paths import DEV_QUESTIONS, REPO_ROOT, SHARED, bundled_model_dir  # noqa: E402
from builder.query_encoder import OnnxQueryEncoder, export_query_encoder  # noqa: E402
from builder.site.store import huffman_only_gzip  # noqa: E402
from readingroom_core.browser import open_folder  # noqa: E402
from readingroom_core.options import SearchOptions  # noqa: E402
from readingroom_core.querysyntax import embedding_text  # noqa: E402

QUESTION_SETS = {  # every question set with gold pages: the encoder's floor holds on all of them
    "dev": DEV_QUESTIONS,
    "extra": REPO_ROOT / "tests" / "data" / "questions-extra.jsonl",
    "tune": REPO_ROOT / "tests" / "data" / "questions-tune.jsonl",
    "report": REPO_ROOT / "tests" / "data" / "questions-report.jsonl",
}
BEIR_SETS = ("scifact", "nfcorpus", "arguana")
SEED = 20261123
DEPTH = 20
METRICS = ("ndcg@10", "recall@10", "mrr")


def query_sets(beir_sample: int) -> dict[str, list[str]]:
    """Every query set the encoder is held to, as the text the encoder reads."""
    sets = {name: [q.query for q in load_questions(path)] for name, path in QUESTION_SETS.items()}
    for name in BEIR_SETS:
        path = SHARED / f"beir-{name}" / "queries.jsonl"
        if not path.exists():
            print(f"skipping BEIR {name}: {path} is missing", file=sys.stderr)
            continue
        texts = [json.loads(line)["text"] for line in path.read_text(encoding="utf-8").splitlines() if line]
        sets[f"beir-{name}"] = random.Random(SEED).sample(texts, min(beir_sample, len(texts)))
    return {name: [embedding_text(text) for text in texts] for name, texts in sets.items()}


def file_bytes(path: Path) -> dict[str, int]:
    """Raw, gzip -9 (what a host that compresses sends) and the site's own .gz (store.stored_gzipped)."""
    data = path.read_bytes()
    shipped = min(len(gzip.compress(data, compresslevel=6, mtime=0)), len(huffman_only_gzip(data)))
    return {"raw": len(data), "gzip9": len(gzip.compress(data, compresslevel=9, mtime=0)), "gz": shipped}


def dense_scores(site, vectors: list[list[float]], questions) -> dict[str, float]:
    """Page-level metrics of dense-only search, averaged over the answerable questions."""
    rows = []
    for question, vector in zip(questions, vectors, strict=True):
        if not question.gold_pages:
            continue
        hits = site.engine.search(question.query, vector, SearchOptions(k=DEPTH, mode="dense"))
        relevant = {f"{paper} p.{page}" for paper, page in question.gold_pages}
        rows.append(score_ranking(page_ranking(hits, question), relevant))
    return {key: round(statistics.fmean(row[key] for row in rows), 4) for key in METRICS}


def ratio(a: float, b: float) -> float | None:
    return round(a / b, 4) if b else None


def measure(args: argparse.Namespace) -> dict:
    """Both exports' bytes, their query vectors' cosine to fp32 and dense retrieval with each."""
    from sentence_transformers import SentenceTransformer

    site = open_folder(args.site)
    model_dir = bundled_model_dir()
    work = args.work or Path(tempfile.mkdtemp(prefix="readingroom-bench-encoder-"))
    exports = {
        "int8": export_query_encoder(model_dir, work / "int8", coarse_steps=False),
        "new": export_query_encoder(model_dir, work / "new"),
    }
    encoders = {label: OnnxQueryEncoder.from_dir(files.onnx.parent) for label, files in exports.items()}
    report: dict = {
        "site": str(args.site),
        "bytes": {label: file_bytes(files.onnx) for label, files in exports.items()},
        "quantization": {
            label: json.loads(files.config.read_text())["quantization"] for label, files in exports.items()
        },
        "cosine_to_fp32": {},
        "dense": {},
    }
    reference = SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)

    def fp32(texts: list[str]) -> list[list[float]]:
        return reference.encode(texts, normalize_embeddings=True, batch_size=32).astype(float).tolist()

    for name, texts in query_sets(args.beir_sample).items():
        expected = np.array(fp32(texts))
        report["cosine_to_fp32"][name] = {}
        for label, encoder in encoders.items():
            cosines = np.sum(np.array(encoder.encode(texts)) * expected, axis=1)
            report["cosine_to_fp32"][name][label] = {
                "queries": len(texts),
                "min": round(float(cosines.min()), 4),
                "mean": round(float(cosines.mean()), 5),
            }

    for name, path in QUESTION_SETS.items():
        questions = load_questions(path)
        texts = [embedding_text(q.query) for q in questions]
        scores = {"fp32": dense_scores(site, fp32(texts), questions)}
        for label, encoder in encoders.items():
            scores[label] = dense_scores(site, encoder.encode(texts), questions)
        scores["ratios"] = {
            f"{label}/{base}": {key: ratio(scores[label][key], scores[base][key]) for key in METRICS}
            for label, base in (("int8", "fp32"), ("new", "fp32"), ("new", "int8"))
        }
        report["dense"][name] = scores
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--site", type=Path, required=True, help="a built site (the whole mirror)")
    parser.add_argument("--beir-sample", type=int, default=300, help="queries per BEIR set")
    parser.add_argument("--work", type=Path, help="where to export the encoder (default: a temp folder)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    add_record_option(parser)
    args = parser.parse_args(argv)
    bench_run = begin("encoder", argv)
    report = measure(args)
    if args.record:
        bench_run.save(report)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)
    return 0


def print_report(report: dict) -> None:
    print(f"site {report['site']}")
    for label, size in report["bytes"].items():
        print(
            f"{label:8s} {size['raw']:>11,} bytes raw {size['gzip9']:>11,} gzip -9 {size['gz']:>11,} site .gz   "
            f"{report['quantization'][label]}"
        )
    print("\ncosine to fp32 sentence-transformers (min / mean)")
    for name, by_label in report["cosine_to_fp32"].items():
        cells = "   ".join(f"{label} {c['min']:.4f} / {c['mean']:.5f}" for label, c in by_label.items())
        print(f"  {name:15s} ({next(iter(by_label.values()))['queries']:>3} queries)  {cells}")
    for label in report["bytes"]:
        worst = min(c[label]["min"] for c in report["cosine_to_fp32"].values())
        print(f"  minimum over all sets, {label}: {worst:.4f}")
    print("\ndense only, page level")
    for name, scores in report["dense"].items():
        print(f"  {name}")
        for label in ("fp32", "int8", "new"):
            print(f"    {label:8s} " + "  ".join(f"{key} {scores[label][key]:.4f}" for key in METRICS))
        for pair, ratios in scores["ratios"].items():
            print(f"    {pair:14s} " + "  ".join(f"{key} {value}" for key, value in ratios.items()))


if __name__ == "__main__":
    sys.exit(main())
