"""Latency of the search core alone (no query encoder), in CPython and in Pyodide under Node.

    python scripts/bench_core.py --site site/ [--sizes 20000,100000] [--repeat 3] [--profile] [--json]

For the built site and for synthetic sites of `--sizes` chunks it reports engine load time, vector-file
load time and p50/p95 per query for bm25, dense and hybrid (k=10) over the 30 dev questions, first pass
(text files fetched, postings decoded) apart from later passes. Query vectors come from the site's own
ONNX encoder, once, and both interpreters get the same ones.

Synthetic sites (cached under --work): chunk texts are bags of words drawn from the unigram distribution
of the site's chunks plus BEIR SciFact abstracts, with the real chunks' lengths; vectors are random
mixes of two real chunk vectors plus Gaussian noise (unit-normalised), written by builder.writers.hnsw, so
the HNSW graph sees clustered, sentence-like data rather than uniform noise.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from builder.offline import load_onnxruntime_first, use_offline_environment  # noqa: E402

use_offline_environment()
load_onnxruntime_first()

import numpy as np  # noqa: E402

from builder.paths import DEV_QUESTIONS, SHARED_MIRROR  # noqa: E402
from builder.site.search_files import index_files, plain_name  # noqa: E402
from readingroom_core import bm25 as postings  # noqa: E402
from readingroom_core.formats.chunks import ChunkTable, chunk_table_bytes  # noqa: E402
from readingroom_core.formats.manifest import Counts, DataFiles, Manifest, manifest_bytes, read_manifest  # noqa: E402
from readingroom_core.formats.papers import PaperRecord, papers_bytes  # noqa: E402
from readingroom_core.formats.texts import PaperText, TextChunk  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # tests/support: the harness
from measurements import add_record_option, begin  # noqa: E402
from support.pyodide import (  # noqa: E402
    encode_queries,
    missing_runtime,
    run_in_cpython,
    run_in_pyodide,
)

from builder.site.runtime import build_core_wheel  # noqa: E402
from builder.writers.texts import preset_dictionary, texts_file_bytes  # noqa: E402
from readingroom_core.analysis import analyze  # noqa: E402
from readingroom_core.browser import open_folder  # noqa: E402
from readingroom_core.formats.dense import read_dense_directory  # noqa: E402
from readingroom_core.ranges import (  # noqa: E402
    BlockReader,
    folder_range_reader,
    folder_reader,  # noqa: E402
)
from readingroom_core.readers.dense import DenseLists  # noqa: E402

MODES = ["bm25", "dense", "hybrid"]
K = 10
CHUNKS_PER_PAPER = 180  # the mirror: ~20k chunks over 112 papers
NOISE = 0.8  # Gaussian noise norm relative to the unit mix of two real chunks (cosine to the mix ~0.8)
SEED = 20261122
EXTRA_WORDS = SHARED_MIRROR.parent / "beir-scifact" / "corpus.jsonl"


def load_site(site: Path) -> tuple[Manifest, list[str], np.ndarray]:
    """Manifest, chunk texts in doc-id order, and the stored rows as unit float vectors."""
    manifest = read_manifest((site / "manifest.json").read_bytes())
    engine = open_folder(site).engine
    texts = [engine.chunk(doc_id).text for doc_id in range(engine.n_chunks)]
    dense = read_dense_directory(folder_reader(site)(manifest.files.dense))
    rows = np.array(DenseLists(dense, BlockReader(folder_range_reader(site))).every_row(), dtype=np.float64)
    rows /= np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)
    return manifest, texts, rows


def word_source(texts: list[str]) -> list[str]:
    """Whitespace tokens whose frequencies synthetic text imitates: the site's chunks, plus SciFact
    abstracts when present (a 3-paper site alone has too small a vocabulary for 100k chunks)."""
    words = [word for text in texts for word in text.split()]
    if EXTRA_WORDS.is_file():
        with EXTRA_WORDS.open(encoding="utf-8") as lines:
            words += [word for line in lines for word in json.loads(line)["text"].split()]
    return words


def synthetic_postings(samples: np.ndarray, distinct: list[str]) -> postings.Postings:
    """The postings builder.stages.postings would write for these bags of words, computed per distinct word
    (analyze() once per word instead of once per chunk) and counted with numpy."""
    term_ids: dict[str, int] = {}
    flat, starts, counts = [], [], []
    for word in distinct:
        terms = analyze(word)
        starts.append(len(flat))
        counts.append(len(terms))
        flat += [term_ids.setdefault(term, len(term_ids)) for term in terms]
    flat_terms, starts, counts = np.array(flat, dtype=np.int64), np.array(starts), np.array(counts)
    n_docs, length = samples.shape
    sample_counts = counts[samples.ravel()]
    total = int(sample_counts.sum())
    doc_of_term = np.repeat(np.repeat(np.arange(n_docs), length), sample_counts)
    within = np.arange(total) - np.repeat(np.cumsum(sample_counts) - sample_counts, sample_counts)
    term_of = flat_terms[np.repeat(starts[samples.ravel()], sample_counts) + within]
    pairs, frequencies = np.unique(term_of * n_docs + doc_of_term, return_counts=True)
    terms_sorted, docs_sorted = np.divmod(pairs, n_docs)
    names = sorted(term_ids, key=term_ids.get)
    boundaries = np.flatnonzero(np.diff(terms_sorted)) + 1
    entries = {}
    for term_docs, term_frequencies, term in zip(
        np.split(docs_sorted, boundaries),
        np.split(frequencies, boundaries),
        terms_sorted[np.r_[0, boundaries]],
        strict=True,
    ):
        entries[names[term]] = postings.encode_entry(
            list(zip(term_docs.tolist(), term_frequencies.tolist(), strict=True))
        )
    doc_lengths = np.bincount(doc_of_term, minlength=n_docs)
    return postings.Postings(
        k1=1.2,
        b=0.75,
        avgdl=float(doc_lengths.mean()),
        doc_lengths=doc_lengths.tolist(),
        terms=dict(sorted(entries.items())),
    )


def synthetic_vectors(rows: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    first, second = rng.integers(0, len(rows), size), rng.integers(0, len(rows), size)
    weights = rng.uniform(0, 1, (size, 2))
    mixed = weights[:, :1] * rows[first] + weights[:, 1:] * rows[second]
    mixed /= np.maximum(np.linalg.norm(mixed, axis=1, keepdims=True), 1e-12)
    noise = rng.standard_normal(mixed.shape) * (NOISE / np.sqrt(mixed.shape[1]))
    return (mixed + noise).astype(np.float32)


def write_file(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def make_synthetic_site(out: Path, size: int, real: Manifest, texts: list[str], rows: np.ndarray) -> Path:
    """A site of `size` chunks in the layout SearchEngine reads, whose manifest keeps the real site's
    model and index sections."""
    if (out / "manifest.json").is_file():
        return out
    rng = np.random.default_rng(SEED + size)
    source = word_source(texts)
    distinct, token_ids = np.unique(np.array(source, dtype=object), return_inverse=True)
    lengths = np.array([len(text.split()) for text in texts])
    length = int(np.median(lengths))
    samples = token_ids[rng.integers(0, len(token_ids), (size, length))]
    chunk_texts = [" ".join(distinct[row].tolist()) for row in samples]
    starts = range(0, size, CHUNKS_PER_PAPER)
    paper_texts = [
        PaperText(
            f"synthetic.{number:05d}",
            tuple(
                TextChunk(f"c{doc}", 0, len(chunk_texts[doc]), chunk_texts[doc])
                for doc in range(first, min(first + CHUNKS_PER_PAPER, size))
            ),
        )
        for number, first in enumerate(starts)
    ]
    dictionary = preset_dictionary(chunk_texts)
    texts_file, located = texts_file_bytes(paper_texts, dictionary)
    papers = [
        PaperRecord(
            id=text.id,
            title=f"Synthetic paper {number}",
            first_chunk=first,
            chunk_count=len(text.chunks),
            text_bytes=(head_bytes, text_bytes),
            text_sha256=head_sha,
            year=2018 + number % 6,
            categories=("cs.CL",),
        )
        for number, (first, text, (head_bytes, text_bytes, head_sha)) in enumerate(
            zip(starts, paper_texts, located, strict=True)
        )
    ]
    built = index_files(synthetic_postings(samples, distinct), synthetic_vectors(rows, size, rng), plain_name)
    files = DataFiles(
        papers="data/papers.json",
        chunks="data/chunks.bin",
        texts="data/texts.bin",
        text_dictionary="data/text-dictionary.bin",
        **built.roles,
    )
    write_file(out / files.texts, texts_file)
    write_file(out / files.text_dictionary, dictionary)
    write_file(out / files.papers, papers_bytes(papers))
    table = ChunkTable.from_rows([(1, 1, "Synthetic section")] * size)
    write_file(out / files.chunks, chunk_table_bytes(table))
    for path, data in built.files.items():
        write_file(out / path, data)
    manifest = replace(
        real,
        title=f"Synthetic site: {size} chunks, seed {SEED}",
        counts=Counts(papers=len(papers), pages=size, chunks=size, failures=0),
        files=files,
        artifacts=(),
        runtime=None,
    )
    write_file(out / "manifest.json", manifest_bytes(manifest))
    return out


def dev_cases(site: Path) -> list[dict]:
    with DEV_QUESTIONS.open(encoding="utf-8") as lines:
        queries = [json.loads(line)["query"] for line in lines if line.strip()]
    vectors = encode_queries(site, queries)
    return [{"query": query, "vector": vector} for query, vector in zip(queries, vectors, strict=True)]


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def summarize(reply: dict) -> dict:
    """Milliseconds: loads, and p50/p95 of later passes plus the first pass's p50, per mode."""
    row = {
        "python": reply["python"],
        "chunks": reply["chunks"],
        "engine_load_ms": 1000 * reply["engine_load_s"],
        "vectors_load_ms": 1000 * reply["vectors_load_s"],
    }
    for mode in MODES:
        later = reply["later_passes_s"][mode] or reply["first_pass_s"][mode]
        row[f"{mode}_p50_ms"] = 1000 * statistics.median(later)
        row[f"{mode}_p95_ms"] = 1000 * percentile(later, 0.95)
        row[f"{mode}_first_p50_ms"] = 1000 * statistics.median(reply["first_pass_s"][mode])
    if "runtime" in reply:
        row["pyodide_load_ms"] = 1000 * reply["runtime"]["pyodide_load_s"]
        row["core_install_ms"] = 1000 * reply["runtime"]["core_install_s"]
    return row


