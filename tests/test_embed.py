"""Chunk vectors: the onnxruntime DocumentEncoder gives sentence-transformers' vectors, its engine is part
of the cache key, and a rebuild with every vector cached never starts it."""

import gzip
import json
import random
import shutil
from dataclasses import replace

import numpy as np
from conftest import ADDED_PAPER, SMALL_PAPERS, run_build, write_corpus

from builder.stages import embed
from builder.stages.encoder import document_encoder_path
from readingroom_core.ranges import folder_reader

LONG = " ".join(f"retrieval passage {n} with dense and sparse scores" for n in range(120))  # > 256 pieces


def texts_of(site) -> list[str]:
    """Real chunk texts of a built site (its per-paper text files), a few per paper."""
    manifest = json.loads((site / "manifest.json").read_text())
    papers = json.loads(folder_reader(site)(manifest["files"]["papers"]).decode("utf-8"))["papers"]
    texts = []
    for paper in papers:
        chunks = json.loads(gzip.decompress((site / paper["text"]).read_bytes()))["chunks"]
        texts += [chunk["t"] for chunk in chunks[:: max(1, len(chunks) // 6)]]
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
