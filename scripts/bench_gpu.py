"""The build on a GPU machine: the GPU engine's embedding rate and quality, and the parse and embed
stages of a local and a Ray build there, with a projection for 10,000 papers.

A GPU machine lent for minutes, with nothing installed beyond CUDA torch, is fed in steps:
  prepare  (here)  the mirror's chunk texts and the CPU engine's vectors of them, BEIR scifact's texts,
                   and the model in float16 (what the GPU engine runs: the same numbers in half the
                   bytes to carry)
  embed    (GPU)   the GPU engine over those texts: chunks/s per batch size, in float16, bfloat16 and
                   float32, the embed stage's own rate (checkpoints included), each dtype's min cosine
                   to the CPU engine's vectors, and scifact's vectors in float16 for `beir`
  build    (GPU)   fetch (from a mirror), parse, chunk and embed of a list made from the given PDFs
                   (copied under new ids up to --papers), locally and with --ray: papers/s parsed,
                   chunks/s embedded, whether both left the same vector bytes, and the projection
  beir     (here)  scifact's nDCG@10 with the GPU vectors over the CPU engine's (floor: 0.995)
  record   (here)  the steps' printed results as docs/measurements/gpu.json, with the GPU machine's
                   description (the GPU machine cannot commit)
Each other step prints one JSON object (stderr holds progress lines).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import lzma
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from builder import embedding
from builder.embedding import GPU_ENGINE, GPU_GROUP, TorchDocumentEncoder
from builder.stages import embed

CHUNKS_PER_PAPER_AT_SCALE = 88  # 880,000 chunks for 10,000 papers, as issue 23 counts (the mirror: 85.7)
PROJECTED_PAPERS = 10_000


def prepare(mirror: Path, cache: Path, beir: Path, out: Path) -> dict:
    """From a machine whose cache holds the mirror's CPU-engine vectors."""
    from safetensors.torch import load_file, save_file

    from builder import config, pipeline
    from builder.paths import bundled_model_dir

    out.mkdir(parents=True, exist_ok=True)
    source = bundled_model_dir()
    model = out / "model"
    shutil.copytree(source, model, dirs_exist_ok=True, ignore=shutil.ignore_patterns("model.safetensors"))
    tensors = load_file(str(source / "model.safetensors"))
    halved = {name: t.half() if t.is_floating_point() else t for name, t in tensors.items()}
    save_file(halved, str(model / "model.safetensors"), metadata={"format": "pt"})
    corpus_path = out / "mirror.toml"
    write_list(corpus_path, (mirror / "reading-list.txt").read_text().split(), None)
    corpus = config.load_corpus(corpus_path)
    options = pipeline.BuildOptions(
        corpus_path, out / "unused", cache, mirror=mirror, offline=True, progress=False
    )
    papers = pipeline.ingest(corpus, options).papers
    identity = embedding.identify("all-MiniLM-L6-v2", bundled_model_dir(), "", "")
    jobs = embed.embedding_jobs(papers, identity)
    stored = embedding.EmbeddingCache(cache, identity)
    references = []
    for arxiv_id, ids, texts in jobs:
        vectors = stored.load(arxiv_id)
        references += [vectors[embedding.text_key(i, t)] for i, t in zip(ids, texts, strict=True)]
    with lzma.open(out / "jobs.json.xz", "wt") as handle:
        json.dump(jobs, handle)
    np.save(out / "references.npy", np.stack(references).astype(np.float16))
    rows = [json.loads(line) for line in (beir / "corpus.jsonl").read_text().splitlines() if line]
    with lzma.open(out / "scifact.json.xz", "wt") as handle:
        json.dump([beir_text(row) for row in rows], handle)
    return {"texts": len(references), "papers": len(jobs), "scifact_docs": len(rows)}


def beir_text(row: dict) -> str:
    from builder.evaluation.beir import BeirDataset

    one = BeirDataset("x", [row["_id"]], [row.get("title") or ""], [row.get("text") or ""], {}, {})
    return one.doc_texts[0]


def write_list(path: Path, ids: list[str], model: Path | None) -> None:
    setting = f'model = "{model}"\n' if model else ""
    path.write_text(
        f'[site]\ntitle = "bench"\n{setting}\n' + "".join(f'[[paper]]\nid = "{i}"\n' for i in ids)
    )


