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

from builder.query_encoder import DEQUANTIZE_AT_LOAD, OnnxQueryEncoder, export_query_encoder
from builder.query_encoder.cache import cached_query_encoder
from builder.query_encoder.quantize import (
    MATRIX_STEPS,
    TOKEN_TABLE_STEP,
    WordPieceTable,
    int8_per_slice,
    matrix_step,
    quantize_weights,
)
from builder.site.runtime import WASM_DIR
from builder.site.store import huffman_only_gzip

ORT_WEB = WASM_DIR / "node_modules" / "onnxruntime-web" / "dist" / "ort.wasm.min.mjs"
EMBED_SCRIPT = WASM_DIR / "node" / "embed_queries.mjs"
EXTRA_QUESTIONS = Path(__file__).parents[1] / "data" / "questions-extra.jsonl"
TECH_WORDS = (
    "attention",
    "retrieval",
    "quantization",
    "transformer",
    "embeddings",
    "distillation",
    "LoRA",
    "tokenizer",
    "benchmark",
    "perplexity",
    "contrastive",
    "sparse",
    "reranking",
    "diffusion",
)

MIN_COSINE = 0.99  # issue 15's floor; measured 0.9922 (240 mirror queries) and 0.9955 (70 varied) at 14.33 MB
MIN_MEAN_COSINE = 0.996  # measured 0.9973 and 0.9976
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
    reference = SentenceTransformer(str(model_dir), device="cpu", local_files_only=True).encode(
        queries, normalize_embeddings=True, batch_size=32
    )
    encoder = OnnxQueryEncoder.from_dir(files.onnx.parent)
    shipped = np.array(encoder.encode(queries))
    assert np.allclose(np.linalg.norm(shipped, axis=1), 1.0, atol=1e-5)
    cosines = np.sum(shipped * reference, axis=1)
    print(
        f"\n{len(queries)} queries: cosine min {cosines.min():.4f} mean {cosines.mean():.4f}; "
        f"onnx {files.onnx.stat().st_size / 1e6:.1f} MB; export {export_seconds:.0f} s"
    )
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
    float_weights = [
        t.name for t in model.graph.initializer if t.data_type == onnx.TensorProto.FLOAT and len(t.dims) == 2
    ]
    assert not float_weights  # every weight matrix ships quantised
    kinds = {t.name: (t.data_type, tuple(t.dims)) for t in model.graph.initializer}
    # 6 layers x 6 matrices and the position and token-type tables, all int8; the word-piece table is not
    # in the graph but in its own file, a row of 384 codes and a float32 scale per word piece
    assert sum(kind == onnx.TensorProto.INT8 for kind, _ in kinds.values()) == 6 * 6 + 2
    assert not any("word_embeddings" in name for name in kinds)
    assert files.word_pieces.stat().st_size == 30522 * (384 + 4)
    assert [(o.domain, o.version) for o in model.opset_import] == [("", 17)]
    coarse = [matrix_step(node.name) for node in model.graph.node if node.op_type == "MatMul"]
    assert sum(step is not None for step in coarse) == 6 * 6  # every BERT matrix found in MATRIX_STEPS
    packed = huffman_only_gzip(files.onnx.read_bytes())
    print(f"\nquery encoder {files.onnx.stat().st_size / 1e6:.2f} MB, {len(packed) / 1e6:.2f} MB as .gz")
    assert len(packed) < 9_000_000  # 8.61 MB; 14.33 MB with the word-piece table inside


