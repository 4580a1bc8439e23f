"""BM25 postings a query reads by range: impact-ordered pages per term, found through a small dictionary.

Three files (written by `TermLayout`, read by `TermIndex`):

- the directory (`files.postings`, loaded at start-up and checked by the manifest): the BM25 parameters,
  the page size and, per dictionary block, its first term and its byte range and sha256 in the terms file:
      {"v": FORMAT_VERSION, "n": N, "k1", "b", "avgdl", "page": P, "terms": path, "pages": path,
       "blocks": [[first term, start, end, sha256], ...]}
- the terms file: blocks of sorted terms, each a JSON object {term: [doc freq, start, page sha, ...]}
  (a page's sha256 as its first 32 hex digits);
- the pages file: per term its postings in impact order (BM25 weight of the term in the document, best
  first, ties by doc id), P to a page, each page little-endian uint32 doc ids, uint16 term frequencies,
  uint16 document lengths.

A query reads its terms' dictionary blocks, then the first `prefix` postings of each term: the documents
where a term weighs most. Common terms ("model" is in 73% of passages) weigh little, so leaving their
tails out changes few top-10s (measured in docs/measurements, BM25 overlap against every posting). The
scores of the postings read are exact: same formula, same order of sums as `bm25.BM25Index`.
"""

from __future__ import annotations

import hashlib
import json
import sys
from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from readingroom_core.bm25 import Postings, decode_entry, length_norm, lucene_idf, sum_scores, term_weights
from readingroom_core.ranges import Block, BlockReader
from readingroom_core.sitedata import FORMAT_VERSION, load_versioned

PAGE_ENTRIES = 256  # postings per page: 2 KB, the smallest unit a query reads of a term
BLOCK_BYTES = 8192  # a dictionary block's size the writer aims at (a query reads one per term)
PAGE_SHA_DIGITS = 32  # 128 bits of sha256 per page; each dictionary block itself has the full 256
ENTRY_BYTES = 8  # uint32 doc id + uint16 frequency + uint16 length
# Postings read per query term. scripts/ranged_search_study.py on the 112-paper site, BM25 top-10 overlap
# with every posting read: tuning questions 0.914 at 1,024, 0.988 at 2,048, 0.998 at 4,096 (first-sight
# median 148, 158, 170 KB); held out at 2,048: report questions 0.958, dev questions 0.987.
DEFAULT_PREFIX = 2048

Weights = tuple[list[int], list[float]]


@dataclass(frozen=True)
class TermDirectory:
    """The postings directory: the BM25 parameters and where each dictionary block lies."""

    n: int
    k1: float
    b: float
    avgdl: float
    page: int
    terms: str
    pages: str
    blocks: tuple[tuple[str, int, int, str], ...]  # (first term, start, end, sha256) in the terms file

    def to_json(self) -> dict[str, Any]:
        keys = ("n", "k1", "b", "avgdl", "page", "terms", "pages")
        return {"v": FORMAT_VERSION, **{key: getattr(self, key) for key in keys}, "blocks": self.blocks}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TermDirectory:
        blocks = tuple((str(t), int(s), int(e), str(h)) for t, s, e, h in data["blocks"])
        return cls(
            data["n"],
            data["k1"],
            data["b"],
            data["avgdl"],
            data["page"],
            data["terms"],
            data["pages"],
            blocks,
        )


def read_term_directory(data: bytes | str, what: str = "postings directory") -> TermDirectory:
    return TermDirectory.from_json(load_versioned(data, what))


def _compact(data: Any) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=False).encode("ascii")


def _little_endian(values: array[int]) -> bytes:
    if sys.byteorder != "little":
        values = array(values.typecode, values)
        values.byteswap()
    return values.tobytes()


