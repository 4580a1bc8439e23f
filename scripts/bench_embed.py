"""Document embedding on this machine: chunks/s of candidate settings against the builder's, with the
cosine of their vectors to the builder's (the floor a setting must hold: min 0.999).

    python scripts/bench_embed.py --mirror ../shared/arxiv-mirror --cache CACHE [--sample 300] [--rounds 3]

The chunk texts are a seeded sample of the reading list's chunks (parsed through CACHE, offline). Every
setting embeds the same texts once per round, settings interleaved, because the machine is shared: read
the ratios to the builder's setting within a round (median over rounds), wall and CPU time. Settings:

- builds: the builder's DocumentEncoder (fused fp32 ONNX export, texts sorted by token length in
  batches of DOCUMENT_BATCH, one intra-op thread per core);
- the same graph at other batch sizes, and with one thread;
- int8: onnxruntime's dynamic quantisation of that graph (int8 weights per output channel, activations
  uint8 per tensor, computed with integer kernels): every matrix, or one group of them (the attention
  output, the fused attention's query/key/value projection, the feed-forward input: the largest);
- torch: sentence-transformers itself (fp32, batches of 64), and in bfloat16 (a CPU with avx512_bf16
  runs it natively), torch's threads set to the cores.

Quality: cosine to the builder's vectors (mean, 1st percentile, min) and whether they are bitwise equal
(any other byte needs a new embedding cache key).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from builder.offline import load_onnxruntime_first, use_offline_environment  # noqa: E402

use_offline_environment()
load_onnxruntime_first()

import numpy as np  # noqa: E402
from measurements import add_record_option, begin  # noqa: E402

from builder import config, embedding, pipeline  # noqa: E402
from builder.embedding import document_encoder_path  # noqa: E402
from builder.paths import REPO_ROOT, resolve_model_dir  # noqa: E402

BUILDS = "builds"
Embedder = Callable[[list[str]], np.ndarray]


def sample_texts(corpus: Path, cache: Path, mirror: Path, size: int, work: Path) -> list[str]:
    """The texts the embed stage would send to the model, for a seeded sample of the list's chunks."""
    loaded = config.load_corpus(corpus)
    options = pipeline.BuildOptions(corpus, work / "site", cache, mirror=mirror, offline=True, progress=False)
    papers = pipeline.ingest(loaded, options).papers
    texts = [loaded.settings.document_prefix + c.indexed_text for p in papers for c in p.chunks]
    return random.Random(0).sample(texts, min(size, len(texts)))


