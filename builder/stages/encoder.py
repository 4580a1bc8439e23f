"""The browser's query encoder: a quantised ONNX file plus what the stdlib tokenizer needs.

Mean pooling and L2 normalisation are inside the graph, so the browser feeds `input_ids` and
`attention_mask` and reads unit vectors from `sentence_embedding`; config.json says so.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import unicodedata
import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from readingroom_core.tokenizer import CHAR_CLASSES_FORMAT, WordPieceTokenizer

CONFIG_FORMAT = "readingroom-query-encoder/1"
ONNX_OPSET = 17
INPUT_NAMES = ("input_ids", "attention_mask")
OUTPUT_NAME = "sentence_embedding"
INT8_QUANTIZATION = {  # the format before coarse steps, kept for comparison (coarse_steps=False)
    "weights": "int8 symmetric, per output channel (MatMul) / per row (embeddings)",
    "activations": "float32",
}

# Step of each MatMul's int8 codes, in units of its output channel's std, by role and layer (0-5) of
# all-MiniLM-L6-v2's BERT. Measured by scripts/measure_encoder_steps.py (D=0.0008): each matrix alone,
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
TOKEN_TABLE_STEP = 0.3  # in units of the row's std; 0.4 saves 0.6 MB more but gave min cosine 0.987
QUANTIZATION = {
    "weights": "MatMul: int8 per output channel, step k x the channel's std (k per matrix role and layer, "
    "MATRIX_STEPS); word-piece table: int8 per row, step 0.3 x the row's std; position and token-type "
    "tables: int8 per row; dequantised at load",
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

# Fold each DequantizeLinear into a float weight once, at session start. Without this, native onnxruntime
# fuses DequantizeLinear + MatMul into int8 kernels that also quantise the activations (other vectors than
# the browser's), and ONNX Runtime Web dequantises every weight on every run (60 ms a query instead of 22).
# worker.js sets the same entry, so the CLI and the browser compute the same vectors.
DEQUANTIZE_AT_LOAD = ("session.disable_quant_qdq", "1")

_HANGUL = (0xAC00, 0xD7A3)
_LAST_AXIS = "int8_rows_last_axis"
_SURROGATES = range(0xD800, 0xE000)


@dataclass(frozen=True)
class EncoderFiles:
    onnx: Path
    vocab: Path
    char_classes: Path
    config: Path


def export_query_encoder(model_dir: Path, out_dir: Path, coarse_steps: bool = True) -> EncoderFiles:
    """Write the quantised encoder, vocab, char classes and config.json into `out_dir`.

    Deterministic: exporting the same model twice gives byte-identical files. `coarse_steps=False` gives
    the previous int8 format (absmax steps everywhere), which scripts/bench_encoder.py compares against.
    """
    model_dir, out_dir = Path(model_dir), Path(out_dir)
    pooling = _read_pooling(model_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    files = EncoderFiles(
        onnx=out_dir / "query_encoder.onnx",
        vocab=out_dir / "vocab.txt",
        char_classes=out_dir / "char_classes.json",
        config=out_dir / "config.json",
    )
    with tempfile.TemporaryDirectory(prefix="readingroom-onnx-") as scratch:
        fp32 = Path(scratch) / "fp32.onnx"
        dims, _ = _export_fp32(model_dir, fp32)
        _quantize_weights(fp32, files.onnx, coarse_steps)
    files.vocab.write_bytes((model_dir / "vocab.txt").read_bytes())
    _write_json(files.char_classes, build_char_classes(model_dir / "tokenizer.json"))
    _write_json(
        files.config,
        {
            "format": CONFIG_FORMAT,
            "onnx": files.onnx.name,
            "vocab": files.vocab.name,
            "char_classes": files.char_classes.name,
            "inputs": list(INPUT_NAMES),
            "input_type": "int64 [batch, sequence]; token_type_ids are zeros inside the graph",
            "output": OUTPUT_NAME,
            "dims": dims,
            "max_length": pooling["max_length"],
            "pooling": "mean over attention_mask, inside the graph",
            "normalize": "L2, inside the graph: the output rows are unit vectors",
            "quantization": QUANTIZATION if coarse_steps else INT8_QUANTIZATION,
        },
    )
    return files


def _read_pooling(model_dir: Path) -> dict:
    """The graph implements mean pooling + Normalize only; refuse models configured otherwise."""
    modules_path = model_dir / "modules.json"
    if not modules_path.exists():
        raise FileNotFoundError(
            f"{modules_path} is missing: {model_dir} is not a sentence-transformers folder"
        )
    modules = json.loads(modules_path.read_text())
    types = [module["type"].rsplit(".", 1)[-1] for module in modules]
    pooling_dirs = [module["path"] for module in modules if module["type"].endswith(".Pooling")]
    pooling = json.loads((model_dir / pooling_dirs[0] / "config.json").read_text()) if pooling_dirs else {}
    if types != ["Transformer", "Pooling", "Normalize"] or not pooling.get("pooling_mode_mean_tokens"):
        raise ValueError(
            f"{model_dir}: the query encoder export supports Transformer -> mean Pooling -> Normalize "
            f"models only, found modules {types} with pooling {pooling}; pick such a model"
        )
    st_config = json.loads((model_dir / "sentence_bert_config.json").read_text())
    return {"max_length": int(st_config["max_seq_length"])}


def model_shape(model_dir: Path) -> tuple[int, int]:
    """(embedding width, most tokens per text) from the model folder's files, without loading it."""
    max_length = _read_pooling(model_dir)["max_length"]
    modules = json.loads((model_dir / "modules.json").read_text())
    pooling_dir = next(module["path"] for module in modules if module["type"].endswith(".Pooling"))
    pooling = json.loads((model_dir / pooling_dir / "config.json").read_text())
    return int(pooling["word_embedding_dimension"]), max_length


