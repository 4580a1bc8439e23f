"""The postings files for a `bm25.Postings` (`readingroom_core.formats.postings`): the dictionary blocks,
the impact-ordered pages and the directory, with the forward file beside them (`writers/forward.py`).
Stdlib only, like the core that reads them (`readingroom_core.readers.postings`), but only the build
writes them.
"""

from __future__ import annotations

import hashlib
from array import array
from typing import Any

from builder.writers.forward import forward_files
from readingroom_core.bm25 import Postings, decode_entry, length_norm, lucene_idf, term_weights
from readingroom_core.formats.forward import FORWARD_GROUP, FORWARD_MIN_DF
from readingroom_core.formats.postings import (
    BLOCK_BYTES,
    INLINE_PAGES,
    PAGE_ENTRIES,
    PAGE_SHA_DIGITS,
    TermDirectory,
    deflated,
    varint,
)
from readingroom_core.formats.versioned import little_endian, sorted_json


class TermLayout:
    """The terms, pages and forward files for a `bm25.Postings`, and the directory once their paths are
    known."""

    def __init__(
        self,
        postings: Postings,
        page: int = PAGE_ENTRIES,
        group: int = FORWARD_GROUP,
        min_df: int = FORWARD_MIN_DF,
        inline_pages: int = INLINE_PAGES,
    ) -> None:
        self.postings = postings
        self.page = page
        self.group = group
        self.min_df = min_df
        self.inline_pages = inline_pages
        pages, dictionary = bytearray(), {}
        norms = [length_norm(postings.k1, postings.b, postings.avgdl, dl) for dl in postings.doc_lengths]
        held: list[list[tuple[int, int]]] = [[] for _ in range(postings.n)]  # per doc: (rank, frequency)
        self.forward_terms = 0
        for term, entry in postings.terms.items():
            doc_ids, frequencies = decode_entry(entry)
            rank = -1
            if len(doc_ids) > min_df:
                rank, self.forward_terms = self.forward_terms, self.forward_terms + 1
                for doc_id, frequency in zip(doc_ids, frequencies, strict=True):
                    held[doc_id].append((rank, frequency))
            idf = lucene_idf(postings.n, len(doc_ids))
            weights = term_weights(idf, postings.k1, frequencies, [norms[d] for d in doc_ids])
            order = sorted(range(len(doc_ids)), key=lambda i: (-weights[i], doc_ids[i]))
            term_pages = [
                _page_bytes(order[first : first + page], doc_ids, frequencies, postings.doc_lengths)
                for first in range(0, len(order), page)
            ]
            shas = [hashlib.sha256(data).digest()[: PAGE_SHA_DIGITS // 2] for data in term_pages]
            sizes = [len(data) for data in term_pages]
            checksums = [sha.hex() for sha in shas[:inline_pages]]
            if len(shas) > inline_pages:
                rest = b"".join(
                    little_endian(array("I", [size])) + sha
                    for size, sha in zip(sizes[inline_pages:], shas[inline_pages:], strict=True)
                )
                pages += rest
                checksums.append(hashlib.sha256(rest).hexdigest()[:PAGE_SHA_DIGITS])
            dictionary[term] = [len(doc_ids), len(pages), rank, sizes[:inline_pages], *checksums]
            pages += b"".join(term_pages)
        self.pages_bytes = bytes(pages)
        self.terms_bytes, self._blocks = _dictionary_blocks(dictionary)
        self.forward_bytes, self.forward_index_bytes = forward_files(held, group)

    def directory_bytes(self, terms_path: str, pages_path: str, forward_path: str, index_path: str) -> bytes:
        p = self.postings
        index = (
            index_path,
            len(self.forward_index_bytes),
            hashlib.sha256(self.forward_index_bytes).hexdigest(),
        )
        directory = TermDirectory(
            p.n,
            p.k1,
            p.b,
            p.avgdl,
            self.page,
            self.inline_pages,
            terms_path,
            pages_path,
            self._blocks,
            forward_path,
            self.group,
            self.min_df,
            index,
        )
        return sorted_json(directory.to_json())


def _page_bytes(chosen: list[int], doc_ids: list[int], frequencies: list[int], lengths: list[int]) -> bytes:
    """Postings `chosen` (positions in the term's lists) in doc id order: gap, frequency, length varints,
    deflated (`formats.postings.deflated`)."""
    data, previous = bytearray(), 0
    for i in sorted(chosen, key=doc_ids.__getitem__):
        data += varint(doc_ids[i] - previous) + varint(frequencies[i]) + varint(lengths[doc_ids[i]])
        previous = doc_ids[i]
    return deflated(bytes(data))


def _dictionary_blocks(
    dictionary: dict[str, list[Any]],
) -> tuple[bytes, tuple[tuple[str, int, int, str], ...]]:
    """Sorted terms cut into JSON objects of about BLOCK_BYTES, and each one's (first term, range, sha256)."""
    data, blocks = bytearray(), []
    current: dict[str, list[Any]] = {}
    size = 0

    def close() -> None:
        encoded = sorted_json(current)
        blocks.append(
            (
                min(current),
                len(data),
                len(data) + len(encoded),
                hashlib.sha256(encoded).hexdigest()[:PAGE_SHA_DIGITS],
            )
        )
        data.extend(encoded)

    for term in sorted(dictionary):
        current[term] = dictionary[term]
        size += len(term) + 4 + len(sorted_json(dictionary[term]))
        if size >= BLOCK_BYTES:
            close()
            current, size = {}, 0
    if current:
        close()
    return bytes(data), tuple(blocks)
