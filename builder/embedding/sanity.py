"""The check every document engine passes when it starts: a handful of built-in relevant/irrelevant
pairs must rank correctly, because a misconfigured model (wrong folder, wrong prefixes) would otherwise
silently ruin every search."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

if TYPE_CHECKING:
    from builder.embedding.model import ModelIdentity

# (query, relevant passage, irrelevant passage): any working English sentence embedder ranks these.
SANITY_PAIRS = (
    (
        "How does self-attention work in transformers?",
        "The Transformer computes each token's representation as a weighted sum over all other tokens, "
        "with weights given by scaled dot-product attention between queries and keys.",
        "Preheat the oven, then knead the dough for ten minutes until it is smooth and elastic.",
    ),
    (
        "retrieval augmented generation with a dense passage index",
        "We combine a pre-trained sequence-to-sequence generator with a dense vector index of Wikipedia "
        "passages retrieved by a neural retriever.",
        "The football match ended in a draw after the goalkeeper saved a penalty in extra time.",
    ),
    (
        "low-rank adaptation for fine-tuning large language models",
        "LoRA freezes the pretrained weights and injects trainable rank decomposition matrices into each "
        "layer, greatly reducing the number of trainable parameters.",
        "The museum's new exhibition features impressionist paintings from private collections.",
    ),
    (
        "What causes hallucinations in language model outputs?",
        "Large language models often generate fluent but factually incorrect statements that are not "
        "supported by their sources, a failure mode known as hallucination.",
        "Sea turtles migrate thousands of kilometres to lay their eggs on the beaches where they hatched.",
    ),
    (
        "optimizer with adaptive moment estimates",
        "Adam computes individual adaptive learning rates for different parameters from estimates of the "
        "first and second moments of the gradients.",
        "The city council approved a new budget for road maintenance and public parks.",
    ),
)


class EmbeddingSanityError(RuntimeError):
    """The model does not rank obviously relevant text above obviously irrelevant text."""


class TextEncoder(Protocol):
    def encode(self, texts: Sequence[str]) -> np.ndarray: ...


def sanity_texts() -> list[str]:
    """Every query and passage of the pairs, unprefixed: texts a traced graph is checked on."""
    passages = [p for _, relevant, irrelevant in SANITY_PAIRS for p in (relevant, irrelevant)]
    return [q for q, _, _ in SANITY_PAIRS] + passages


def check_sanity(encoder: TextEncoder, identity: ModelIdentity) -> None:
    queries = [identity.query_prefix + q for q, _, _ in SANITY_PAIRS]
    passages = [identity.document_prefix + p for _, rel, irr in SANITY_PAIRS for p in (rel, irr)]
    q = encoder.encode(queries)
    p = encoder.encode(passages)
    scores = q @ p.T
    wrong = []
    irrelevant_columns = list(range(1, len(passages), 2))
    for row, (query, _, _) in enumerate(SANITY_PAIRS):
        if scores[row, 2 * row] <= scores[row, irrelevant_columns].max():
            wrong.append(query)
    if wrong:
        raise EmbeddingSanityError(
            f"model {identity.name!r} ({identity.path}) ranks unrelated text above relevant text for "
            f"{len(wrong)} of {len(SANITY_PAIRS)} built-in checks (e.g. {wrong[0]!r}); check `model`, "
            "`query_prefix` and `document_prefix` in the corpus file"
        )