def export_document_encoder(model_dir: Path, onnx_path: Path, check_texts: Sequence[str]) -> str:
    """The model in fp32 for embedding chunks: traced with plain (eager) attention so onnxruntime's BERT
    optimizer can fuse attention, skip-layer-norm and GELU into single kernels; returns "fused".

    The fused graph must give the traced model's vectors for `check_texts` (min cosine 0.99999, as a
    padded batch); a model whose graph the optimizer does not know, or gets wrong, is kept unfused
    ("plain"): slower, never different.
    """
    import onnxruntime
    import torch
    from onnxruntime.transformers.optimizer import optimize_model
    from tokenizers import Tokenizer

    config = json.loads((model_dir / "config.json").read_text())
    onnx_path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="readingroom-onnx-") as scratch:
        plain = Path(scratch) / "plain.onnx"
        _, traced = _export_fp32(model_dir, plain, attention="eager")
        tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        tokenizer.enable_truncation(model_shape(model_dir)[1])
        tokenizer.enable_padding()
        encodings = tokenizer.encode_batch([text.strip() for text in check_texts])
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        with torch.no_grad():
            expected = traced(torch.from_numpy(ids), torch.from_numpy(mask)).numpy()
        try:
            fused = Path(scratch) / "fused.onnx"
            optimize_model(
                str(plain),
                model_type="bert",
                num_heads=int(config.get("num_attention_heads", 0)),
                hidden_size=int(config.get("hidden_size", 0)),
                opt_level=1,
                use_gpu=False,
            ).save_model_to_file(str(fused))
            session = onnxruntime.InferenceSession(str(fused), providers=["CPUExecutionProvider"])
            got = session.run([OUTPUT_NAME], {"input_ids": ids, "attention_mask": mask})[0]
            agrees = float(np.min(np.sum(got * expected, axis=1))) >= 0.99999
        except Exception:  # an architecture the optimizer does not handle: keep the plain graph
            agrees = False
        shutil.copyfile(fused if agrees else plain, onnx_path)
    return "fused" if agrees else "plain"


