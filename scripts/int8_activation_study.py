"""Can int8 activations hold the embedding quality floor (min cosine 0.999 to the builder's vectors)?

onnxruntime's dynamic int8 doubles the document encoder's speed on these 2 cores but falls to a min
cosine of ~0.985 (scripts/bench_embed.py). This study tries the known remedies on the builder's fused
fp32 graph, on a seeded sample of the list's chunk texts (calibration and measured texts disjoint):

- SmoothQuant: each matmul's input channels divided by s = max|x|^a / max|w|^(1-a) (calibrated on the
  calibration texts), its weight rows multiplied by s, so outlier channels weigh less in the activation's
  int8 range; then onnxruntime's dynamic int8 (activations per tensor);
- the feed-forward output matmuls (their inputs are GELU outputs) kept in fp32, in some layers or all;
- per-token activation scales for the matmuls (ReduceMax, Round, MatMulInteger from standard ops), the
  fused attention in fp32 or onnxruntime's int8.

    python scripts/int8_activation_study.py --mirror ../shared/arxiv-mirror --cache CACHE [--texts 400]

Conclusion (Nov 2026, 400 texts, 2 rounds on a shared 2-core machine; the speed ratios to the fp32
graph varied by up to 0.3 between two runs): no variant holds the floor.
- Per tensor: plain 1.71x (2.04x in another run), min cosine 0.987; smoothed a=0.8 1.69x, 0.993;
  a=0.9 1.91x, 0.991; a=0.5 0.940 (worse).
- Feed-forward outputs (inputs: GELU outputs) in fp32: in every layer 1.36x, 0.9988; in layers 0, 4 and
  5 1.52x, 0.995.
- Per-token matmuls: attention in fp32 1.24x, 0.998; attention in int8 1.73x, 0.996 (smoothed a=0.5
  1.46x, 0.997).
The error is spread over every layer: the variants closest to the floor (0.9988, 0.998) gain only
1.24-1.36x, and none reaches it. The builder stays in fp32.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench_embed import sample_texts

from builder.offline import load_onnxruntime_first, use_offline_environment

use_offline_environment()
load_onnxruntime_first()

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from builder import config, embedding  # noqa: E402
from builder.embedding import document_encoder_path, model_shape  # noqa: E402
from builder.paths import REPO_ROOT, resolve_model_dir  # noqa: E402

MATMULS = ("MatMul", "Attention")


def weighted_inputs(model: onnx.ModelProto) -> list[onnx.NodeProto]:
    """The matmuls (and fused attentions) whose second input is a weight."""
    weights = {init.name for init in model.graph.initializer}
    return [
        n for n in model.graph.node if n.op_type in MATMULS and len(n.input) > 1 and n.input[1] in weights
    ]


def channel_peaks(fp32: Path, texts: list[str], tokenizer, scratch: Path) -> dict[str, np.ndarray]:
    """Each weighted matmul's input: its largest |value| per channel over `texts`."""
    import onnxruntime

    probe = onnx.load(str(fp32))
    names = sorted({node.input[0] for node in weighted_inputs(probe)})
    probe.graph.output.extend(helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in names)
    onnx.save(probe, str(scratch / "probe.onnx"))
    session = onnxruntime.InferenceSession(str(scratch / "probe.onnx"), providers=["CPUExecutionProvider"])
    peaks: dict[str, np.ndarray] = {}
    for text in texts:
        ids = np.array([tokenizer.encode(text.strip()).ids], np.int64)
        outputs = session.run(names, {"input_ids": ids, "attention_mask": np.ones_like(ids)})
        for name, values in zip(names, outputs, strict=True):
            peak = np.abs(values.reshape(-1, values.shape[-1])).max(0)
            peaks[name] = np.maximum(peaks[name], peak) if name in peaks else peak
    return peaks


