"""Chunk vectors: the onnxruntime DocumentEncoder gives sentence-transformers' vectors, the GPU engine's
code gives them too, the engine is part of the cache key, and a rebuild with every vector cached never
starts it."""

import json
import random
import shutil
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest
from support.builds import ADDED_PAPER, SMALL_PAPERS, run_build, write_corpus

from builder import embedding as embed
from builder.embedding import GPU_ENGINE, TorchDocumentEncoder, document_encoder_path
from readingroom_core.browser import open_folder

LONG = " ".join(f"retrieval passage {n} with dense and sparse scores" for n in range(120))  # > 256 pieces


def texts_of(site) -> list[str]:
    """Real chunk texts of a built site, a few per paper."""
    engine = open_folder(site).engine
    texts = []
    for paper in engine.papers:
        doc_ids = paper.doc_ids
        texts += [engine.chunk(doc).text for doc in doc_ids[:: max(1, len(doc_ids) // 6)]]
    return texts


def test_document_vectors_equal_sentence_transformers(built_sites, model_dir):
    identity = embed.identify("all-MiniLM-L6-v2", model_dir, "", "")
    encoder = embed.DocumentEncoder(model_dir, identity, document_encoder_path(built_sites.cache, identity))
    texts = texts_of(built_sites.second) + [LONG, "  padded short text  ", "x"]
    ours = embed.encode(encoder, texts)
    reference = embed.encode(embed.load_model(model_dir), texts)
    assert ours.shape == reference.shape == (len(texts), 384)
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    assert float(np.min(np.sum(ours * reference, axis=1))) >= 0.99999
    alone = embed.encode(encoder, [texts[0]])  # batching and padding do not change a text's vector
    assert float(alone[0] @ ours[0]) >= 0.999999


def test_rows_follow_the_texts_whatever_the_length_batching(built_sites, model_dir):
    """Texts are run longest first in batches; each row must still be its own text's vector."""
    identity = embed.identify("all-MiniLM-L6-v2", model_dir, "", "")
    path = document_encoder_path(built_sites.cache, identity)
    encoder = embed.DocumentEncoder(model_dir, identity, path, batch=3)
    texts = texts_of(built_sites.second)[:8] + [LONG, "x"]
    assert len({len(t) for t in texts}) == len(texts)  # lengths differ, so batching reorders them
    forward = encoder.encode(texts)
    shuffled = random.Random(1).sample(range(len(texts)), len(texts))
    again = encoder.encode([texts[i] for i in shuffled])
    alone = np.stack([encoder.encode([text])[0] for text in texts])
    assert np.min(np.sum(again * forward[shuffled], axis=1)) >= 0.999999
    assert np.min(np.sum(alone * forward, axis=1)) >= 0.999999
    assert np.max(forward @ forward.T - np.eye(len(texts))) < 0.99  # distinct texts, distinct rows


def test_the_engine_is_part_of_the_cache_key(model_dir):
    identity = embed.identify("all-MiniLM-L6-v2", model_dir, "", "")
    assert (identity.dims, identity.max_tokens) == (384, 256)
    assert replace(identity, engine="sentence-transformers/torch").cache_key != identity.cache_key
    assert replace(identity, document_prefix="passage: ").cache_key != identity.cache_key


def test_a_rebuild_with_nothing_new_never_starts_the_model(
    built_sites, tmp_path, generated_mirror, model_dir
):
    cache = tmp_path / "cache"
    shutil.copytree(built_sites.cache, cache)
    identity = embed.identify("all-MiniLM-L6-v2", model_dir, "", "")
    export = document_encoder_path(cache, identity)
    assert export.exists()
    shutil.rmtree(export.parent)  # starting the encoder would export it again
    corpus = write_corpus(tmp_path / "corpus.toml", (*SMALL_PAPERS, ADDED_PAPER))
    assert run_build(corpus, tmp_path / "site", cache, generated_mirror) == 0
    report = json.loads((tmp_path / "site" / "build-report.json").read_text())
    assert report["embedded_chunks"] == 0
    assert not export.exists()


def test_the_gpu_engine_code_gives_the_cpu_engines_vectors_when_run_in_float32(built_sites, model_dir):
    """The GPU engine's forward (torch, length batches, float32 pooling) run on the CPU in float32:
    what differs on a GPU is only the device and float16 (scripts/bench_gpu.py measures those)."""
    identity = embed.identify("all-MiniLM-L6-v2", model_dir, "", "")
    cpu = embed.DocumentEncoder(model_dir, identity, document_encoder_path(built_sites.cache, identity))
    gpu_code = TorchDocumentEncoder(model_dir, identity, device="cpu", dtype="float32", batch=5)
    texts = texts_of(built_sites.second) + [LONG, "  padded short text  ", "x"]
    ours = embed.encode(gpu_code, texts)
    assert ours.shape == (len(texts), 384)
    assert np.allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    assert float(np.min(np.sum(ours * embed.encode(cpu, texts), axis=1))) >= 0.99999
    assert np.max(ours @ ours.T - np.eye(len(texts))) < 0.99  # each row is its own text's


def test_the_engine_follows_the_device_asked_for_and_a_missing_gpu_is_one_clear_error(model_dir):
    assert embed.choose_engine("auto", gpu=False) == embed.DOCUMENT_ENGINE
    assert embed.choose_engine("auto", gpu=True) == GPU_ENGINE
    assert embed.choose_engine("cpu", gpu=True) == embed.DOCUMENT_ENGINE
    assert embed.choose_engine("cuda", gpu=True) == GPU_ENGINE
    with pytest.raises(embed.EmbedDeviceError, match="--embed-device cpu"):
        embed.choose_engine("cuda", gpu=False)
    on_gpu = embed.identify("all-MiniLM-L6-v2", model_dir, "", "", GPU_ENGINE)
    assert on_gpu.cache_key != embed.identify("all-MiniLM-L6-v2", model_dir, "", "").cache_key
    assert embed.group_size(on_gpu) > embed.GROUP
    assert isinstance(embed.document_encoder(model_dir, on_gpu, model_dir), TorchDocumentEncoder)


def test_a_build_asking_for_a_gpu_on_a_machine_without_one_stops_before_fetching(tmp_path, generated_mirror):
    if embed.nvidia_gpu_here():
        pytest.skip("this machine has a CUDA GPU")
    corpus = write_corpus(tmp_path / "corpus.toml", SMALL_PAPERS)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "builder",
            "build",
            "--corpus",
            str(corpus),
            "--out",
            str(tmp_path / "site"),
            "--cache",
            str(tmp_path / "cache"),
            "--mirror",
            str(generated_mirror),
            "--offline",
            "--no-progress",
            "--embed-device",
            "cuda",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert "--embed-device cuda: no CUDA GPU" in done.stderr
    assert not (tmp_path / "cache" / "papers").exists() and not (tmp_path / "site").exists()


def test_a_new_cache_copies_this_process_s_export_while_that_file_is_intact(built_sites, tmp_path, model_dir):
    """A build with a new cache would trace and fuse the model again: it copies the export this process
    made for the same model and engine, unless that file has changed since, and then exports anew."""
    identity = embed.identify("all-MiniLM-L6-v2", model_dir, "", "")
    entry = document_encoder_path(built_sites.cache, identity)
    targets = [tmp_path / cache / entry.relative_to(built_sites.cache) for cache in ("a", "b", "c")]
    made = []
    for target in targets:
        if target == targets[2]:
            targets[1].write_bytes(b"not a model")  # the file last recorded no longer holds what was written
        encoder = embed.DocumentEncoder(model_dir, identity, target)  # starting it makes the export
        assert embed.encode(encoder, ["a passage about dense retrieval"]).shape == (1, 384)
        made.append(target.read_bytes())
    assert made[1] == made[0]  # a copy
    assert len(made[2]) > 1_000_000  # exported anew: the encoder above ran on it