def _export_fp32(model_dir: Path, onnx_path: Path, attention: str | None = None):
    """Trace BERT + mean pooling + L2 normalisation to ONNX; returns the embedding width and the traced
    module. `attention="eager"` traces attention as plain ops (what onnxruntime's fusion recognises)."""
    import torch
    from transformers import AutoModel

    class PooledEncoder(torch.nn.Module):
        def __init__(self, transformer: torch.nn.Module):
            super().__init__()
            self.transformer = transformer

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            token_type_ids = torch.zeros_like(input_ids)
            hidden = self.transformer(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
            mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, p=2, dim=1)

    extra = {"attn_implementation": attention} if attention else {}
    transformer = AutoModel.from_pretrained(str(model_dir), local_files_only=True, **extra)
    encoder = PooledEncoder(transformer).eval()
    example = (torch.ones(1, 8, dtype=torch.int64), torch.ones(1, 8, dtype=torch.int64))
    dynamic = {0: "batch", 1: "sequence"}
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter(
            "ignore", torch.jit.TracerWarning
        )  # shape-dependent branches: dynamic axes handle them
        torch.onnx.export(
            encoder,
            example,
            str(onnx_path),
            dynamo=False,
            opset_version=ONNX_OPSET,
            input_names=list(INPUT_NAMES),
            output_names=[OUTPUT_NAME],
            dynamic_axes={**{name: dynamic for name in INPUT_NAMES}, OUTPUT_NAME: {0: "batch"}},
        )
    return int(transformer.config.hidden_size), encoder


def _quantize_weights(fp32: Path, out: Path, coarse_steps: bool) -> None:
    model = onnx.load(str(fp32))
    quantize_weights(model, coarse_steps)
    onnx.checker.check_model(model)
    onnx.save(model, str(out))


def quantize_weights(model: onnx.ModelProto, coarse_steps: bool = True) -> None:
    """Weight-only int8 in place: per output channel for MatMul weights, per row for tables.

    Why coarse steps (measured against fp32 sentence-transformers over 1,130 queries, experiments branch
    `encoder-experiments`, experiments/encoder-frontier/RESULTS.md): int8 codes with absmax steps do not
    compress (gzip keeps 91%), but codes on a step proportional to each channel's std are mostly small
    numbers, which deflate to near their entropy. Matrices differ 60x in how much their rounding moves the
    output, so each gets its own step (MATRIX_STEPS); the word-piece table, half the weights, takes
    0.3 std per row (5.6 MB deflated against 6.8 MB for 4-bit blocks). The whole file: 14.33 MB as .gz
    (was 16.39) at min cosine 0.9936 to fp32 over bench_encoder's 1,060 queries (was 0.9959). The tables every
    token adds (positions, token types) keep absmax steps: their error lands on every token.
    Not onnxruntime's quantize_dynamic: it also quantises activations, per tensor, which costs too much on
    this model (per-channel QUInt8: min cosine 0.97 over 290 queries, weight-only: 0.997). Only standard
    opset-17 ops are added, so ONNX Runtime Web runs the file. A weight used by several nodes stays float
    (its consumers expect it under its own name).
    """
    graph = model.graph
    token_inputs = {value.name for value in graph.input} if coarse_steps else set()
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
            step_in_std, axis = TOKEN_TABLE_STEP, 0
        else:
            step_in_std, axis = None, 0
        quantized, scales = int8_per_slice(numpy_helper.to_array(tensor), axis, step_in_std)
        graph.initializer.extend(
            [
                numpy_helper.from_array(quantized, f"{weight}_int8"),
                numpy_helper.from_array(scales, f"{weight}_scale"),
            ]
        )
        if node.op_type == "Gather" and step_in_std is None:
            nodes += _gather_int8_rows(node)
        else:
            nodes += [_dequantize(weight, axis), node]
    if any(_LAST_AXIS in node.input for node in nodes):
        graph.initializer.append(numpy_helper.from_array(np.array([-1], dtype=np.int64), _LAST_AXIS))
    del graph.node[:]
    graph.node.extend(nodes)


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


