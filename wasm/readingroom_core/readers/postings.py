"""BM25 over the ranged postings (`formats.postings`): a query reads its terms' dictionary blocks, then the
first `prefix` postings of each term, the documents where a term weighs most; its best `rescore`
candidates then get the weight of every term whose unread tail may hold them, from their groups in the
forward file (`readers/forward.py`). Scores are exact where they are computed: same formula, same order
of sums as `bm25.BM25Index`.
"""

from __future__ import annotations

import json
from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from itertools import accumulate
from typing import Any, NamedTuple

from readingroom_core.bm25 import length_norm, lucene_idf, sum_scores, term_weights, top_scores
from readingroom_core.formats.postings import (
    DEFAULT_PREFIX,
    PAGE_RECORD_BYTES,
    PAGE_SHA_DIGITS,
    TermDirectory,
    page_values,
)
from readingroom_core.lru import LastResult, Recent
from readingroom_core.ranges import Block, BlockReader, DamagedData
from readingroom_core.readers.forward import ForwardFile

# Candidates rescored from the forward file: enough that the unread tails of common terms rarely change
# the top 10, chosen with the postings read per term (formats.postings.DEFAULT_PREFIX) in commit 894cfde
# (scripts/bm25_depth_study.py, removed in cf98ed9, last version at 5af4878).
DEFAULT_RESCORE = 100
# Decoded postings kept between queries, 16 bytes each in typed arrays (commit ed9c496), so about 32 MB:
# decoding is most of a query's keyword time, and this keeps what questions asked again reread while
# leaving the worker's heap room (`lru`; commits 2b49c5a and 39f58e6 measured it).
KEPT_POSTINGS = 1 << 21
KEPT_BLOCKS = 1024  # dictionary blocks kept decoded (a query reads one a term; spelling a letter's worth)
LONGEST_TABLED_LENGTH = 1 << 16  # document lengths (in terms) whose length norms are kept in a table

Weights = tuple[Sequence[int], Sequence[float]]
# postings read, (their doc ids, BM25 weights), their documents' lengths: typed arrays, float64 weights so
# scores are the same bit for bit as from lists
Decoded = tuple[int, tuple["array[int]", "array[float]"], "array[int]"]


class TermEntry(NamedTuple):
    """A term's dictionary entry as kept between queries: its page sizes and sha256 prefixes packed,
    about half what the decoded JSON (a list of ints and a 32-digit hex string a page) held (commit
    c1b081c)."""

    df: int
    start: int
    rank: int  # in the forward file, -1 for a term it does not hold
    sizes: array[int]  # of the first pages, those a default read needs
    shas: bytes  # theirs, PAGE_SHA_DIGITS // 2 bytes each, then that of the rest's page records if any

    @classmethod
    def of(cls, entry: list[Any]) -> TermEntry:
        df, start, rank, sizes, *shas = entry
        return cls(df, start, rank, array("I", sizes), bytes.fromhex("".join(shas)))

    def sha(self, number: int) -> str:
        width = PAGE_SHA_DIGITS // 2
        return self.shas[number * width : (number + 1) * width].hex()


