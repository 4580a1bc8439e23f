"""The sentence embedder traced to ONNX with mean pooling and L2 normalisation inside the graph: the
graph the query encoder quantises, and the one the CPU document engine (builder/embedding/on_cpu.py)
runs in fp32, so documents and queries go through one definition of the model. Only
Transformer -> mean Pooling -> Normalize models are accepted."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

ONNX_OPSET = 17
INPUT_NAMES = ("input_ids", "attention_mask")
OUTPUT_NAME = "sentence_embedding"


def read_pooling(model_dir: Path) -> dict:
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


def mean_pooled_unit(hidden, attention_mask):
    """sentence-transformers' mean pooling and Normalize, as torch ops (traced here, run by the GPU
    document engine): the mean of the unmasked tokens' rows, scaled to unit length."""
    import torch

    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
    return torch.nn.functional.normalize(mean, p=2, dim=1)


def export_fp32(model_dir: Path, onnx_path: Path, attention: str | None = None):
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
            return mean_pooled_unit(hidden, attention_mask)

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