def _gather_int8_rows(gather: onnx.NodeProto) -> list[onnx.NodeProto]:
    """Gather int8 rows and their scales, then multiply: the whole table is never dequantised per query."""
    table, indices = gather.input
    out = gather.output[0]
    name = gather.name or out
    return [
        helper.make_node("Gather", [f"{table}_int8", indices], [f"{out}_int8"], name=f"{name}_int8", axis=0),
        helper.make_node("Cast", [f"{out}_int8"], [f"{out}_rows"], name=f"{name}_cast", to=TensorProto.FLOAT),
        helper.make_node(
            "Gather", [f"{table}_scale", indices], [f"{out}_scale"], name=f"{name}_scale", axis=0
        ),
        helper.make_node(
            "Unsqueeze", [f"{out}_scale", _LAST_AXIS], [f"{out}_scale_column"], name=f"{name}_unsqueeze"
        ),
        helper.make_node("Mul", [f"{out}_rows", f"{out}_scale_column"], [out], name=f"{name}_mul"),
    ]


def _dequantize(weight: str, axis: int) -> onnx.NodeProto:
    """The float weight from its int8 codes, one scale per slice along `axis`, folded once at load.

    With DEQUANTIZE_AT_LOAD the session replaces this constant node by the float weight, so a query runs
    plain MatMuls and one plain Gather for the word-piece table (gathering int8 rows and scaling them per
    query would cost a few small ops a query); the price is the float weights in memory after load.
    """
    return helper.make_node(
        "DequantizeLinear",
        [f"{weight}_int8", f"{weight}_scale"],
        [weight],
        name=f"{weight}_dequantize",
        axis=axis,
    )


def _write_json(path: Path, data: dict) -> None:
    path.write_text(
        json.dumps(data, ensure_ascii=False, separators=(",", ":"), sort_keys=True) + "\n", encoding="utf-8"
    )


def build_char_classes(tokenizer_json: Path) -> dict:
    """Probe the Rust tokenizer over every code point; the stdlib tokenizer replays the answers."""
    from tokenizers import Tokenizer

    spec = json.loads(Path(tokenizer_json).read_text(encoding="utf-8"))
    _require_bert_wordpiece(spec, tokenizer_json)
    tokenizer = Tokenizer.from_file(str(tokenizer_json))
    code_points = [cp for cp in range(0x110000) if cp not in _SURROGATES]

    dropped, whitespace, cjk, mapped = [], [], [], {}
    for cp in code_points:
        char = chr(cp)
        out = tokenizer.normalizer.normalize_str(char)
        if out == char:
            continue
        if out == "":
            dropped.append(cp)
        elif out == " ":
            whitespace.append(cp)
        elif out == f" {char} ":
            cjk.append(cp)
        elif not (_HANGUL[0] <= cp <= _HANGUL[1] and out == unicodedata.normalize("NFD", char)):
            mapped[str(cp)] = out
    hangul_left = [cp for cp in range(_HANGUL[0], _HANGUL[1] + 1) if str(cp) in mapped]
    if hangul_left:
        raise ValueError(
            f"{tokenizer_json}: Hangul syllables {hangul_left[:5]} do not normalise to their "
            "arithmetic NFD; the char-class table cannot describe this tokenizer"
        )

    split_on, isolated = [], []
    for cp in code_points:
        words = [word for word, _ in tokenizer.pre_tokenizer.pre_tokenize_str(f"a{chr(cp)}a")]
        if words == ["a", "a"]:
            split_on.append(cp)
        elif words == ["a", chr(cp), "a"]:
            isolated.append(cp)

    model = spec["model"]
    specials = sorted(token["content"] for token in spec["added_tokens"])
    return {
        "format": CHAR_CLASSES_FORMAT,
        "normalizer": {
            "dropped": _ranges(dropped),
            "whitespace": _ranges(whitespace),
            "cjk": _ranges(cjk),
            "hangul_syllables": list(_HANGUL),
            "mapped": mapped,
        },
        "pre_tokenizer": {"whitespace": _ranges(split_on), "punctuation": _ranges(isolated)},
        "wordpiece": {
            "unk_token": model["unk_token"],
            "continuing_subword_prefix": model["continuing_subword_prefix"],
            "max_input_chars_per_word": model["max_input_chars_per_word"],
            "cls_token": spec["post_processor"]["single"][0]["SpecialToken"]["id"],
            "sep_token": spec["post_processor"]["single"][-1]["SpecialToken"]["id"],
            "special_tokens": specials,
        },
    }


