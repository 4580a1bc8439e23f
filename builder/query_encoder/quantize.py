"""Weight-only int8 quantisation of the query encoder's ONNX graph, on steps sized per matrix and per
word-piece row so that the shipped file deflates to near its entropy (see `quantize_weights`); the
word-piece table leaves the graph for a file of its own, read by range (readingroom_core.readers.wordpieces)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from readingroom_core.formats.wordpieces import SCALE_BYTES

INT8_QUANTIZATION = {  # absmax steps everywhere (coarse_steps=False): the baseline bench_encoder compares against
    "weights": "int8 symmetric, per output channel (MatMul) / per row (embeddings)",
    "activations": "float32",
}

# Step of each MatMul's int8 codes, in units of its output channel's std, by role and layer (0-5) of
# all-MiniLM-L6-v2's BERT. Measured by scripts/measure_encoder_steps.py
# (removed in cf98ed9, last version at 9701116; D=0.0008): each matrix alone,
# rounded at std/4, costs a mean 1 - cosine d over 320 titles and abstract sentences of the arXiv mirror
# (no evaluation question); k = sqrt(D * n / (N * 16 * d)) gives every weight the same share of the
# damage. Query and key hardly matter; value and the FFN matrices of the last layers matter most.
# A step never goes below absmax / 127, so no weight is clipped. Other models' matrices get absmax int8.
MATRIX_STEPS = {
    "query": (0.118, 0.106, 0.117, 0.112, 0.093, 0.084),
    "key": (0.152, 0.106, 0.115, 0.088, 0.089, 0.054),
    "value": (0.083, 0.042, 0.031, 0.025, 0.020, 0.015),
    "attention_output": (0.075, 0.083, 0.078, 0.066, 0.049, 0.020),
    "intermediate": (0.055, 0.058, 0.060, 0.050, 0.033, 0.046),
    "output": (0.069, 0.086, 0.086, 0.079, 0.056, 0.048),
}
TOKEN_TABLE_STEP = 0.3  # in units of the row's std; 0.4 saves 0.6 MB more at a min cosine of 0.987
QUANTIZATION = {
    "weights": "MatMul: int8 per output channel, step k x the channel's std (k per matrix role and layer, "
    "MATRIX_STEPS); word-piece table: int8 per row, step 0.3 x the row's std, outside the graph (its "
    "rows are inputs); position and token-type tables: int8 per row; dequantised at load",
    "activations": "float32",
    "steps": {"matrices": MATRIX_STEPS, "word_pieces": TOKEN_TABLE_STEP},  # part of the build cache's key
}
_MATRIX_NAME = re.compile(
    r"/encoder/layer\.(\d+)/(attention/self/query|attention/self/key|attention/self/value|"
    r"attention/output/dense|intermediate/dense|output/dense)/MatMul$"
)
_ROLES = {
    "attention/self/query": "query",
    "attention/self/key": "key",
    "attention/self/value": "value",
    "attention/output/dense": "attention_output",
    "intermediate/dense": "intermediate",
    "output/dense": "output",
}
_LAST_AXIS = "int8_rows_last_axis"
# The graph's inputs in place of the word-piece table: each token's row of codes and its scale.
WORD_PIECE_INPUTS = ("word_piece_codes", "word_piece_scales")


@dataclass(frozen=True)
class WordPieceTable:
    """The word-piece table as the graph multiplies it: int8 codes [rows, width], float32 scales [rows]."""

    codes: np.ndarray
    scales: np.ndarray

    def rows_bytes(self) -> bytes:
        """The rows file (readingroom_core.formats.wordpieces): each row's codes, then its little-endian scale."""
        scales = self.scales.astype("<f4").view(np.uint8).reshape(-1, SCALE_BYTES)
        return np.concatenate([self.codes.view(np.uint8), scales], axis=1).tobytes()


def quantize_file(fp32: Path, out: Path, coarse_steps: bool) -> WordPieceTable:
    """The fp32 graph at `fp32`, its weights quantised, checked and saved at `out`; the word-piece table
    it no longer holds."""
    model = onnx.load(str(fp32))
    table = quantize_weights(model, coarse_steps)
    onnx.checker.check_model(model)
    onnx.save(model, str(out))
    return table