class TermIndex:
    """BM25 over the ranged postings: the dictionary blocks and pages a query needs, read once each."""

    def __init__(self, directory: TermDirectory, blocks: BlockReader) -> None:
        self.directory = directory
        self.n_docs = directory.n
        self._reader = blocks
        self._first_terms = [block[0] for block in directory.blocks]
        self._entries: dict[str, TermEntry] = {}  # from the dictionary blocks kept
        self._blocks_read: Recent[int, list[str]] = Recent(KEPT_BLOCKS)  # block number -> its terms
        # term -> (postings read, their weights, the lengths of their documents), the terms of recent
        # queries only: common terms come back query after query, and a visit must not grow without bound
        self._postings: Recent[str, Decoded] = Recent(KEPT_POSTINGS, _count)
        self._forward = ForwardFile(directory, blocks)
        self._last_search: LastResult[tuple[Any, ...], list[tuple[int, float]]] = LastResult()
        self._last_sums: LastResult[tuple[Any, ...], list[tuple[int, float]]] = LastResult()
        self._norm_table: list[float] = []  # length_norm of each document length, by length

    # --- the dictionary ---------------------------------------------------------------------------------

    def _block_of(self, term: str) -> int:
        return max(0, bisect_right(self._first_terms, term) - 1)

    def _read_blocks(self, numbers: Iterable[int]) -> None:
        numbers = set(numbers)
        wanted = sorted(number for number in numbers if number not in self._blocks_read)
        for number in numbers - set(wanted):
            self._blocks_read[number]  # now the most recently used
        if not wanted:
            return
        blocks = [Block(self.directory.terms, *self.directory.blocks[i][1:]) for i in wanted]
        for number, data in zip(wanted, self._reader.read(blocks), strict=True):
            entries = {term: TermEntry.of(entry) for term, entry in json.loads(data).items()}
            self._entries.update(entries)
            self._blocks_read[number] = list(entries)

    def _entry(self, term: str) -> TermEntry | None:
        if self.directory.blocks:
            self._read_blocks([self._block_of(term)])
        return self._entries.get(term)

    def doc_freq(self, term: str) -> int:
        """How many documents hold `term` (0 when none)."""
        entry = self._entry(term)
        return entry.df if entry else 0

    def terms_near(self, term: str, shortest: int, longest: int) -> list[str]:
        """Indexed terms that could be `term` misspelt: same first letter, a length in [shortest, longest]."""
        initial = term[:1]
        if not initial or not self.directory.blocks:
            return []
        self.read_near([term])
        return sorted(
            (
                known
                for known in self._entries
                if known[:1] == initial and shortest <= len(known) <= longest and known != term
            ),
            key=lambda known: (len(known), known),
        )

    # --- postings ---------------------------------------------------------------------------------------

    def _page_table(self, terms: Sequence[str], counts: Sequence[int]) -> list[list[Block]]:
        """Each term's pages as far as its first `count` postings reach: those its entry names, and past
        them those the rest's records name, read for every such term in one batch."""
        page, inline, path = self.directory.page, self.directory.inline_pages, self.directory.pages
        tables: list[list[Block]] = []
        deeper = []
        for term, count in zip(terms, counts, strict=True):
            entry = self._entries[term]
            table, at = [], entry.start
            for number, size in enumerate(entry.sizes):
                table.append(Block(path, at, at + size, entry.sha(number)))
                at += size
            tables.append(table)
            if -(-min(count, entry.df) // page) > inline:
                rest = (-(-entry.df // page) - inline) * PAGE_RECORD_BYTES
                deeper.append((table, at, Block(path, entry.start - rest, entry.start, entry.sha(inline))))
        for (table, at, _), data in zip(
            deeper, self._reader.read([block for *_, block in deeper]), strict=True
        ):
            for record in range(0, len(data), PAGE_RECORD_BYTES):
                size = int.from_bytes(data[record : record + 4], "little")
                table.append(Block(path, at, at + size, data[record + 4 : record + PAGE_RECORD_BYTES].hex()))
                at += size
        return tables

    def _pages(
        self, terms: Sequence[str], counts: Sequence[int], also: Sequence[Block] = ()
    ) -> list[tuple[array[int], array[float], array[int]]]:
        """(doc ids, BM25 weights, document lengths) of the first `count` postings of each term, in impact
        order, one batch of reads (with the blocks `also`, kept for a later step) after the page records
        a deep read needs."""
        d = self.directory
        plan = [
            table[: -(-min(count, self._entries[term].df) // d.page)]
            for term, count, table in zip(terms, counts, self._page_table(terms, counts), strict=True)
        ]
        wanted = [block for blocks in plan for block in blocks]
        data = dict(zip(wanted, self._reader.read([*wanted, *also])[: len(wanted)], strict=True))
        found = []
        for term, blocks in zip(terms, plan, strict=True):
            df = self._entries[term].df
            idf = lucene_idf(d.n, df)
            # lengths in 16 bits while they fit (a chunk is far shorter): 2 bytes a kept posting less
            doc_ids, weights, lengths = array("I"), array("d"), array("H")
            for number, block in enumerate(blocks):
                values = self._page_values(term, number, data[block])
                page_ids = list(accumulate(values[0::3]))
                page_lengths = values[2::3]
                if lengths.typecode == "H" and max(page_lengths, default=0) > 0xFFFF:
                    lengths = array("I", lengths)
                page_weights = term_weights(idf, d.k1, values[1::3], self._length_norms(page_lengths))
                # the writer's impact order: best first, ties by doc id (a page holds its postings in doc
                # id order, and a reversed sort keeps ties in their order: no key tuple per posting)
                order = sorted(range(len(page_ids)), key=page_weights.__getitem__, reverse=True)
                doc_ids.extend([page_ids[i] for i in order])
                weights.extend([page_weights[i] for i in order])
                lengths.extend([page_lengths[i] for i in order])
            found.append((doc_ids, weights, lengths))
        return found

    def _page_values(self, term: str, number: int, data: bytes) -> list[int]:
        """Page `number` of `term`'s postings as its varints: doc id gap, frequency, length, posting by posting."""
        d = self.directory
        values = page_values(data, f"{d.pages}: page {number} of {term!r}")
        if len(values) != 3 * min(d.page, self._entries[term].df - number * d.page):
            raise DamagedData(f"{d.pages}: page {number} of {term!r} does not hold its postings")
        return values

    def _every_page(self, terms: Sequence[str]) -> dict[str, list[bytes]]:
        """Every page of each of `terms` the dictionary knows, read in one batch, by term: raw, for a pass
        that keeps only the postings of a few documents rather than decoding them all."""
        d = self.directory
        self._forget_past_queries(terms)
        self._read_blocks(self._block_of(term) for term in terms if d.blocks)
        known = [term for term in terms if term in self._entries]
        tables = self._page_table(known, [self._entries[term].df for term in known])
        data = iter(self._reader.read([block for table in tables for block in table]))
        return {term: [next(data) for _ in table] for term, table in zip(known, tables, strict=True)}

    def _length_norms(self, lengths: list[int]) -> list[float]:
        """`bm25.length_norm` of each document length, from a table of the lengths met so far: calling it
        once per posting was a large share of a query's page decoding (commit a36ca4c)."""
        table, d = self._norm_table, self.directory
        longest = max(lengths, default=0)
        if longest > LONGEST_TABLED_LENGTH:  # a checked page, but no table grows without bound
            return [length_norm(d.k1, d.b, d.avgdl, length) for length in lengths]
        if longest >= len(table):
            table.extend(length_norm(d.k1, d.b, d.avgdl, length) for length in range(len(table), longest + 1))
        return list(map(table.__getitem__, lengths))

    def weights(self, terms: Sequence[str], prefix: int, rescoring: bool = False) -> list[Weights | None]:
        """Each term's (doc ids, BM25 weights) over its first `prefix` postings (0: all), best first;
        `rescoring`: the forward index comes with the pages when a term's tail is left unread."""
        d = self.directory
        self._forget_past_queries(terms)
        self._read_blocks(self._block_of(term) for term in terms if d.blocks)
        also = []
        known = [term for term in terms if term in self._entries]
        # one term's own prefix holds its candidates' whole scores: only several terms need the file
        if (
            rescoring
            and not self._forward.index_read
            and len(known) > 1
            and any(self._tail_unread(t, prefix) for t in known)
        ):
            also.append(self._forward.index_block())
        needed = {}
        for term in terms:
            entry = self._entries.get(term)
            if entry is None:
                continue
            count = entry.df if prefix <= 0 else min(prefix, entry.df)
            if term not in self._postings or self._postings[term][0] < count:
                needed[term] = count
        for (term, count), (doc_ids, weights, lengths) in zip(
            needed.items(), self._pages(list(needed), list(needed.values()), also), strict=True
        ):
            self._postings[term] = (count, (doc_ids, weights), lengths)
        found: list[Weights | None] = []
        for term in terms:
            if term not in self._entries:
                found.append(None)
                continue
            df = self._entries[term].df
            count = df if prefix <= 0 else min(prefix, df)
            doc_ids, weights = self._postings[term][1]
            whole = count == len(doc_ids)
            found.append((doc_ids if whole else doc_ids[:count], weights if whole else weights[:count]))
        return found

    def _forget_past_queries(self, terms: Sequence[str]) -> None:
        """The decoded postings and dictionary blocks of past queries past their bounds, not those of
        `terms`: a step that reads postings starts here, so no step loses what it read."""
        self._postings.trim(keep=set(terms))
        keep = {self._block_of(term) for term in terms} if self.directory.blocks else set()
        for _, forgotten in self._blocks_read.trim(keep):
            for term in forgotten:
                del self._entries[term]

    def read_near(self, terms: Iterable[str]) -> None:
        """The dictionary blocks `terms_near` reads for each of `terms`, all in one batch."""
        if not self.directory.blocks:
            return
        numbers: list[int] = []
        for initial in {term[:1] for term in terms if term}:
            after = chr(ord(initial) + 1)
            numbers += range(self._block_of(initial), self._block_of(after) + 1)
        self._read_blocks(numbers)

    def read_entries(self, terms: Iterable[str]) -> None:
        """The dictionary entries of all `terms` in one batch: a caller about to look terms up one by one
        (spelling) then waits for one round trip, not one per term."""
        if self.directory.blocks:
            self._read_blocks(self._block_of(term) for term in terms)

    def read_postings(self, terms: Iterable[str]) -> None:
        """Every posting of all `terms` in one batch (their entries first), for later `doc_ids` calls."""
        self.weights(list(dict.fromkeys(terms)), 0)

    def rank_holders(
        self, holding: Sequence[str], query_terms: Iterable[str], allowed: Callable[[int], bool] | None = None
    ) -> list[tuple[int, float]]:
        """Every allowed document that holds all of `holding`, best first by its whole BM25 score for
        `query_terms` (ties by doc id): what `search` gives over every posting when only those documents
        are allowed, the same sums in the same order. Every page is read in one batch (a round trip for
        each term ran out of rounds) and decoded once, keeping only the postings of documents that may still
        hold every term, the rarest term first: at 10,000 papers a quoted title's words hold up to 600,000
        chunks each, too many postings to decode whole at once (commit 7f00770)."""
        holding = list(dict.fromkeys(holding))
        terms = list(dict.fromkeys(query_terms))
        pages = self._every_page([*terms, *(term for term in holding if term not in terms)])
        if not holding or any(term not in pages for term in holding):
            return []
        kept: dict[str, tuple[array[int], array[float]]] = {}
        holders: set[int] = set()
        for number, term in enumerate(sorted(holding, key=lambda term: self._entries[term].df)):
            kept[term] = self._weights_of(term, pages[term], holders if number else None)
            holders = set(kept[term][0])
            if not holders:
                return []
        if allowed is not None:
            holders = {doc_id for doc_id in holders if allowed(doc_id)}
        scores: dict[int, float] = {}
        for term in terms:  # in query order: sum_scores's order of sums
            if term not in pages:
                continue
            doc_ids, weights = kept.get(term) or self._weights_of(term, pages[term], holders)
            for doc_id, weight in zip(doc_ids, weights, strict=True):
                if doc_id in holders:
                    scores[doc_id] = scores.get(doc_id, 0.0) + weight
        return top_scores(scores, len(scores))

    def _weights_of(
        self, term: str, pages: list[bytes], among: set[int] | None
    ) -> tuple[array[int], array[float]]:
        """(doc ids, BM25 weights) of `term`'s postings in these pages, only those of documents `among`
        (None: all), decoded a page at a time."""
        d = self.directory
        idf = lucene_idf(d.n, self._entries[term].df)
        doc_ids, weights = array("I"), array("d")
        for number, data in enumerate(pages):
            values = self._page_values(term, number, data)
            page_ids = list(accumulate(values[0::3]))
            held = (
                range(len(page_ids))
                if among is None
                else [at for at, doc in enumerate(page_ids) if doc in among]
            )
            doc_ids.extend([page_ids[at] for at in held])
            frequencies = [values[3 * at + 1] for at in held]
            weights.extend(
                term_weights(idf, d.k1, frequencies, self._length_norms([values[3 * at + 2] for at in held]))
            )
        return doc_ids, weights

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
        rescore: int = DEFAULT_RESCORE,
    ) -> list[tuple[int, float]]:
        """Top `k` (doc id, score) over the first `prefix` postings of each distinct term (0: all of them),
        the best `max(k, rescore)` rescored with the terms' unread tails (`rescore` 0: none)."""
        terms = list(dict.fromkeys(query_terms))
        if k <= 0:
            return []
        key = (tuple(terms), k, allowed, prefix, rescore)
        return self._last_search.get(key, lambda: self._search(terms, k, allowed, prefix, rescore))

    def _search(
        self, terms: list[str], k: int, allowed: Callable[[int], bool] | None, prefix: int, rescore: int
    ) -> list[tuple[int, float]]:
        """The search `search` keeps for the runs of its step after the first (`lru.LastResult`)."""
        found = self.weights(terms, prefix, rescoring=rescore > 0)
        unread = [number for number, term in enumerate(terms) if self._tail_unread(term, prefix)]
        if not unread or rescore <= 0:
            return sum_scores(found, k, allowed)
        # summed before the forward groups are read: the run after their fetch finds the sums done
        key = (tuple(terms), max(k, rescore), allowed, prefix)
        ranked = self._last_sums.get(key, lambda: sum_scores(found, max(k, rescore), allowed))
        candidates = [doc for doc, _ in ranked]
        return top_scores(self._exact_scores(terms, found, unread, candidates), k)

    def _tail_unread(self, term: str, prefix: int) -> bool:
        """Whether `prefix` postings leave part of `term` unread that the forward file holds."""
        entry = self._entries.get(term)
        return entry is not None and 0 < prefix < entry.df and entry.rank >= 0

    def _exact_scores(
        self, terms: list[str], found: list[Weights | None], unread: list[int], candidates: list[int]
    ) -> dict[int, float]:
        """Each candidate's full BM25 score: the weights read, and from the forward file those of the
        terms (numbers in `unread`) whose unread tails may hold it; summed in query order, as
        `bm25.sum_scores` sums them."""
        d = self.directory
        read = [dict(zip(*weights, strict=True)) if weights else {} for weights in found]
        length_of: dict[int, int] = {}
        wanted = set(candidates)
        for term, weights in zip(terms, found, strict=True):
            if weights is None:
                continue
            for doc_id, length in zip(weights[0], self._postings[term][2], strict=False):
                if doc_id in wanted:
                    length_of.setdefault(doc_id, length)
        # only a candidate that some unread tail may hold needs its group read
        missing = [doc_id for doc_id in candidates if any(doc_id not in read[number] for number in unread)]
        held = self._forward.held_terms(missing) if missing else {}
        idfs = {number: lucene_idf(d.n, self._entries[terms[number]].df) for number in unread}
        scores = {}
        for doc_id in candidates:
            norm = length_norm(d.k1, d.b, d.avgdl, length_of[doc_id])
            frequencies = held.get(doc_id, {})
            score = 0.0
            for number, weight_of in enumerate(read):
                weight = weight_of.get(doc_id)
                if weight is None and number in idfs:
                    frequency = frequencies.get(self._entries[terms[number]].rank, 0)
                    if frequency:
                        weight = term_weights(idfs[number], d.k1, [frequency], [norm])[0]
                if weight is not None:
                    score += weight
            scores[doc_id] = score
        return scores


def _count(postings: Decoded) -> int:
    return len(postings[1][0])