def int8_graph(fp32: Path, out: Path, only: str | None) -> Path:
    """onnxruntime's dynamic int8 quantisation of the fp32 graph; `only`: a node-name part to keep to."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    nodes = [n.name for n in onnx.load(str(fp32)).graph.node if n.op_type in ("MatMul", "Attention")]
    quantize_dynamic(
        str(fp32),
        str(out),
        weight_type=QuantType.QInt8,
        per_channel=True,
        nodes_to_quantize=[n for n in nodes if only is None or only in n],
        extra_options={"DefaultTensorType": 1},  # the fused graph's contrib ops hide some float types
    )
    return out


def torch_embedder(model_dir: Path, bfloat16: bool) -> Embedder:
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(os.cpu_count() or 1)
    kwargs = {"model_kwargs": {"torch_dtype": torch.bfloat16}} if bfloat16 else {}
    model = SentenceTransformer(str(model_dir), device="cpu", local_files_only=True, **kwargs)

    def run(texts: list[str]) -> np.ndarray:
        order = sorted(range(len(texts)), key=lambda i: (-len(texts[i]), i))  # as bench_build orders them
        out = np.zeros((len(texts), model.get_embedding_dimension()), np.float32)
        out[order] = embedding.encode(model, [texts[i] for i in order], 64)
        return out

    return run


def settings(corpus: config.Corpus, cache: Path, scratch: Path) -> dict[str, Embedder]:
    """Every candidate, started (model loaded, session made) before any timing."""
    chosen = corpus.settings
    model_dir = resolve_model_dir(chosen.model)
    identity = embedding.identify(chosen.model, model_dir, chosen.query_prefix, chosen.document_prefix)
    fp32 = document_encoder_path(cache, identity)

    def onnx(path: Path, batch: int = embedding.DOCUMENT_BATCH, threads: int | None = None) -> Embedder:
        encoder = embedding.DocumentEncoder(model_dir, identity, path, threads=threads, batch=batch)
        encoder.encode(["start"])
        return encoder.encode

    found = {BUILDS: onnx(fp32)}
    found.update({f"fp32 batch {size}": onnx(fp32, batch=size) for size in (1, 2, 8, 16)})
    found["fp32 1 thread"] = onnx(fp32, threads=1)
    found["int8 every matrix"] = onnx(int8_graph(fp32, scratch / "int8-all.onnx", None))
    for name, part in (
        ("attention output", "attention/output/dense"),
        ("attention in-projection", "Attention_"),
        ("feed-forward input", "intermediate/dense"),
    ):
        found[f"int8 {name} only"] = onnx(
            int8_graph(fp32, scratch / f"int8-{part.replace('/', '-').strip('_-')}.onnx", part)
        )
    found["torch fp32 (sentence-transformers)"] = torch_embedder(model_dir, bfloat16=False)
    found["torch bfloat16"] = torch_embedder(model_dir, bfloat16=True)
    return found


def measure(methods: dict[str, Embedder], texts: list[str], rounds: int) -> dict[str, dict]:
    """Interleaved rounds: every setting once per round, each timed against the builds setting's run
    in the same round."""
    timings: dict[str, dict[str, list[float]]] = {
        name: {"rate": [], "cpu_rate": [], "wall_ratio": [], "cpu_ratio": []} for name in methods
    }
    vectors: dict[str, np.ndarray] = {}
    for _ in range(rounds):
        base_wall = base_cpu = 0.0
        for name, method in methods.items():
            wall, cpu = time.perf_counter(), time.process_time()
            vectors[name] = method(texts)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            if name == BUILDS:
                base_wall, base_cpu = wall, cpu
            row = timings[name]
            row["rate"].append(len(texts) / wall)
            row["cpu_rate"].append(len(texts) / cpu)
            row["wall_ratio"].append(base_wall / wall)
            row["cpu_ratio"].append(base_cpu / cpu)
        print(json.dumps({n: round(t["rate"][-1], 1) for n, t in timings.items()}), file=sys.stderr)
    return {name: summary(timings[name], vectors[name], vectors[BUILDS]) for name in methods}


def summary(timing: dict[str, list[float]], vectors: np.ndarray, builds: np.ndarray) -> dict:
    ours = vectors.astype(np.float64)  # true cosines: torch's bfloat16 rows are not quite unit length
    cosines = np.sum(ours * builds, axis=1) / np.linalg.norm(ours, axis=1) / np.linalg.norm(builds, axis=1)
    return {
        "chunks_per_second": round(statistics.median(timing["rate"]), 1),
        "chunks_per_cpu_second": round(statistics.median(timing["cpu_rate"]), 1),
        "speed_ratio_wall": round(statistics.median(timing["wall_ratio"]), 2),
        "speed_ratio_cpu": round(statistics.median(timing["cpu_ratio"]), 2),
        "cosine_mean": round(float(cosines.mean()), 6),
        "cosine_p1": round(float(np.percentile(cosines, 1)), 6),
        "cosine_min": round(float(cosines.min()), 6),
        "holds_quality_floor": bool(cosines.min() >= 0.999),
        "bitwise_equal": bool(np.array_equal(vectors, builds)),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mirror", type=Path, required=True)
    parser.add_argument("--cache", type=Path, required=True, help="a build cache (parses are reused)")
    parser.add_argument("--corpus", type=Path, default=REPO_ROOT / "corpus" / "readingroom.toml")
    parser.add_argument("--sample", type=int, default=300, help="chunk texts per round")
    parser.add_argument("--rounds", type=int, default=3)
    add_record_option(parser)
    args = parser.parse_args(argv)
    bench_run = begin("embed", argv)
    with tempfile.TemporaryDirectory(prefix="bench-embed-") as scratch:
        texts = sample_texts(args.corpus, args.cache, args.mirror, args.sample, Path(scratch))
        methods = settings(config.load_corpus(args.corpus), args.cache, Path(scratch))
        result = {
            "chunks": len(texts),
            "rounds": args.rounds,
            "builds_setting": f"{embedding.DOCUMENT_ENGINE}, batch {embedding.DOCUMENT_BATCH}, threads {os.cpu_count()}",
            "settings": measure(methods, texts, args.rounds),
        }
    print(json.dumps(result, indent=1))
    if args.record:
        bench_run.save(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