def quantize_weights(model: onnx.ModelProto, coarse_steps: bool = True) -> WordPieceTable:
    """Weight-only int8 in place: per output channel for MatMul weights, per row for tables; the
    word-piece table (the Gather on the token ids) is taken out and returned, its rows become inputs.

    Why coarse steps: int8 codes with absmax steps do not compress (gzip keeps 91%), but codes on a step
    proportional to each channel's std are mostly small numbers, which deflate to near their entropy.
    Matrices differ 60x in how much their rounding moves the output, so each gets its own step
    (MATRIX_STEPS); the word-piece table, half the weights, takes 0.3 std per row (5.6 MB deflated
    against 6.8 MB for 4-bit blocks). Read by range now, its rows arrive uncompressed, so that step no
    longer saves bytes; it is kept because it gives today's vectors. `scripts/bench_encoder.py` measures the whole file's size and its
    cosine to fp32. The tables every token adds (positions, token types) keep absmax steps: their error
    lands on every token.
    Not onnxruntime's quantize_dynamic: it also quantises activations, per tensor, which costs too much on
    this model (per-channel QUInt8: min cosine 0.97 over 290 queries, weight-only: 0.997). Only standard
    opset-17 ops are added, so ONNX Runtime Web runs the file. A weight used by several nodes stays float
    (its consumers expect it under its own name).
    """
    graph = model.graph
    token_inputs = {value.name for value in graph.input}
    word_pieces: WordPieceTable | None = None
    initializers = {tensor.name: tensor for tensor in graph.initializer}
    uses = Counter(name for node in graph.node for name in node.input)
    nodes: list[onnx.NodeProto] = []
    for node in graph.node:
        weight = _float_matrix_weight(node, initializers, uses)
        if weight is None:
            nodes.append(node)
            continue
        tensor = initializers[weight]
        graph.initializer.remove(tensor)
        if node.op_type == "MatMul":
            step_in_std = matrix_step(node.name) if coarse_steps else None
            axis = 1
        elif node.input[1] in token_inputs:
            step_in_std, axis = TOKEN_TABLE_STEP if coarse_steps else None, 0
        else:
            step_in_std, axis = None, 0
        quantized, scales = int8_per_slice(numpy_helper.to_array(tensor), axis, step_in_std)
        if node.op_type == "Gather" and node.input[1] in token_inputs:
            word_pieces = WordPieceTable(quantized, scales)
            graph.input.extend(_word_piece_inputs(quantized.shape[1]))
            nodes += _scaled_rows(*WORD_PIECE_INPUTS, node.output[0], node.name or node.output[0])
            continue
        graph.initializer.extend(
            [
                numpy_helper.from_array(quantized, f"{weight}_int8"),
                numpy_helper.from_array(scales, f"{weight}_scale"),
            ]
        )
        if node.op_type == "Gather":
            nodes += _gather_int8_rows(node)
        else:
            nodes += [_dequantize(weight, axis), node]
    if word_pieces is None:
        raise ValueError(
            "the encoder graph has no word-piece table (a Gather on the token ids); the query encoder "
            "export supports BERT-like models only"
        )
    graph.initializer.append(numpy_helper.from_array(np.array([-1], dtype=np.int64), _LAST_AXIS))
    del graph.node[:]
    graph.node.extend(nodes)
    return word_pieces


def matrix_step(node_name: str) -> float | None:
    """This MatMul's step in channel stds from MATRIX_STEPS; None (absmax) for a matrix it does not know."""
    found = _MATRIX_NAME.search(node_name)
    if found is None:
        return None
    layers = MATRIX_STEPS[_ROLES[found.group(2)]]
    layer = int(found.group(1))
    return layers[layer] if layer < len(layers) else None


def _float_matrix_weight(node: onnx.NodeProto, initializers: dict, uses: Counter) -> str | None:
    """The weight this node reads, when it is a float matrix (MatMul B, Gather table) used only here."""
    if node.op_type == "MatMul":
        weight = node.input[1]
    elif node.op_type == "Gather" and all(a.name != "axis" or a.i == 0 for a in node.attribute):
        weight = node.input[0]
    else:
        return None
    tensor = initializers.get(weight)
    if tensor is None or len(tensor.dims) != 2 or tensor.data_type != TensorProto.FLOAT or uses[weight] != 1:
        return None
    return weight


def int8_per_slice(
    values: np.ndarray, axis: int, step_in_std: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric int8 with one scale per slice along `axis`: absmax / 127, or `step_in_std` times the
    slice's std where that is coarser (so no value is ever clipped). All-zero slices get scale 1."""
    values = values.astype(np.float32)
    scales = np.abs(values).max(axis=1 - axis) / 127.0
    if step_in_std is not None:
        scales = np.maximum(scales, values.std(axis=1 - axis) * step_in_std)
    scales[scales == 0] = 1.0
    scales = scales.astype(np.float32)
    broadcast = scales.reshape((1, -1) if axis == 1 else (-1, 1))
    return np.clip(np.round(values / broadcast), -127, 127).astype(np.int8), scales


def _word_piece_inputs(width: int) -> list[onnx.ValueInfoProto]:
    codes, scales = WORD_PIECE_INPUTS
    return [
        helper.make_tensor_value_info(codes, TensorProto.INT8, ["batch", "sequence", width]),
        helper.make_tensor_value_info(scales, TensorProto.FLOAT, ["batch", "sequence"]),
    ]


def _gather_int8_rows(gather: onnx.NodeProto) -> list[onnx.NodeProto]:
    """Gather int8 rows and their scales, then multiply: the whole table is never dequantised per query."""
    table, indices = gather.input
    out = gather.output[0]
    name = gather.name or out
    return [
        helper.make_node("Gather", [f"{table}_int8", indices], [f"{out}_int8"], name=f"{name}_int8", axis=0),
        helper.make_node(
            "Gather", [f"{table}_scale", indices], [f"{out}_scale"], name=f"{name}_scale", axis=0
        ),
        *_scaled_rows(f"{out}_int8", f"{out}_scale", out, name),
    ]


def _scaled_rows(codes: str, scales: str, out: str, name: str) -> list[onnx.NodeProto]:
    """`out` = float(codes) x scales, one scale per row: the value DequantizeLinear gives, bit for bit."""
    return [
        helper.make_node("Cast", [codes], [f"{out}_rows"], name=f"{name}_cast", to=TensorProto.FLOAT),
        helper.make_node(
            "Unsqueeze", [scales, _LAST_AXIS], [f"{out}_scale_column"], name=f"{name}_unsqueeze"
        ),
        helper.make_node("Mul", [f"{out}_rows", f"{out}_scale_column"], [out], name=f"{name}_mul"),
    ]


def _dequantize(weight: str, axis: int) -> onnx.NodeProto:
    """The float weight from its int8 codes, one scale per slice along `axis`, folded once at load.

    With `builder.query_encoder.DEQUANTIZE_AT_LOAD` the session replaces this constant node by the float
    weight, so a query runs plain MatMuls; the price is the float weights in memory after load.
    """
    return helper.make_node(
        "DequantizeLinear",
        [f"{weight}_int8", f"{weight}_scale"],
        [weight],
        name=f"{weight}_dequantize",
        axis=axis,
    )