def embed_rates(data: Path, out: Path, passes: int, device: str) -> dict:
    import torch

    model = data / "model"
    with lzma.open(data / "jobs.json.xz", "rt") as handle:
        jobs = [tuple(job) for job in json.load(handle)]
    texts = [text for _, _, paper_texts in jobs for text in paper_texts]
    references = np.load(data / "references.npy").astype(np.float32)
    references /= np.linalg.norm(references, axis=1, keepdims=True)
    identity = embedding.identify("bench", model, "", "", GPU_ENGINE)
    groups = embedding.model_batches(texts, GPU_GROUP)
    result: dict = {
        "gpu": torch.cuda.get_device_name(0) if device == "cuda" else "none",
        "torch": torch.__version__,
        "texts": len(texts),
        "variants": [],
    }
    torch.backends.cuda.matmul.allow_tf32 = False  # float32 means float32
    for dtype, batch in [
        ("float16", 64),
        ("float16", 256),
        ("float16", 1024),
        ("bfloat16", 256),
        ("float32", 256),
    ]:
        encoder = TorchDocumentEncoder(model, identity, device, dtype, batch)
        encoder.encode(texts[:512])  # start, sanity check, kernels chosen
        vectors = np.zeros((len(texts), identity.dims), np.float32)
        seconds = []
        for _ in range(passes):
            started = time.perf_counter()
            for group in groups:
                vectors[group] = encoder.encode([texts[i] for i in group])
            seconds.append(time.perf_counter() - started)
        cosines = np.sum(vectors * references, axis=1)
        result["variants"].append(
            {
                "dtype": dtype,
                "batch": batch,
                "chunks_per_second": round(len(texts) / statistics.median(seconds), 1),
                "pass_seconds": [round(s, 2) for s in seconds],
                "min_cosine_to_cpu_engine": round(float(cosines.min()), 6),
                "mean_cosine_to_cpu_engine": round(float(cosines.mean()), 7),
            }
        )
        print(json.dumps(result["variants"][-1]), file=sys.stderr, flush=True)
        del encoder
        if device == "cuda":
            torch.cuda.empty_cache()
    encoder = TorchDocumentEncoder(model, identity, device)  # the build's settings
    cache_dir = out / "stage-cache"
    started = time.perf_counter()
    embed.embed_papers(
        encoder, embedding.EmbeddingCache(cache_dir, identity), jobs, GPU_GROUP, progress=False
    )
    stage = time.perf_counter() - started  # the model's start included
    result["embed_stage"] = {"seconds": round(stage, 2), "chunks_per_second": round(len(texts) / stage, 1)}
    with lzma.open(data / "scifact.json.xz", "rt") as handle:
        scifact = json.load(handle)
    np.save(out / "scifact-gpu.npy", encoder.encode(scifact))
    shutil.rmtree(cache_dir, ignore_errors=True)
    return result


def copied_mirror(pdfs: list[Path], meta_dir: Path, papers: int, target: Path) -> list[str]:
    """A mirror of `papers` entries made of the given PDFs, copied under new ids (2601.00001 on)."""
    (target / "pdf").mkdir(parents=True, exist_ok=True)
    (target / "meta").mkdir(parents=True, exist_ok=True)
    ids = []
    for number in range(papers):
        pdf = pdfs[number % len(pdfs)]
        meta = json.loads((meta_dir / f"{pdf.stem}.json").read_text())
        new_id = f"26{1 + number // 90000:02d}.{1 + number % 90000:05d}"
        meta.update(arxiv_id=new_id, published="")
        os.link(pdf, target / "pdf" / f"{new_id}.pdf")
        (target / "meta" / f"{new_id}.json").write_text(json.dumps(meta))
        ids.append(new_id)
    return ids


