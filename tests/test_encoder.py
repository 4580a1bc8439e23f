"""The shipped (quantised) query encoder against sentence-transformers, and export determinism."""

from __future__ import annotations

import hashlib
import json
import random
import re
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from builder.stages.encoder import OnnxQueryEncoder, export_query_encoder, quantize_weights_int8

MIN_COSINE = 0.99
MIN_MEAN_COSINE = 0.995
QUERY_TEMPLATES = (
    "What is {a}?",
    "How does {a} compare to {b}?",
    "{a}",
    "{a} {b}",
    "papers about {a} for {b}",
    "Why does {a} improve {b} in transformer language models?",
    "explain {a} vs {b} briefly",
    "which paper introduced {a}",
    "{A} AND {B}",
    "{a}?!",
    "Étude: {a} — résumé des méthodes",
    "{a} 数据集 {b}",
    "{a} 🚀 {b} 🤖",
    "α-{a} with β=0.9 and λ ≥ 1e-4",
    "arXiv:1706.03762 {a}",
    "https://arxiv.org/abs/2005.11401v4 {b}",
    "[MASK] {a} [SEP]",
    "  {a}\t\n{b}  ",
    "Is {a} better than {b} when training data is scarce, and how do the authors evaluate it on benchmarks?",
    "ΣΟΦΙΑ {a} naïve café façade",
)


def mirror_terms(mirror_dir: Path, pdf_count: int = 10) -> tuple[list[str], list[str]]:
    """Frequent technical words and real sentences from the first pages of some mirror PDFs."""
    import pymupdf

    words: dict[str, int] = {}
    sentences: list[str] = []
    for pdf in sorted((mirror_dir / "pdf").glob("*.pdf"))[:pdf_count]:
        with pymupdf.open(pdf) as doc:
            text = " ".join(page.get_text() for page in list(doc)[:2])
        text = re.sub(r"\s+", " ", text)
        sentences += [s for s in re.split(r"(?<=[.?!]) ", text) if 40 <= len(s) <= 400]
        for word in re.findall(r"[A-Za-z][A-Za-z-]{5,}", text):
            words[word] = words.get(word, 0) + 1
    frequent = sorted(words, key=lambda w: (-words[w], w))[:300]
    return frequent, sentences


def generate_queries(mirror_dir: Path, count: int = 240) -> list[str]:
    terms, sentences = mirror_terms(mirror_dir)
    rng = random.Random(0)
    queries = []
    for index in range(count - 40):
        a, b = rng.sample(terms, 2)
        template = QUERY_TEMPLATES[index % len(QUERY_TEMPLATES)]
        queries.append(template.format(a=a, b=b, A=a.upper(), B=b.upper()))
    queries += rng.sample(sentences, 30)
    long_text = " ".join(rng.sample(sentences, 25))  # far beyond 256 word pieces: truncation must agree
    queries += [long_text[: 400 * (n + 1)] for n in range(10)]
    return queries


@pytest.fixture(scope="session")
def exported(tmp_path_factory, model_dir):
    out = tmp_path_factory.mktemp("encoder")
    started = time.perf_counter()
    files = export_query_encoder(model_dir, out)
    return files, time.perf_counter() - started


@pytest.mark.mirror
def test_quantized_encoder_matches_sentence_transformers(exported, model_dir, mirror_dir):
    from sentence_transformers import SentenceTransformer

    files, export_seconds = exported
    queries = generate_queries(mirror_dir)
    assert len(set(queries)) >= 200
    reference = SentenceTransformer(str(model_dir), device="cpu").encode(
        queries, normalize_embeddings=True, batch_size=32
    )
    encoder = OnnxQueryEncoder.from_dir(files.onnx.parent)
    shipped = np.array(encoder.encode(queries))
    assert np.allclose(np.linalg.norm(shipped, axis=1), 1.0, atol=1e-5)
    cosines = np.sum(shipped * reference, axis=1)
    print(f"\n{len(queries)} queries: cosine min {cosines.min():.4f} mean {cosines.mean():.4f}; "
          f"onnx {files.onnx.stat().st_size / 1e6:.1f} MB; export {export_seconds:.0f} s")
    assert cosines.min() >= MIN_COSINE, queries[int(cosines.argmin())]
    assert cosines.mean() >= MIN_MEAN_COSINE


def test_config_describes_the_graph(exported):
    import onnxruntime

    files, _ = exported
    config = json.loads(files.config.read_text())
    session = onnxruntime.InferenceSession(str(files.onnx), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == config["inputs"]
    assert [o.name for o in session.get_outputs()] == [config["output"]]
    assert config["dims"] == 384 and config["max_length"] == 256
    model = onnx.load(str(files.onnx))
    float_weights = [t.name for t in model.graph.initializer
                     if t.data_type == onnx.TensorProto.FLOAT and len(t.dims) == 2]
    assert not float_weights  # every weight matrix ships as int8
    assert sum(t.data_type == onnx.TensorProto.INT8 for t in model.graph.initializer) == 6 * 6 + 3


def test_weight_only_int8_keeps_outputs_close_and_shared_weights_float():
    import onnxruntime

    rng = np.random.default_rng(0)
    weights = {"table": rng.normal(size=(50, 8)), "shared": rng.normal(size=(8, 8)) / 3,
               "weight": rng.normal(size=(8, 4))}
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "ids"], ["rows"]),
         helper.make_node("MatMul", ["rows", "shared"], ["a"]),
         helper.make_node("MatMul", ["a", "shared"], ["b"]),
         helper.make_node("MatMul", ["b", "weight"], ["out"])],
        "tiny",
        [helper.make_tensor_value_info("ids", onnx.TensorProto.INT64, [None])],
        [helper.make_tensor_value_info("out", onnx.TensorProto.FLOAT, [None, 4])],
        [numpy_helper.from_array(value.astype(np.float32), name) for name, value in weights.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)

    def run(m):
        session = onnxruntime.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
        return session.run(None, {"ids": np.array([3, 0, 49, 3])})[0]

    expected = run(model)
    quantize_weights_int8(model)
    onnx.checker.check_model(model)
    kinds = {t.name: t.data_type for t in model.graph.initializer}
    assert kinds["table_int8"] == kinds["weight_int8"] == onnx.TensorProto.INT8
    assert kinds["shared"] == onnx.TensorProto.FLOAT and "table" not in kinds and "weight" not in kinds
    got = run(model)
    assert np.abs(got - expected).max() <= 0.02 * np.abs(expected).max()


def test_export_is_deterministic(exported, model_dir, tmp_path):
    files, _ = exported
    again = export_query_encoder(model_dir, tmp_path / "again")
    for first, second in zip(
        (files.onnx, files.vocab, files.char_classes, files.config),
        (again.onnx, again.vocab, again.char_classes, again.config),
        strict=True,
    ):
        assert first.name == second.name
        assert hashlib.sha256(first.read_bytes()).digest() == hashlib.sha256(second.read_bytes()).digest()


def test_encoder_dir_without_config_names_the_fix(tmp_path):
    with pytest.raises(FileNotFoundError, match="export_query_encoder"):
        OnnxQueryEncoder.from_dir(tmp_path)


def test_non_mean_pooling_models_are_refused(tmp_path, model_dir):
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "modules.json").write_text((model_dir / "modules.json").read_text())
    pooling = json.loads((model_dir / "1_Pooling" / "config.json").read_text())
    pooling.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True)
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps(pooling))
    with pytest.raises(ValueError, match="mean Pooling"):
        export_query_encoder(tmp_path, tmp_path / "out")
