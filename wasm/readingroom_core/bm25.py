"""BM25 over the postings JSON that `builder.stages.postings` writes; runs in CPython and Pyodide alike.

Postings format, version 1 (short keys keep the file small; all numbers are JSON ints except the params):

    {"v": 1, "n": N, "k1": 1.2, "b": 0.75, "avgdl": mean doc length, "dl": [length of doc 0, ...],
     "t": {term: [doc id deltas] | [doc id deltas, term frequencies]}}

Doc ids are chunk positions 0..N-1; the first delta is the first id. Term frequencies are left out when
all are 1, which is most rare terms. A large index replaces "t" by "s": [[first term, last term, shard
name], ...] in term order, and each shard file is {"v": 1, "t": {...}} for that term range, fetched only
when a query needs one of its terms.
"""

from __future__ import annotations

import heapq
import json
import math
from bisect import bisect_right
from collections.abc import Callable, Iterable
from itertools import accumulate

FORMAT_VERSION = 1

ShardLoader = Callable[[str], str | bytes]  # shard name -> its JSON text


def decode_entry(entry: list[list[int]]) -> tuple[list[int], list[int]]:
    """Doc ids and term frequencies of one term's postings entry."""
    doc_ids = list(accumulate(entry[0]))
    frequencies = entry[1] if len(entry) > 1 else [1] * len(doc_ids)
    return doc_ids, frequencies


def lucene_idf(n_docs: int, doc_freq: int) -> float:
    """Lucene's BM25 idf, which stays positive even for terms in most documents."""
    return math.log(1 + (n_docs - doc_freq + 0.5) / (doc_freq + 0.5))


def _check_version(data: dict, what: str) -> None:
    if data.get("v") != FORMAT_VERSION:
        raise ValueError(f"{what} has postings format {data.get('v')!r}; this reader knows {FORMAT_VERSION}")


class BM25Index:
    """Okapi BM25 (with the classic (k1 + 1) numerator) over a postings dict or a sharded manifest."""

    def __init__(self, postings: dict, load_shard: ShardLoader | None = None):
        _check_version(postings, "index")
        self.n_docs: int = postings["n"]
        self.k1: float = postings["k1"]
        self.b: float = postings["b"]
        self.avgdl: float = postings["avgdl"]
        self.doc_lengths: list[int] = postings["dl"]
        self._terms: dict[str, list] = dict(postings.get("t", {}))
        self._shards: list[list[str]] = postings.get("s", [])
        self._shard_firsts = [first for first, _, _ in self._shards]
        self._loaded_shards: set[str] = set()
        if self._shards and load_shard is None:
            raise ValueError("a sharded index needs load_shard to fetch its term shards")
        self._load_shard = load_shard
        self._decoded: dict[str, tuple[list[int], list[int]] | None] = {}
        average = self.avgdl or 1.0
        self._length_norms = [self.k1 * (1 - self.b + self.b * dl / average) for dl in self.doc_lengths]

    def postings(self, term: str) -> tuple[list[int], list[int]] | None:
        """(doc ids, term frequencies) of `term`, or None when no document has it."""
        if term not in self._decoded:
            entry = self._terms.get(term)
            if entry is None and self._ensure_shard_for(term):
                entry = self._terms.get(term)
            self._decoded[term] = decode_entry(entry) if entry is not None else None
        return self._decoded[term]

    def _ensure_shard_for(self, term: str) -> bool:
        """Load the shard whose term range holds `term`; False when no shard can hold it."""
        index = bisect_right(self._shard_firsts, term) - 1
        if index < 0:
            return False
        first, last, name = self._shards[index]
        if term > last or name in self._loaded_shards:
            return False
        shard = json.loads(self._load_shard(name))
        _check_version(shard, f"shard {name}")
        self._terms.update(shard["t"])
        self._loaded_shards.add(name)
        return True

    def search(
        self, query_terms: Iterable[str], k: int, allowed: Callable[[int], bool] | None = None
    ) -> list[tuple[int, float]]:
        """Top `k` (doc id, score) for documents holding any query term, best first, ties by doc id.

        Each distinct term counts once. `allowed` is asked once per candidate while scoring, so a filter
        never shrinks the result below k when enough allowed documents match.
        """
        if k <= 0:
            return []
        scores: dict[int, float] = {}
        verdicts: dict[int, bool] = {}
        k1_plus_one = self.k1 + 1
        norms = self._length_norms
        for term in dict.fromkeys(query_terms):
            found = self.postings(term)
            if found is None:
                continue
            doc_ids, frequencies = found
            idf = lucene_idf(self.n_docs, len(doc_ids))
            for doc_id, frequency in zip(doc_ids, frequencies, strict=True):
                if allowed is not None:
                    verdict = verdicts.get(doc_id)
                    if verdict is None:
                        verdict = verdicts[doc_id] = bool(allowed(doc_id))
                    if not verdict:
                        continue
                weight = idf * frequency * k1_plus_one / (frequency + norms[doc_id])
                scores[doc_id] = scores.get(doc_id, 0.0) + weight
        return heapq.nsmallest(k, scores.items(), key=lambda item: (-item[1], item[0]))