def one_build(corpus_path: Path, mirror: Path, work: Path, ray: str | None, device: str) -> dict:
    """fetch (from the mirror), parse, chunk and embed: the stages a GPU machine or a cluster changes."""
    from builder import config, pipeline

    cache = work / "cache"
    options = pipeline.BuildOptions(
        corpus_path,
        work / "site",
        cache,
        mirror=mirror,
        offline=True,
        progress=False,
        ray=ray,
        embed_device=device,
    )
    corpus = config.load_corpus(corpus_path)
    started = time.perf_counter()
    with pipeline.cluster_for(options) as cluster:
        joined = time.perf_counter() - started
        engine = embedding.choose_engine(options.embed_device, pipeline.gpu_to_embed_on(options, cluster))
        ingested = pipeline.ingest(corpus, options, cluster)
        report = ingested.report
        pipeline.embed_papers(ingested.papers, corpus, options, report, cluster, engine)
    wall = time.perf_counter() - started
    seconds = dict(report.seconds)
    digest = hashlib.sha256()  # of each text's vector: a paper's file lists them in the order they came
    for keys_path in sorted((cache / "embeddings").rglob("*.keys.json")):
        vectors = np.load(keys_path.with_name(keys_path.name.replace(".keys.json", ".npy")))
        for key, row in sorted(
            zip(json.loads(keys_path.read_text()), vectors, strict=True), key=lambda kv: kv[0]
        ):
            digest.update(key.encode() + row.tobytes())
    return {
        "engine": engine,
        "papers": report.papers,
        "chunks": report.chunks,
        "embedded_chunks": report.embedded_chunks,
        "failures": len(report.failures),
        "stage_seconds": {name: round(value, 2) for name, value in seconds.items()},
        "ray_start_seconds": round(joined, 2) if ray is not None else None,
        "wall_seconds": round(wall, 2),
        "parse_papers_per_second": round(report.papers / seconds["parse"], 2),
        "embed_chunks_per_second": round(report.embedded_chunks / seconds["embed"], 1),
        "vectors_sha256": digest.hexdigest()[:16],
    }


def build_rates(
    pdf_dirs: list[Path], meta_dir: Path, model: Path | None, papers: int, work: Path, device: str
) -> dict:
    pdfs = sorted(path for folder in pdf_dirs for path in folder.glob("*.pdf"))
    shutil.rmtree(work, ignore_errors=True)
    ids = copied_mirror(pdfs, meta_dir, papers, work / "mirror")
    corpus_path = work / "list.toml"
    write_list(corpus_path, ids, model)
    result: dict = {"pdfs": len(pdfs), "papers": papers, "cpus": os.cpu_count(), "modes": {}}
    for mode, ray in (("local", None), ("ray", "")):
        result["modes"][mode] = one_build(corpus_path, work / "mirror", work / mode, ray, device)
        print(json.dumps({mode: result["modes"][mode]}), file=sys.stderr, flush=True)
    modes = result["modes"]
    result["same_vector_bytes"] = modes["local"]["vectors_sha256"] == modes["ray"]["vectors_sha256"]
    chunks = CHUNKS_PER_PAPER_AT_SCALE * PROJECTED_PAPERS
    result["projection_10000_papers"] = {
        mode: {
            "parse_minutes": round(PROJECTED_PAPERS / row["parse_papers_per_second"] / 60, 1),
            "chunk_minutes": round(
                row["stage_seconds"].get("chunk", 0) * PROJECTED_PAPERS / row["papers"] / 60, 1
            ),
            "embed_minutes": round(chunks / row["embed_chunks_per_second"] / 60, 1),
        }
        for mode, row in modes.items()
    }
    return result


def beir_ratio(vectors_path: Path, beir: Path, cache: Path) -> dict:
    """scifact nDCG@10 (every mode) with the GPU engine's document vectors over the CPU's."""
    from builder.embedding import weights_sha256
    from builder.evaluation import beir as beir_eval
    from builder.paths import bundled_model_dir

    dataset = beir_eval.load_dataset(beir)
    settings = beir_eval.EvalSettings()
    path_of = beir_eval.embedding_cache_path
    fingerprint = beir_eval.corpus_fingerprint(dataset.doc_ids, dataset.doc_texts)
    cpu = beir_eval.evaluate_dataset(dataset, settings, cache)
    gpu_cache = cache.with_name(cache.name + "-gpu")
    target = path_of(gpu_cache, dataset.name, weights_sha256(bundled_model_dir()), fingerprint)
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(vectors_path, target)
    for part in ("encoder",):  # the query encoder's export, reused
        if (cache / part).exists() and not (gpu_cache / part).exists():
            shutil.copytree(cache / part, gpu_cache / part)
    gpu = beir_eval.evaluate_dataset(dataset, settings, gpu_cache)
    return {
        mode: {
            "cpu_ndcg@10": cpu.scores[mode]["ndcg@10"],
            "gpu_ndcg@10": gpu.scores[mode]["ndcg@10"],
            "ratio": round(gpu.scores[mode]["ndcg@10"] / cpu.scores[mode]["ndcg@10"], 4),
        }
        for mode in cpu.scores
    }


