"""The shipped (quantised) query encoder against sentence-transformers and ONNX Runtime Web, and export
determinism."""

from __future__ import annotations

import hashlib
import json
import random
import re
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

from builder.stages.encoder import (
    DEQUANTIZE_AT_LOAD,
    TABLE_BLOCK,
    OnnxQueryEncoder,
    export_query_encoder,
    quantize_weights,
    uint4_blocks,
    uint4_tensor,
)
from builder.stages.runtime import WASM_DIR

ORT_WEB = WASM_DIR / "node_modules" / "onnxruntime-web" / "dist" / "ort.wasm.min.mjs"
EMBED_SCRIPT = WASM_DIR / "node" / "embed_queries.mjs"
EXTRA_QUESTIONS = Path(__file__).parent / "data" / "questions-extra.jsonl"
TECH_WORDS = (
    "attention", "retrieval", "quantization", "transformer", "embeddings", "distillation", "LoRA",
    "tokenizer", "benchmark", "perplexity", "contrastive", "sparse", "reranking", "diffusion",
)

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
    assert not float_weights  # every weight matrix ships quantised
    kinds = {t.name: (t.data_type, tuple(t.dims)) for t in model.graph.initializer}
    # 6 layers x 6 matrices in int8, and the position and token-type tables
    assert sum(kind == onnx.TensorProto.INT8 for kind, _ in kinds.values()) == 6 * 6 + 2
    table = "transformer.embeddings.word_embeddings.weight"
    assert kinds[f"{table}_uint4"] == (onnx.TensorProto.UINT4, (30522, 384))
    assert kinds[f"{table}_zero"] == (onnx.TensorProto.UINT4, (30522, 384 // TABLE_BLOCK))
    assert kinds[f"{table}_scale16"] == (onnx.TensorProto.FLOAT16, (30522, 384 // TABLE_BLOCK))
    assert [(o.domain, o.version) for o in model.opset_import] == [("", 21)]
    assert files.onnx.stat().st_size < 19_000_000  # int8 everywhere was 23.0 MB


def test_weight_only_quantization_keeps_outputs_close_and_shared_weights_float():
    """The token table (gathered by a graph input) gets 4-bit blocks, other tables and MatMuls int8."""
    import onnxruntime

    rng = np.random.default_rng(0)
    weights = {"table": rng.normal(size=(50, 64)), "positions": rng.normal(size=(4, 64)),
               "shared": rng.normal(size=(64, 64)) / 8, "weight": rng.normal(size=(64, 4))}
    graph = helper.make_graph(
        [helper.make_node("Gather", ["table", "ids"], ["rows"]),
         helper.make_node("Gather", ["positions", "slots"], ["where"]),
         helper.make_node("Add", ["rows", "where"], ["summed"]),
         helper.make_node("MatMul", ["summed", "shared"], ["a"]),
         helper.make_node("MatMul", ["a", "shared"], ["b"]),
         helper.make_node("MatMul", ["b", "weight"], ["out"])],
        "tiny",
        [helper.make_tensor_value_info("ids", onnx.TensorProto.INT64, [None, None])],
        [helper.make_tensor_value_info("out", onnx.TensorProto.FLOAT, [None, None, 4])],
        [*(numpy_helper.from_array(value.astype(np.float32), name) for name, value in weights.items()),
         numpy_helper.from_array(np.array([[0, 1, 2, 3]], dtype=np.int64), "slots")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)

    def run(m):
        options = onnxruntime.SessionOptions()
        options.add_session_config_entry(*DEQUANTIZE_AT_LOAD)
        session = onnxruntime.InferenceSession(
            m.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
        return session.run(None, {"ids": np.array([[3, 0, 49, 3]])})[0]

    expected = run(model)
    quantize_weights(model)
    onnx.checker.check_model(model)
    kinds = {t.name: t.data_type for t in model.graph.initializer}
    assert kinds["table_uint4"] == onnx.TensorProto.UINT4 and kinds["table_scale16"] == onnx.TensorProto.FLOAT16
    assert kinds["positions_int8"] == kinds["weight_int8"] == onnx.TensorProto.INT8
    assert kinds["shared"] == onnx.TensorProto.FLOAT
    assert not {"table", "positions", "weight"} & set(kinds)
    got = run(model)
    assert np.abs(got - expected).max() <= 0.1 * np.abs(expected).max()

    # the gathered rows are exactly what the codes say, (code - zero) * scale, once folded at load
    rows_model = helper.make_model(
        helper.make_graph(
            [helper.make_node("Gather", ["table", "ids"], ["rows"])], "rows",
            [helper.make_tensor_value_info("ids", onnx.TensorProto.INT64, [None, None])],
            [helper.make_tensor_value_info("rows", onnx.TensorProto.FLOAT, [None, None, 64])],
            [numpy_helper.from_array(weights["table"].astype(np.float32), "table")],
        ),
        opset_imports=[helper.make_opsetid("", 17)], ir_version=8,
    )
    quantize_weights(rows_model)
    codes, scales, zeros = uint4_blocks(weights["table"].astype(np.float32))
    wanted = (codes.astype(np.float32) - np.repeat(zeros, TABLE_BLOCK, axis=1)) * np.repeat(
        scales.astype(np.float32), TABLE_BLOCK, axis=1
    )
    assert np.array_equal(run(rows_model)[0], wanted[[3, 0, 49, 3]])


def test_uint4_blocks_pick_the_clip_with_least_error():
    rng = np.random.default_rng(1)
    table = rng.standard_t(df=3, size=(200, 64)).astype(np.float32)  # heavy tails: clipping pays
    table[7] = 0.0
    codes, scales, zeros = uint4_blocks(table)
    assert codes.dtype == np.uint8 and codes.max() <= 15 and zeros.max() <= 15
    assert scales.shape == zeros.shape == (200, 64 // TABLE_BLOCK) and scales.dtype == np.float16
    dequantized = (codes.astype(np.float32) - np.repeat(zeros, TABLE_BLOCK, axis=1)) * np.repeat(
        scales.astype(np.float32), TABLE_BLOCK, axis=1
    )
    assert np.all(dequantized[7] == 0.0)
    # against the plain asymmetric 4-bit of each block's whole range (what ratio 1.0 alone would give)
    blocks = table.reshape(200, -1, TABLE_BLOCK).astype(np.float64)
    low, high = np.minimum(blocks.min(2), 0)[..., None], np.maximum(blocks.max(2), 0)[..., None]
    step = np.where(high > low, (high - low) / 15, 1.0)
    zero = np.round(-low / step)
    plain = (np.clip(np.round(blocks / step) + zero, 0, 15) - zero) * step
    assert ((dequantized - table) ** 2).sum() < 0.97 * ((plain.reshape(200, 64) - table) ** 2).sum()
    odd = codes[:3, :5]  # 15 codes: the last byte holds one
    assert np.array_equal(numpy_helper.to_array(uint4_tensor("codes", odd)).astype(np.uint8), odd)


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


def varied_queries() -> list[str]:
    """Queries of every shape the templates cover, without the mirror: technical words and the extra
    dev questions (tests/data)."""
    rng = random.Random(1)
    queries = []
    for index, template in enumerate(QUERY_TEMPLATES * 2):
        a, b = rng.sample(TECH_WORDS, 2)
        queries.append(template.format(a=a, b=b, A=a.upper(), B=b.upper()) if index < 40 else a)
    rows = [json.loads(line) for line in EXTRA_QUESTIONS.read_text(encoding="utf-8").splitlines() if line]
    return queries + [row["query"] for row in rows]


def test_quantized_encoder_keeps_the_quality_floor(exported, model_dir):
    """The floor the browser's semantic search is held to: every query within cosine 0.99 of fp32."""
    from sentence_transformers import SentenceTransformer

    files, _ = exported
    queries = varied_queries()
    reference = SentenceTransformer(str(model_dir), device="cpu").encode(
        queries, normalize_embeddings=True, batch_size=32
    )
    shipped = np.array(OnnxQueryEncoder.from_dir(files.onnx.parent).encode(queries))
    cosines = np.sum(shipped * reference, axis=1)
    print(f"\n{len(queries)} varied queries: cosine min {cosines.min():.4f} mean {cosines.mean():.4f}")
    assert cosines.min() >= MIN_COSINE, queries[int(cosines.argmin())]
    assert cosines.mean() >= MIN_MEAN_COSINE


@pytest.mark.skipif(
    not (ORT_WEB.is_file() and shutil.which("node")),
    reason="needs node and wasm/node_modules/onnxruntime-web (npm ci --prefix wasm)",
)
def test_onnx_runtime_web_gives_the_cli_vectors(exported):
    """worker.js's ONNX Runtime Web (wasm, one thread, dequantised at load) and the CLI's onnxruntime
    compute the same query vectors from the same token ids."""
    files, _ = exported
    encoder = OnnxQueryEncoder.from_dir(files.onnx.parent)
    queries = varied_queries()[:40]
    ids = [encoder.tokenizer.encode(query) for query in queries]
    finished = subprocess.run(
        ["node", str(EMBED_SCRIPT), "--model", str(files.onnx)],
        input=json.dumps({"ids": ids}), capture_output=True, text=True, timeout=600, check=False,
    )
    assert finished.returncode == 0, finished.stderr[-3000:]
    browser = np.array(json.loads(finished.stdout)["vectors"])
    cli = np.array(encoder.encode(queries))
    cosines = np.sum(browser * cli, axis=1)
    assert cosines.min() >= 0.9999, queries[int(cosines.argmin())]
