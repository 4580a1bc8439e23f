"""BM25 postings read by range: impact-ordered pages per term, found through a small dictionary.

Three files (written by builder/writers/postings.py, read by `readers/postings.py`), and the forward file
beside them (`formats.forward`):

- the directory (`files.postings`, loaded at start-up and checked by the manifest): the BM25 parameters,
  the page size, how many page checksums a dictionary entry holds, per dictionary block its first term
  and its byte range and sha256 in the terms file, and the forward file's group size, its smallest
  document frequency and its index's size and sha256:
      {"v": FORMAT_VERSION, "n": N, "k1", "b", "avgdl", "page": P, "inline_pages": I, "terms": path,
       "pages": path, "blocks": [[first term, end, sha256], ...], "forward": path,
       "forward_group": G, "forward_min_df": F, "forward_index": [path, size, sha256]}
- the terms file: blocks of sorted terms, each a JSON object {term: [doc freq, start, rank, [page size,
  ...], page sha, ...]} (rank: the term's number in the forward file, -1 for a term in at most F
  documents): the byte sizes and shas of its first I pages (sha256 as their first 32 hex digits), and for
  a term with more pages one more sha: that of the rest's page records, which lie in the pages file just
  before its pages;
- the pages file: per term the records of its pages past the I-th (little-endian uint32 byte size and 16
  bytes of sha256 each, only for a term with more than I pages), then its postings in impact order (BM25
  weight of the term in the document, best first, ties by doc id), P to a page; within a page, in doc id
  order, varints of the doc id gap, the term frequency and the document length, deflated (most gaps
  and frequencies are small, so a posting takes a few bytes where fixed-width fields would take 8).

An entry names only the pages a default query reads, so a block stays small however common its terms are
("model" has 2,500 pages at 10,000 papers); a deeper read (a phrase, every posting) first reads the rest
of the term's page records.
"""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from typing import Any

from readingroom_core.formats.versioned import FORMAT_VERSION, load_versioned
from readingroom_core.ranges import DamagedData

PAGE_ENTRIES = 256  # postings per page (about 1 KB of varints): the smallest unit a query reads of a term
# Each page and each forward group is stored as a raw deflate stream (no header: its sha checks it): the
# varints' bytes are far from uniform (most gaps and frequencies are small, the forward file's rank gaps
# repeat), and zlib unpacks one in microseconds, in CPython and in Pyodide alike. Commits 39219de (the
# pages) and 4431d25 (the forward groups) measured what it saves.
DEFLATE_LEVEL = 9
RAW_DEFLATE = -15  # zlib's wbits for a raw stream with a 32 KB window
# A dictionary block's size the writer aims at: a query reads one per term and the directory (read at
# start-up) names each, so smaller blocks cut a question's dictionary bytes until the directory grows
# (scripts/dictionary_growth_study.py, removed in cf98ed9, last version at 830e1ed; commit 84ae362).
BLOCK_BYTES = 4096
PAGE_SHA_DIGITS = 32  # 128 bits of sha256 per page and per dictionary block
PAGE_RECORD_BYTES = 4 + PAGE_SHA_DIGITS // 2  # a deeper page's uint32 byte size and sha256 prefix
# Postings read per query term (the reader's default prefix), which the layout is cut around: the page
# checksums an entry holds and the terms the forward file holds are those a default read needs. Deep
# enough that the top 10 nearly matches exhaustive BM25 at 1,000 papers, for about the bytes a shallower
# read of fixed-width pages took (scripts/bm25_depth_study.py, removed in cf98ed9, last version at
# 5af4878; commit 84ae362).
DEFAULT_PREFIX = 4096
# Page checksums a dictionary entry holds: those a default read needs. The rest cost a deep read one more
# round; inline, they would make "model"'s entry 85 KB at 10,000 papers, in a block most queries read
# (commit 3fc0d9c).
INLINE_PAGES = DEFAULT_PREFIX // PAGE_ENTRIES


