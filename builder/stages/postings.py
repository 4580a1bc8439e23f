"""Build stage: chunk texts become the BM25 postings JSON the browser searches (format in bm25.py).

Terms come from readingroom_core.analysis, the same code the browser runs on queries.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence

from readingroom_core.analysis import analyze
from readingroom_core.bm25 import FORMAT_VERSION


def build_postings(docs: Sequence[str], k1: float = 1.2, b: float = 0.75) -> dict:
    """Postings for `docs`, whose positions are their doc ids (chunk order)."""
    by_term: dict[str, list[tuple[int, int]]] = {}
    doc_lengths: list[int] = []
    for doc_id, text in enumerate(docs):
        terms = analyze(text)
        doc_lengths.append(len(terms))
        for term, frequency in Counter(terms).items():
            by_term.setdefault(term, []).append((doc_id, frequency))
    return {
        "v": FORMAT_VERSION,
        "n": len(doc_lengths),
        "k1": k1,
        "b": b,
        "avgdl": sum(doc_lengths) / len(doc_lengths) if doc_lengths else 0.0,
        "dl": doc_lengths,
        "t": {term: encode_entry(by_term[term]) for term in sorted(by_term)},
    }


def encode_entry(postings: list[tuple[int, int]]) -> list[list[int]]:
    """[doc id deltas] or [doc id deltas, frequencies] for ascending (doc id, frequency) pairs."""
    doc_ids = [doc_id for doc_id, _ in postings]
    deltas = [doc_ids[0]] + [later - earlier for earlier, later in zip(doc_ids, doc_ids[1:], strict=False)]
    frequencies = [frequency for _, frequency in postings]
    return [deltas] if all(frequency == 1 for frequency in frequencies) else [deltas, frequencies]


def postings_bytes(data: dict) -> bytes:
    """Deterministic compact JSON: same index, same bytes, so rebuilds diff and cache cleanly."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=False).encode("ascii")


def shard_postings(postings: dict, max_bytes: int, prefix: str = "postings") -> tuple[dict, dict[str, dict]]:
    """Split single-file postings into a manifest and term-range shards of at most ~`max_bytes` each.

    Returns (manifest, {shard name: shard}); a term whose entry alone exceeds `max_bytes` gets a shard
    of its own. The manifest keeps params and doc lengths, so a query loads only the shards of its terms.
    """
    shards: list[dict[str, list]] = []
    current: dict[str, list] = {}
    current_size = 0
    for term in sorted(postings["t"]):
        entry = postings["t"][term]
        entry_size = len(postings_bytes({term: entry}))  # close to its share of the shard file
        if current and current_size + entry_size > max_bytes:
            shards.append(current)
            current, current_size = {}, 0
        current[term] = entry
        current_size += entry_size
    if current:
        shards.append(current)
    named = {f"{prefix}-{index:04d}.json": terms for index, terms in enumerate(shards)}
    manifest = {key: value for key, value in postings.items() if key != "t"}
    manifest["s"] = [[min(terms), max(terms), name] for name, terms in named.items()]
    return manifest, {name: {"v": FORMAT_VERSION, "t": terms} for name, terms in named.items()}