def smoothed(fp32: Path, peaks: dict[str, np.ndarray], alpha: float, out: Path) -> Path:
    """The graph with each weighted matmul's input divided by s per channel and its weight rows times s."""
    model = onnx.load(str(fp32))
    weights = {init.name: init for init in model.graph.initializer}
    smoothing = {node.name for node in weighted_inputs(model)}
    nodes = []
    for node in model.graph.node:
        if node.name in smoothing:
            x, name = node.input[0], node.input[1]
            w = numpy_helper.to_array(weights[name]).astype(np.float32)
            s = np.maximum(peaks[x], 1e-5) ** alpha / np.maximum(np.abs(w).max(1), 1e-5) ** (1 - alpha)
            s = np.clip(s, 1e-2, 1e2).astype(np.float32)
            weights[name].CopyFrom(numpy_helper.from_array(w * s[:, None], name))
            model.graph.initializer.append(numpy_helper.from_array(1 / s, f"{name}_inverse_s"))
            nodes.append(helper.make_node("Mul", [x, f"{name}_inverse_s"], [f"{x}_for_{node.name}"]))
            node.input[0] = f"{x}_for_{node.name}"
        nodes.append(node)
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    onnx.save(model, str(out))
    return out


def per_tensor_int8(source: Path, out: Path, keep_float: tuple[str, ...] = (), only: str = "") -> Path:
    """onnxruntime's dynamic int8 of the weighted matmuls, but those whose names hold a `keep_float` part."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    names = [n.name for n in weighted_inputs(onnx.load(str(source))) if only in n.op_type]
    quantize_dynamic(
        str(source),
        str(out),
        weight_type=QuantType.QInt8,
        per_channel=True,
        nodes_to_quantize=[n for n in names if not any(part in n for part in keep_float)],
        extra_options={"DefaultTensorType": 1},
    )
    return out


def per_token_int8(source: Path, out: Path) -> Path:
    """Every float MatMul with a weight as int8 with one activation scale per token (row)."""
    model = onnx.load(str(source))
    weights = {init.name: init for init in model.graph.initializer}

    def constant(value: np.ndarray, name: str) -> str:
        model.graph.initializer.append(numpy_helper.from_array(value, name))
        return name

    step, tiny = (
        constant(np.array(1 / 127, np.float32), "step"),
        constant(np.array(1e-12, np.float32), "tiny"),
    )
    offset, zero = constant(np.array(128.0, np.float32), "offset"), constant(np.array(128, np.uint8), "zero")
    nodes = []
    for node in model.graph.node:
        if node.op_type != "MatMul" or node.input[1] not in weights:
            nodes.append(node)
            continue
        x, w = node.input[0], numpy_helper.to_array(weights[node.input[1]]).astype(np.float32)
        column_steps = (np.maximum(np.abs(w).max(0), 1e-12) / 127).astype(np.float32)
        p = node.name.replace("/", "_")
        codes = constant(np.clip(np.round(w / column_steps), -127, 127).astype(np.int8), f"{p}_codes")
        steps = constant(column_steps, f"{p}_steps")
        codes_zero = constant(np.zeros(w.shape[1], np.int8), f"{p}_codes_zero")
        nodes += [
            helper.make_node("Abs", [x], [f"{p}_abs"]),
            helper.make_node("ReduceMax", [f"{p}_abs"], [f"{p}_peak"], axes=[-1], keepdims=1),
            helper.make_node("Mul", [f"{p}_peak", step], [f"{p}_step0"]),
            helper.make_node("Max", [f"{p}_step0", tiny], [f"{p}_step"]),
            helper.make_node("Div", [x, f"{p}_step"], [f"{p}_scaled"]),
            helper.make_node("Round", [f"{p}_scaled"], [f"{p}_rounded"]),
            helper.make_node("Add", [f"{p}_rounded", offset], [f"{p}_shifted"]),
            helper.make_node("Cast", [f"{p}_shifted"], [f"{p}_u8"], to=TensorProto.UINT8),
            helper.make_node("MatMulInteger", [f"{p}_u8", codes, zero, codes_zero], [f"{p}_i32"]),
            helper.make_node("Cast", [f"{p}_i32"], [f"{p}_float"], to=TensorProto.FLOAT),
            helper.make_node("Mul", [f"{p}_float", f"{p}_step"], [f"{p}_rows"]),
            helper.make_node("Mul", [f"{p}_rows", steps], [node.output[0]]),
        ]
    del model.graph.node[:]
    model.graph.node.extend(nodes)
    onnx.save(model, str(out))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mirror", type=Path, required=True)
    parser.add_argument("--cache", type=Path, required=True, help="a build cache (parses and the export)")
    parser.add_argument("--corpus", type=Path, default=REPO_ROOT / "corpus" / "readingroom.toml")
    parser.add_argument("--texts", type=int, default=400, help="measured texts (as many again calibrate)")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    from tokenizers import Tokenizer

    chosen = config.load_corpus(args.corpus).settings
    model_dir = resolve_model_dir(chosen.model)
    identity = embedding.identify(chosen.model, model_dir, chosen.query_prefix, chosen.document_prefix)
    fp32 = document_encoder_path(args.cache, identity)
    with tempfile.TemporaryDirectory(prefix="int8-study-") as folder:
        scratch = Path(folder)
        texts = sample_texts(args.corpus, args.cache, args.mirror, 2 * args.texts, scratch)
        calibration, measured = texts[: len(texts) // 2], texts[len(texts) // 2 :]
        tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        tokenizer.enable_truncation(model_shape(model_dir)[1])
        peaks = channel_peaks(fp32, calibration, tokenizer, scratch)
        smooth = {a: smoothed(fp32, peaks, a, scratch / f"smooth-{a}.onnx") for a in (0.5, 0.8, 0.9)}
        feed_forward_out = "/output/dense/MatMul"
        graphs = {
            "fp32": fp32,
            "per tensor": per_tensor_int8(fp32, scratch / "plain.onnx"),
            **{
                f"per tensor, smoothed a={a}": per_tensor_int8(g, scratch / f"s{a}.onnx")
                for a, g in smooth.items()
            },
            "per tensor, feed-forward outputs fp32": per_tensor_int8(
                smooth[0.8], scratch / "ffo.onnx", (feed_forward_out,)
            ),
            "per tensor, feed-forward outputs of layers 0, 4, 5 fp32": per_tensor_int8(
                smooth[0.9], scratch / "ffo045.onnx", tuple(f"layer.{n}{feed_forward_out}" for n in (0, 4, 5))
            ),
            "per token, attention fp32": per_token_int8(fp32, scratch / "token.onnx"),
            "per token, attention int8": per_token_int8(
                per_tensor_int8(fp32, scratch / "attention.onnx", only="Attention"), scratch / "token-a.onnx"
            ),
            "per token smoothed a=0.5, attention int8": per_token_int8(
                per_tensor_int8(smooth[0.5], scratch / "attention-s.onnx", only="Attention"),
                scratch / "token-as.onnx",
            ),
        }
        encoders = {}
        for name, path in graphs.items():
            encoders[name] = embedding.DocumentEncoder(
                model_dir, identity, path, batch=embedding.DOCUMENT_BATCH
            )
            encoders[name].encode(["start"])
        rates: dict[str, list[float]] = {name: [] for name in graphs}
        vectors = {}
        for _ in range(args.rounds):
            for name, encoder in encoders.items():
                started = time.perf_counter()
                vectors[name] = encoder.encode(measured)
                rates[name].append(len(measured) / (time.perf_counter() - started))
    base = statistics.median(rates["fp32"])
    for name in graphs:
        cosines = np.sum(vectors[name].astype(np.float64) * vectors["fp32"], axis=1)
        print(
            f"{name:58s} {statistics.median(rates[name]) / base:.2f}x  cosine mean {cosines.mean():.5f} "
            f"p1 {np.percentile(cosines, 1):.5f} min {cosines.min():.5f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