def _require_bert_wordpiece(spec: dict, source: Path) -> None:
    """The table replays a char-by-char BertNormalizer; other pipelines would be silently wrong."""
    found = (
        (spec.get("normalizer") or {}).get("type"),
        (spec.get("pre_tokenizer") or {}).get("type"),
        spec["model"].get("type"),
        (spec.get("post_processor") or {}).get("type"),
    )
    if found != ("BertNormalizer", "BertPreTokenizer", "WordPiece", "TemplateProcessing"):
        raise ValueError(
            f"{source}: expected BertNormalizer/BertPreTokenizer/WordPiece/TemplateProcessing, "
            f"found {found}; the stdlib tokenizer only reproduces BERT WordPiece models"
        )
    bad = [t["content"] for t in spec["added_tokens"] if t["normalized"] or t["lstrip"] or t["rstrip"]]
    if bad:
        raise ValueError(f"{source}: added tokens {bad} are normalised or strip spaces; unsupported")


def _ranges(code_points: list[int]) -> list[list[int]]:
    """Sorted code points as inclusive [first, last] runs (keeps the JSON small)."""
    runs: list[list[int]] = []
    for cp in code_points:
        if runs and runs[-1][1] == cp - 1:
            runs[-1][1] = cp
        else:
            runs.append([cp, cp])
    return runs


class OnnxQueryEncoder:
    """The browser's model in Python: the shipped ONNX file and the stdlib tokenizer."""

    def __init__(
        self, onnx_path: Path, vocab_path: Path, char_classes_path: Path, config: dict, query_prefix: str = ""
    ):
        import onnxruntime

        if config.get("format") != CONFIG_FORMAT:
            raise ValueError(
                f"query encoder config has format {config.get('format')!r}, expected {CONFIG_FORMAT!r}; "
                "rebuild the site (or re-export the query encoder)"
            )
        self.config = config
        self.query_prefix = query_prefix
        self.tokenizer = WordPieceTokenizer.from_data(
            Path(vocab_path).read_text(encoding="utf-8"),
            json.loads(Path(char_classes_path).read_text(encoding="utf-8")),
            max_length=config["max_length"],
        )
        options = onnxruntime.SessionOptions()
        options.log_severity_level = 3
        options.add_session_config_entry(*DEQUANTIZE_AT_LOAD)
        self.session = onnxruntime.InferenceSession(
            str(onnx_path), options, providers=["CPUExecutionProvider"]
        )

    @classmethod
    def from_dir(cls, encoder_dir: Path) -> OnnxQueryEncoder:
        """An export folder as `export_query_encoder` writes it."""
        encoder_dir = Path(encoder_dir)
        config_path = encoder_dir / "config.json"
        if not config_path.exists():
            raise FileNotFoundError(f"{config_path} is missing; run export_query_encoder into {encoder_dir}")
        config = json.loads(config_path.read_text(encoding="utf-8"))
        return cls(
            encoder_dir / config["onnx"],
            encoder_dir / config["vocab"],
            encoder_dir / config["char_classes"],
            config,
        )

    @classmethod
    def from_site(cls, site_dir: Path, manifest: dict) -> OnnxQueryEncoder:
        """The encoder a built site ships, found through its manifest (file names are content-hashed)."""
        files = manifest["files"]
        return cls(
            site_dir / files["encoder"],
            site_dir / files["vocab"],
            site_dir / files["char_classes"],
            manifest["encoder"],
            manifest["model"].get("query_prefix", ""),
        )

    def encode(self, texts: Sequence[str]) -> list[list[float]]:
        """Unit vectors, one per text, as the browser computes them (one text per run, no padding)."""
        if isinstance(texts, str):
            raise TypeError("encode takes a sequence of texts; wrap a single query in a list")
        vectors = []
        for text in texts:
            input_ids = np.array([self.tokenizer.encode(self.query_prefix + text)], dtype=np.int64)
            feeds = {"input_ids": input_ids, "attention_mask": np.ones_like(input_ids)}
            (embedding,) = self.session.run([self.config["output"]], feeds)
            vectors.append(embedding[0].astype(float).tolist())
        return vectors