def print_table(rows: list[dict]) -> None:
    header = f"{'site':<16}{'python':<9}{'chunks':>7}{'load':>8}{'vectors':>9}"
    header += "".join(f"{mode + ' p50/p95 (1st)':>26}" for mode in MODES)
    print(header)
    for row in rows:
        line = f"{row['site']:<16}{row['interpreter']:<9}{row['chunks']:>7}"
        line += f"{row['engine_load_ms']:>8.0f}{row['vectors_load_ms']:>9.0f}"
        for mode in MODES:
            cell = (
                f"{row[f'{mode}_p50_ms']:.1f}/{row[f'{mode}_p95_ms']:.1f} ({row[f'{mode}_first_p50_ms']:.1f})"
            )
            line += f"{cell:>26}"
        print(line)
    print("ms; load = SearchEngine(...) (papers, chunk table, postings); vectors = load_vectors();")
    print("p50/p95 over passes 2..n of the 30 dev questions; (1st) = first-pass p50")
    print("(first pass: paper text files read and postings decoded on demand).")
    pyodide = [row for row in rows if "pyodide_load_ms" in row]
    if pyodide:
        loads = ", ".join(f"{row['pyodide_load_ms']:.0f}" for row in pyodide)
        installs = ", ".join(f"{row['core_install_ms']:.0f}" for row in pyodide)
        print(f"Pyodide start per run (ms): {loads}; core wheel unpack + import (ms): {installs}")