class TermLayout:
    """The terms and pages files for a `bm25.Postings`, and the directory once their paths are known."""

    def __init__(self, postings: Postings, page: int = PAGE_ENTRIES) -> None:
        self.postings = postings
        self.page = page
        pages, dictionary = bytearray(), {}
        norms = [length_norm(postings.k1, postings.b, postings.avgdl, dl) for dl in postings.doc_lengths]
        for term, entry in postings.terms.items():
            doc_ids, frequencies = decode_entry(entry)
            idf = lucene_idf(postings.n, len(doc_ids))
            weights = term_weights(idf, postings.k1, frequencies, [norms[d] for d in doc_ids])
            order = sorted(range(len(doc_ids)), key=lambda i: (-weights[i], doc_ids[i]))
            shas = []
            start = len(pages)
            for first in range(0, len(order), page):
                chosen = order[first : first + page]
                data = b"".join(
                    _little_endian(array(code, values))
                    for code, values in (
                        ("I", [doc_ids[i] for i in chosen]),
                        ("H", [frequencies[i] for i in chosen]),
                        ("H", [postings.doc_lengths[doc_ids[i]] for i in chosen]),
                    )
                )
                shas.append(hashlib.sha256(data).hexdigest()[:PAGE_SHA_DIGITS])
                pages += data
            dictionary[term] = [len(doc_ids), start, *shas]
        self.pages_bytes = bytes(pages)
        self.terms_bytes, self._blocks = _dictionary_blocks(dictionary)

    def directory_bytes(self, terms_path: str, pages_path: str) -> bytes:
        p = self.postings
        directory = TermDirectory(p.n, p.k1, p.b, p.avgdl, self.page, terms_path, pages_path, self._blocks)
        return _compact(directory.to_json())


def _dictionary_blocks(
    dictionary: dict[str, list[Any]],
) -> tuple[bytes, tuple[tuple[str, int, int, str], ...]]:
    """Sorted terms cut into JSON objects of about BLOCK_BYTES, and each one's (first term, range, sha256)."""
    data, blocks = bytearray(), []
    current: dict[str, list[Any]] = {}
    size = 0

    def close() -> None:
        encoded = _compact(current)
        blocks.append(
            (min(current), len(data), len(data) + len(encoded), hashlib.sha256(encoded).hexdigest())
        )
        data.extend(encoded)

    for term in sorted(dictionary):
        current[term] = dictionary[term]
        size += len(term) + 12 + 34 * (len(dictionary[term]) - 2)
        if size >= BLOCK_BYTES:
            close()
            current, size = {}, 0
    if current:
        close()
    return bytes(data), tuple(blocks)