@dataclass(frozen=True)
class TermDirectory:
    """The postings directory: the BM25 parameters and where each dictionary block lies."""

    n: int
    k1: float
    b: float
    avgdl: float
    page: int
    inline_pages: int
    terms: str
    pages: str
    blocks: tuple[tuple[str, int, int, str], ...]  # (first term, start, end, sha256 prefix) in the terms file
    forward: str
    forward_group: int
    forward_min_df: int
    forward_index: tuple[str, int, str]  # (path, size, sha256)

    def to_json(self) -> dict[str, Any]:
        keys = ("n", "k1", "b", "avgdl", "page", "inline_pages", "terms", "pages", "blocks", "forward")
        data = {"v": FORMAT_VERSION, **{key: getattr(self, key) for key in keys}}
        data["blocks"] = [[first, end, sha] for first, _, end, sha in self.blocks]  # starts: the ends before
        forward = {"forward_group": self.forward_group, "forward_min_df": self.forward_min_df}
        return data | forward | {"forward_index": self.forward_index}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TermDirectory:
        ends = [int(end) for _, end, _ in data["blocks"]]
        blocks = tuple(
            (str(first), start, end, str(sha))
            for (first, _, sha), start, end in zip(data["blocks"], [0, *ends], ends, strict=False)
        )
        path, size, sha = data["forward_index"]
        return cls(
            data["n"],
            data["k1"],
            data["b"],
            data["avgdl"],
            data["page"],
            data["inline_pages"],
            data["terms"],
            data["pages"],
            blocks,
            data["forward"],
            data["forward_group"],
            data["forward_min_df"],
            (str(path), int(size), str(sha)),
        )


def read_term_directory(data: bytes | str, what: str = "postings directory") -> TermDirectory:
    return TermDirectory.from_json(load_versioned(data, what))


# --- the codec: varints, deflated (pages here, groups in the forward file) ----------------------------


def varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def read_varints(data: bytes) -> list[int]:
    if data and data[-1] & 0x80:
        raise ValueError("the data ends inside a number")
    if 8 * (len(data) - len(data.translate(None, CONTINUATION_BYTES))) < len(data):
        return _mostly_one_byte_varints(data)
    values, value, shift = [], 0, 0
    for byte in data:
        value |= (byte & 0x7F) << shift
        if byte & 0x80:
            shift += 7
        else:
            values.append(value)
            value, shift = 0, 0
    return values


CONTINUATION_BYTES = bytes(range(0x80, 0x100))
LONGER_VARINT = re.compile(rb"[\x80-\xff]+[\x00-\x7f]")


def _mostly_one_byte_varints(data: bytes) -> list[int]:
    """Varints where few take two bytes or more (a forward group: 98% are one byte): the one-byte runs
    between the longer ones are copied whole, which halves the time of a byte-by-byte loop; where many are
    longer (a page's doc id gaps), that loop is faster."""
    values: list[int] = []
    at = 0
    for longer in LONGER_VARINT.finditer(data):
        values += data[at : longer.start()]
        value = 0
        for shift, byte in enumerate(longer.group()):
            value |= (byte & 0x7F) << (7 * shift)
        values.append(value)
        at = longer.end()
    values += data[at:]
    return values


def deflated(data: bytes) -> bytes:
    """A page or a forward group as stored: a raw deflate stream (see DEFLATE_LEVEL)."""
    packer = zlib.compressobj(DEFLATE_LEVEL, zlib.DEFLATED, RAW_DEFLATE)
    return packer.compress(data) + packer.flush()


def page_values(data: bytes, what: str) -> list[int]:
    """A stored page's or forward group's varints; `what` names it in the error."""
    try:
        return read_varints(zlib.decompress(data, RAW_DEFLATE))
    except (zlib.error, ValueError) as error:
        raise DamagedData(f"{what} could not be unpacked; the site's data is damaged") from error