def print_profile(site_name: str, interpreter: str, reply: dict) -> None:
    for mode, functions in reply["per_query"].items():
        print(f"\n{site_name} {interpreter} {mode}: own / cumulative ms per query, calls per query")
        for entry in functions:
            print(
                f"  {entry['own_s'] * 1000:8.2f} {entry['cumulative_s'] * 1000:8.2f} "
                f"{entry['calls_per_query']:9.0f}  {entry['function']}"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--site", type=Path, required=True, help="a built site (python -m builder build)")
    parser.add_argument(
        "--sizes", default="20000,100000", help="synthetic site sizes in chunks ('' for none)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="passes over the 30 dev questions (>= 2)")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "readingroom-bench-core")
    parser.add_argument(
        "--options", type=json.loads, default={}, help="SearchOptions overrides, e.g. '{\"candidates\": 50}'"
    )
    parser.add_argument("--no-pyodide", action="store_true", help="CPython only")
    parser.add_argument("--profile", action="store_true", help="also profile warm searches (largest site)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    add_record_option(parser)
    args = parser.parse_args(argv)
    bench_run = begin("core", argv)
    if args.repeat < 2:
        parser.error("--repeat must be at least 2 (the first pass is reported apart)")
    use_pyodide = not args.no_pyodide
    if use_pyodide and missing_runtime():
        parser.error(f"{missing_runtime()} (or pass --no-pyodide)")
    log = sys.stderr if args.json else sys.stdout

    site = args.site.resolve()
    cases = dev_cases(site)
    sites = {"site": site}
    sizes = [int(size) for size in args.sizes.split(",") if size.strip()]
    if sizes:
        real, texts, rows = load_site(site)
        source_key = hashlib.sha256((site / "manifest.json").read_bytes()).hexdigest()[:12]
        for size in sizes:
            print(f"synthetic site of {size} chunks ...", file=log, flush=True)
            sites[f"synthetic-{size // 1000}k"] = make_synthetic_site(
                args.work / f"{source_key}-{size}", size, real, texts, rows
            )
    wheel = build_core_wheel(args.work / "wheel") if use_pyodide else None

    results, profiles = [], []
    for name, path in sites.items():
        request = {
            "op": "bench",
            "site": str(path),
            "cases": cases,
            "modes": MODES,
            "k": K,
            "repeat": args.repeat,
            "options": args.options,
        }
        runs = [("cpython", run_in_cpython)]
        if use_pyodide:
            runs.append(("pyodide", lambda r: run_in_pyodide(r, wheel)))
        for interpreter, run in runs:
            print(f"{name} in {interpreter} ...", file=log, flush=True)
            results.append({"site": name, "interpreter": interpreter, **summarize(run(request))})
    if args.profile:
        name, path = list(sites.items())[-1]
        request = {
            "op": "profile",
            "site": str(path),
            "cases": cases,
            "modes": MODES,
            "k": K,
            "top": 12,
            "options": args.options,
        }
        profiles.append({"site": name, "interpreter": "cpython", **run_in_cpython(request)})
        if use_pyodide:
            profiles.append({"site": name, "interpreter": "pyodide", **run_in_pyodide(request, wheel)})

    if args.json:
        print(json.dumps({"results": results, "profiles": profiles}, indent=1))
    else:
        print_table(results)
        for entry in profiles:
            print_profile(entry["site"], entry["interpreter"], entry)
    if args.record:
        bench_run.save(results)  # the profiles are for reading on the terminal, not figures to keep
    return 0


if __name__ == "__main__":
    sys.exit(main())