class TermIndex:
    """BM25 over the ranged postings: the dictionary blocks and pages a query needs, read once each."""

    def __init__(self, directory: TermDirectory, blocks: BlockReader) -> None:
        self.directory = directory
        self.n_docs = directory.n
        self._reader = blocks
        self._first_terms = [block[0] for block in directory.blocks]
        self._entries: dict[str, list[Any]] = {}  # from the dictionary blocks read so far
        self._blocks_read: set[int] = set()
        self._weights: dict[str, tuple[int, Weights]] = {}  # term -> (postings read, their weights)

    # --- the dictionary ---------------------------------------------------------------------------------

    def _block_of(self, term: str) -> int:
        return max(0, bisect_right(self._first_terms, term) - 1)

    def _read_blocks(self, numbers: Iterable[int]) -> None:
        wanted = sorted(set(numbers) - self._blocks_read)
        if not wanted:
            return
        blocks = [Block(self.directory.terms, *self.directory.blocks[i][1:]) for i in wanted]
        for number, data in zip(wanted, self._reader.read(blocks), strict=True):
            self._entries.update(json.loads(data))
            self._blocks_read.add(number)

    def _entry(self, term: str) -> list[Any] | None:
        if self.directory.blocks:
            self._read_blocks([self._block_of(term)])
        return self._entries.get(term)

    def doc_freq(self, term: str) -> int:
        """How many documents hold `term` (0 when none)."""
        entry = self._entry(term)
        return int(entry[0]) if entry else 0

    def terms_near(self, term: str, shortest: int, longest: int) -> list[str]:
        """Indexed terms that could be `term` misspelt: same first letter, a length in [shortest, longest]."""
        initial = term[:1]
        if not initial or not self.directory.blocks:
            return []
        after = chr(ord(initial) + 1)
        first, last = self._block_of(initial), self._block_of(after)
        self._read_blocks(range(first, last + 1))
        return sorted(
            (
                known
                for known in self._entries
                if known[:1] == initial and shortest <= len(known) <= longest and known != term
            ),
            key=lambda known: (len(known), known),
        )

    # --- postings ---------------------------------------------------------------------------------------

    def _pages(
        self, terms: Sequence[str], counts: Sequence[int]
    ) -> list[tuple[list[int], list[int], list[int]]]:
        """(doc ids, frequencies, lengths) of the first `count` postings of each term, one batch of reads."""
        page, wanted, plan = self.directory.page, [], []
        for term, count in zip(terms, counts, strict=True):
            df, start, *shas = self._entries[term]
            pages = []
            for number in range(-(-min(count, df) // page)):
                entries = min(page, df - number * page)
                at = start + number * page * ENTRY_BYTES
                pages.append(
                    (Block(self.directory.pages, at, at + entries * ENTRY_BYTES, shas[number]), entries)
                )
            plan.append(pages)
            wanted += [block for block, _ in pages]
        data = dict(zip(wanted, self._reader.read(wanted), strict=True))
        found = []
        for pages in plan:
            doc_ids: list[int] = []
            frequencies: list[int] = []
            lengths: list[int] = []
            for block, entries in pages:
                raw = data[block]
                for values, code, at, width in (
                    (doc_ids, "I", 0, 4),
                    (frequencies, "H", 4, 2),
                    (lengths, "H", 6, 2),
                ):
                    part = array(code)
                    part.frombytes(raw[at * entries : at * entries + width * entries])
                    if sys.byteorder != "little":
                        part.byteswap()
                    values += part.tolist()
            found.append((doc_ids, frequencies, lengths))
        return found

    def weights(self, terms: Sequence[str], prefix: int) -> list[Weights | None]:
        """Each term's (doc ids, BM25 weights) over its first `prefix` postings (0: all), best first."""
        d = self.directory
        self._read_blocks(self._block_of(term) for term in terms if d.blocks)
        needed = {}
        for term in terms:
            entry = self._entries.get(term)
            if entry is None:
                continue
            count = entry[0] if prefix <= 0 else min(prefix, entry[0])
            if self._weights.get(term, (-1,))[0] < count:
                needed[term] = count
        for (term, count), (doc_ids, frequencies, lengths) in zip(
            needed.items(), self._pages(list(needed), list(needed.values())), strict=True
        ):
            idf = lucene_idf(d.n, self._entries[term][0])
            norms = [length_norm(d.k1, d.b, d.avgdl, length) for length in lengths]
            self._weights[term] = (count, (doc_ids, term_weights(idf, d.k1, frequencies, norms)))
        found: list[Weights | None] = []
        for term in terms:
            if term not in self._entries:
                found.append(None)
                continue
            count = self._entries[term][0] if prefix <= 0 else min(prefix, self._entries[term][0])
            doc_ids, weights = self._weights[term][1]
            found.append((doc_ids[:count], weights[:count]))
        return found

    def doc_ids(self, term: str) -> list[int]:
        """Every document holding `term`, in doc id order: phrases and spelling need them all."""
        if self._entry(term) is None:
            return []
        (found,) = self.weights([term], 0)
        return sorted(found[0]) if found else []

    def search(
        self,
        query_terms: Iterable[str],
        k: int,
        allowed: Callable[[int], bool] | None = None,
        prefix: int = DEFAULT_PREFIX,
    ) -> list[tuple[int, float]]:
        """Top `k` (doc id, score) over the first `prefix` postings of each distinct term (0: all of them)."""
        terms = list(dict.fromkeys(query_terms))
        if k <= 0:
            return []
        return sum_scores(self.weights(terms, prefix), k, allowed)
