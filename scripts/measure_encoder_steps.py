"""Measure the query encoder's per-matrix quantisation steps (MATRIX_STEPS in builder/query_encoder/quantize.py).

    python scripts/measure_encoder_steps.py [--damage 0.0008] [--texts 320]

Each MatMul weight of the bundled model is quantised alone, per output channel with a step of std/4, and
the damage is the mean 1 - cosine of the sentence vectors to fp32 over calibration text: titles and
abstract sentences of the arXiv mirror (no evaluation question). Rounding error grows with the step
squared, so a matrix of n weights and damage d at std/4 gets the step k * std with
k = sqrt(D * n / (N * 16 * d)): every weight then costs the same share of a total damage D (N weights in
all). Prints the table to paste into builder/query_encoder/quantize.py.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys

from builder.offline import use_offline_environment

use_offline_environment()

import numpy as np  # noqa: E402

from builder.paths import SHARED_MIRROR, bundled_model_dir  # noqa: E402

SEED = 20261124
PROBE_STEP = 0.25  # in units of the channel's std
WEIGHT_NAME = re.compile(
    r"encoder\.layer\.(\d+)\.(attention\.self\.query|attention\.self\.key|attention\.self\.value|"
    r"attention\.output\.dense|intermediate\.dense|output\.dense)\.weight$"
)
ROLES = {
    "attention.self.query": "query",
    "attention.self.key": "key",
    "attention.self.value": "value",
    "attention.output.dense": "attention_output",
    "intermediate.dense": "intermediate",
    "output.dense": "output",
}


def calibration_texts(count: int) -> list[str]:
    """Query-sized text from the mirror: every title, then a seeded sample of abstract sentences."""
    titles, sentences = [], []
    for path in sorted((SHARED_MIRROR / "meta").glob("*.json")):
        meta = json.loads(path.read_text(encoding="utf-8"))
        titles.append(meta["title"])
        sentences += [s.strip() for s in re.split(r"(?<=[.?!])\s+", meta["abstract"]) if len(s.split()) >= 4]
    return (titles + random.Random(SEED).sample(sentences, max(0, count - len(titles))))[:count]


def per_channel_rounding(weight: np.ndarray, step_in_std: float) -> np.ndarray:
    """A torch Linear weight (out, in) rounded to step_in_std * std of each output channel."""
    step = np.maximum(weight.std(axis=1) * step_in_std, np.abs(weight).max(axis=1) / 127)[:, None]
    return np.clip(np.round(weight / step), -127, 127) * step


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--damage", type=float, default=0.0008, help="total mean 1 - cosine to spread (D)")
    parser.add_argument("--texts", type=int, default=320)
    args = parser.parse_args()

    import torch
    from sentence_transformers import SentenceTransformer

    torch.manual_seed(0)
    model = SentenceTransformer(str(bundled_model_dir()), device="cpu", local_files_only=True)
    texts = calibration_texts(args.texts)
    state = model.state_dict()

    def encode() -> np.ndarray:
        with torch.no_grad():
            return model.encode(texts, normalize_embeddings=True, batch_size=64, convert_to_numpy=True)

    reference = encode()
    weights = {name: t.detach().clone() for name, t in state.items() if WEIGHT_NAME.search(name)}
    damage = {}
    for name, original in weights.items():
        with torch.no_grad():
            state[name].copy_(torch.from_numpy(per_channel_rounding(original.numpy(), PROBE_STEP)))
            damage[name] = max(float(np.mean(1 - np.sum(encode() * reference, axis=1))), 1e-6)
            state[name].copy_(original)
        print(f"{name}: damage {damage[name]:.6f}", file=sys.stderr, flush=True)

    total = sum(w.numel() for w in weights.values())
    table: dict[str, list[float]] = {role: [] for role in ROLES.values()}
    for name, weight in weights.items():
        layer, role = WEIGHT_NAME.search(name).groups()
        k = np.sqrt(args.damage * weight.numel() / (total * damage[name] / PROBE_STEP**2))
        assert int(layer) == len(table[ROLES[role]])
        table[ROLES[role]].append(round(float(k), 3))
    print(f"# {len(texts)} calibration texts, D={args.damage}")
    print("MATRIX_STEPS = {")
    for role, steps in table.items():
        print(f'    "{role}": ({", ".join(f"{k:.3f}" for k in steps)}),')
    print("}")


if __name__ == "__main__":
    main()