def last_object(path: Path) -> dict:
    """The JSON object a step printed last, from its log (progress lines before it)."""
    text = path.read_text()
    return json.loads(text[text.rindex("\n{\n") + 1 if "\n{\n" in text else text.index("{") :])


def record(
    embed_log: Path, build_logs: list[Path], beir_json: Path, machine: str, commands: list[str]
) -> Path:
    from measurements import BenchRun, current_commit

    builds = [last_object(path) for path in build_logs]
    results = {
        "embed": last_object(embed_log),
        "builds": {f"{build['papers']} papers": build for build in builds},
        "beir_scifact": last_object(beir_json),
    }
    cores, system, python, gpu = machine.split(",")
    run = BenchRun(
        bench="gpu",
        command=" && ".join(commands),
        date=time.strftime("%Y-%m-%d"),
        commit=current_commit(),
        machine={
            "cores": int(cores),
            "system": system,
            "python": python,
            "load_1min_at_start": None,
            "gpu": gpu,
        },
    )
    return run.save(results)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    steps = parser.add_subparsers(dest="step", required=True)
    step = steps.add_parser("prepare")
    step.add_argument("--mirror", type=Path, required=True)
    step.add_argument("--cache", type=Path, required=True, help="a cache holding the mirror's vectors")
    step.add_argument("--beir", type=Path, required=True, help="the BEIR scifact folder")
    step.add_argument("--out", type=Path, required=True)
    step = steps.add_parser("embed")
    step.add_argument("--data", type=Path, required=True, help="what `prepare` wrote")
    step.add_argument("--out", type=Path, required=True)
    step.add_argument("--passes", type=int, default=3)
    step.add_argument("--device", default="cuda", help="cpu: try the step on a machine without a GPU")
    step = steps.add_parser("build")
    step.add_argument("--pdfs", type=Path, nargs="+", required=True, help="folders of <id>.pdf")
    step.add_argument("--meta", type=Path, required=True, help="the mirror's meta/ folder")
    step.add_argument("--model", type=Path, help="a model folder (default: the bundled model)")
    step.add_argument("--papers", type=int, default=160)
    step.add_argument("--work", type=Path, default=Path("/tmp/readingroom-bench-gpu"))
    step.add_argument("--embed-device", default="cuda", choices=embedding.DEVICES)
    step = steps.add_parser("beir")
    step.add_argument("--vectors", type=Path, required=True, help="scifact-gpu.npy from `embed`")
    step.add_argument("--beir", type=Path, required=True)
    step.add_argument("--cache", type=Path, default=Path("/tmp/readingroom-bench-gpu-beir"))
    step = steps.add_parser("record")
    step.add_argument("--embed", type=Path, required=True, help="the embed step's log")
    step.add_argument("--build", type=Path, nargs="+", required=True, help="the build steps' logs")
    step.add_argument("--beir", type=Path, required=True, help="the beir step's output")
    step.add_argument("--machine", required=True, help="CORES,SYSTEM,PYTHON,GPU of the GPU machine")
    step.add_argument("--command", action="append", default=[], help="a command the GPU machine ran")
    args = parser.parse_args(argv)
    if args.step == "record":
        print(record(args.embed, args.build, args.beir, args.machine, args.command))
        return 0
    if args.step == "prepare":
        result = prepare(args.mirror, args.cache, args.beir, args.out)
    elif args.step == "embed":
        args.out.mkdir(parents=True, exist_ok=True)
        result = embed_rates(args.data, args.out, args.passes, args.device)
    elif args.step == "build":
        result = build_rates(args.pdfs, args.meta, args.model, args.papers, args.work, args.embed_device)
    else:
        result = beir_ratio(args.vectors, args.beir, args.cache)
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