def tiny_model(weights: dict[str, np.ndarray], nodes: list, out_width: int) -> onnx.ModelProto:
    graph = helper.make_graph(
        nodes,
        "tiny",
        [helper.make_tensor_value_info("ids", onnx.TensorProto.INT64, [None, None])],
        [helper.make_tensor_value_info(nodes[-1].output[0], onnx.TensorProto.FLOAT, [None, None, out_width])],
        [
            *(numpy_helper.from_array(value.astype(np.float32), name) for name, value in weights.items()),
            numpy_helper.from_array(np.array([[0, 1, 2, 3]], dtype=np.int64), "slots"),
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


TINY_IDS = [3, 0, 49, 3]


def run_tiny(model: onnx.ModelProto, table: WordPieceTable | None = None) -> np.ndarray:
    """The model on TINY_IDS; once quantised, with the rows of its word-piece table as inputs."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.add_session_config_entry(*DEQUANTIZE_AT_LOAD)
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    feeds = {"ids": np.array([TINY_IDS])}
    if table is not None:
        feeds.update(word_piece_codes=table.codes[[TINY_IDS]], word_piece_scales=table.scales[[TINY_IDS]])
    return session.run(None, feeds)[0]


def test_weight_only_quantization_keeps_outputs_close_and_shared_weights_float():
    """The word-piece table (gathered by a graph input) takes std steps per row and leaves the graph, a
    BERT matrix its MATRIX_STEPS step, an unknown matrix and the position table absmax steps; a shared
    weight stays float."""
    rng = np.random.default_rng(0)
    weights = {
        "table": rng.normal(size=(50, 64)),
        "positions": rng.normal(size=(4, 64)),
        "shared": rng.normal(size=(64, 64)) / 8,
        "value": rng.standard_t(df=3, size=(64, 64)) / 8,
        "weight": rng.normal(size=(64, 4)),
    }
    model = tiny_model(
        weights,
        [
            helper.make_node("Gather", ["table", "ids"], ["rows"]),
            helper.make_node("Gather", ["positions", "slots"], ["where"]),
            helper.make_node("Add", ["rows", "where"], ["summed"]),
            helper.make_node("MatMul", ["summed", "shared"], ["a"]),
            helper.make_node("MatMul", ["a", "shared"], ["b"]),
            helper.make_node(
                "MatMul",
                ["b", "value"],
                ["c"],
                name="/transformer/encoder/layer.5/attention/self/value/MatMul",
            ),
            helper.make_node("MatMul", ["c", "weight"], ["out"]),
        ],
        4,
    )
    expected = run_tiny(model)
    table = quantize_weights(model)
    onnx.checker.check_model(model)
    arrays = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    assert not any(name.startswith("table") for name in arrays)
    arrays.update(table_int8=table.codes, table_scale=table.scales)
    assert {arrays[f"{name}_int8"].dtype for name in ("table", "positions", "value", "weight")} == {
        np.dtype(np.int8)
    }
    assert arrays["shared"].dtype == np.float32
    assert not {"table", "positions", "value", "weight"} & set(arrays)
    for name, axis, step in (
        ("table", 0, TOKEN_TABLE_STEP),
        ("positions", 0, None),
        ("value", 1, MATRIX_STEPS["value"][5]),
        ("weight", 1, None),
    ):
        values = weights[name].astype(np.float32)
        wanted = np.abs(values).max(axis=1 - axis) / 127
        if step is not None:
            wanted = np.maximum(wanted, values.std(axis=1 - axis) * step)
        assert np.allclose(arrays[f"{name}_scale"], wanted, rtol=1e-6), name
    assert np.abs(arrays["table_int8"]).max() < 127 / 2  # std steps: codes use a narrow range
    got = run_tiny(model, table)
    assert np.abs(got - expected).max() <= 0.1 * np.abs(expected).max()

    # the rows fed in come out exactly as the codes say, code * scale (what the table gave in the graph)
    rows_model = tiny_model(
        {"table": weights["table"]}, [helper.make_node("Gather", ["table", "ids"], ["rows"])], 64
    )
    table = quantize_weights(rows_model)
    codes, scales = int8_per_slice(weights["table"], 0, TOKEN_TABLE_STEP)
    assert np.array_equal(table.codes, codes) and np.array_equal(table.scales, scales)
    wanted = codes.astype(np.float32) * scales[:, None]
    assert np.array_equal(run_tiny(rows_model, table)[0], wanted[TINY_IDS])
    # absmax steps everywhere (bench_encoder's baseline)
    int8_model = tiny_model(
        {"table": weights["table"]}, [helper.make_node("Gather", ["table", "ids"], ["rows"])], 64
    )
    table = quantize_weights(int8_model, coarse_steps=False)
    codes, scales = int8_per_slice(weights["table"], 0)
    assert np.array_equal(table.codes, codes) and np.array_equal(table.scales, scales)
    wanted = codes.astype(np.float32) * scales[:, None]
    assert np.array_equal(run_tiny(int8_model, table)[0], wanted[TINY_IDS])

    # a graph that gathers no rows by its token ids has no table to take out: it is refused
    no_table = tiny_model(
        {"weight": weights["weight"]}, [helper.make_node("MatMul", ["ids", "weight"], ["out"])], 4
    )
    with pytest.raises(ValueError, match="no word-piece table"):
        quantize_weights(no_table)


def test_int8_steps_follow_the_std_and_never_clip():
    rng = np.random.default_rng(1)
    matrix = rng.standard_t(df=3, size=(96, 40)).astype(np.float32)  # heavy tails: some values are far out
    matrix[:, 7] = 0.0
    codes, scales = int8_per_slice(matrix, 1, 0.05)
    assert scales.shape == (40,) and scales[7] == 1.0 and not codes[:, 7].any()
    assert np.all(scales >= np.abs(matrix).max(axis=0) / 127 * (1 - 1e-6))  # no value clipped
    assert np.all(np.abs(codes.astype(np.float32) * scales - matrix) <= scales / 2 * (1 + 1e-5))
    coarse = matrix.std(axis=0) * 0.5 > np.abs(matrix).max(axis=0) / 127
    assert coarse.any() and np.allclose(
        int8_per_slice(matrix, 1, 0.5)[1][coarse], matrix.std(axis=0)[coarse] * 0.5
    )
    assert (
        matrix_step("/transformer/encoder/layer.4/intermediate/dense/MatMul")
        == MATRIX_STEPS["intermediate"][4]
    )
    assert matrix_step("/transformer/encoder/layer.9/intermediate/dense/MatMul") is None  # a deeper model
    assert matrix_step("/transformer/pooler/dense/MatMul") is None


def test_export_is_deterministic(exported, model_dir, tmp_path):
    files, _ = exported
    again = export_query_encoder(model_dir, tmp_path / "again")
    for first, second in zip(
        (files.onnx, files.word_pieces, files.vocab, files.char_classes, files.config),
        (again.onnx, again.word_pieces, again.vocab, again.char_classes, again.config),
        strict=True,
    ):
        assert first.name == second.name
        assert hashlib.sha256(first.read_bytes()).digest() == hashlib.sha256(second.read_bytes()).digest()


def test_a_new_cache_copies_the_query_encoder_this_process_exported(model_dir, tmp_path):
    """A build with a new cache copies this process's export (the same bytes an export makes), unless one
    of its files has changed since, and then it exports anew."""
    weights = hashlib.sha256(b"this test's own cache key").hexdigest()
    made = [cached_query_encoder(model_dir, weights, tmp_path / cache) for cache in ("a", "b")]
    originals = [path.read_bytes() for path in made[0].all()]
    assert [path.read_bytes() for path in made[1].all()] == originals
    made[0].onnx.write_bytes(b"not a model")
    again = cached_query_encoder(model_dir, weights, tmp_path / "c")
    assert [path.read_bytes() for path in again.all()] == originals  # exported anew, deterministically


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
    reference = SentenceTransformer(str(model_dir), device="cpu", local_files_only=True).encode(
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
    rows = [encoder.word_pieces.read(query_ids) for query_ids in ids]
    request = {
        "ids": ids,
        "codes": [np.frombuffer(codes, dtype=np.int8).tolist() for codes, _ in rows],
        "scales": [np.frombuffer(scales, dtype="<f4").tolist() for _, scales in rows],
    }
    finished = subprocess.run(
        ["node", str(EMBED_SCRIPT), "--model", str(files.onnx)],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert finished.returncode == 0, finished.stderr[-3000:]
    browser = np.array(json.loads(finished.stdout)["vectors"])
    cli = np.array(encoder.encode(queries))
    cosines = np.sum(browser * cli, axis=1)
    assert cosines.min() >= 0.9999, queries[int(cosines.argmin())]
