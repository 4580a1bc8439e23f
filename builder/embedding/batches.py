"""How texts meet the model: groups of texts per checkpoint (and per Ray call), and within a group,
runs of texts of similar token length, so each run pads little. Both orders are fixed by the texts
alone, so the same texts give the same vectors whoever embeds them (a local build, a Ray actor)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from tokenizers import Tokenizer

GROUP = 64  # texts per checkpoint, and the unit of work a Ray actor gets (builder/distributed/)


def model_batches(texts: Sequence[str], batch_size: int = GROUP) -> list[list[int]]:
    """`texts`' positions in the model's groups: longest first, fixed by the texts (Ray: the same bits)."""
    order = sorted(range(len(texts)), key=lambda i: (-len(texts[i]), i))
    return [order[start : start + batch_size] for start in range(0, len(order), batch_size)]


def start_tokenizer(model_dir: Path, max_tokens: int) -> Tokenizer:
    """The model's tokenizer, cutting texts to its length as sentence-transformers does."""
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tokenizer.enable_truncation(max_tokens)
    tokenizer.no_padding()
    return tokenizer


def length_batches(
    tokenizer: Tokenizer, texts: Sequence[str], batch: int
) -> Iterator[tuple[list[int], np.ndarray, np.ndarray]]:
    """(positions in `texts`, input_ids, attention_mask) per model run: texts sorted longest first so
    each run pads little; the order is fixed by the texts, so are the vectors."""
    encodings = tokenizer.encode_batch([text.strip() for text in texts])
    order = sorted(range(len(texts)), key=lambda i: (-len(encodings[i].ids), i))
    for start in range(0, len(order), batch):
        rows = order[start : start + batch]
        ids = np.zeros((len(rows), len(encodings[rows[0]].ids)), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, i in enumerate(rows):
            ids[row, : len(encodings[i].ids)] = encodings[i].ids
            mask[row, : len(encodings[i].ids)] = 1
        yield rows, ids, mask
