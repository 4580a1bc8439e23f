"""Byte ranges of the site's large files, each block checked against the sha256 its directory gives.

The keyword and dense indexes are too large to download whole on a big list, so a query reads only the
blocks it needs: a block is (file, start, end, sha256), named by a small directory that was itself
checked. Every reader of the site (CPython over a folder, Pyodide in the browser's worker over `fetch`
with a Range header, Node over a mounted folder) supplies one function, `read_range(path, start, end)`;
`BlockReader` does the rest the same way everywhere: it joins adjacent blocks into one request, checks
every block, keeps checked blocks and counts requests and bytes (what the scale benchmark reports).

A host that ignores Range answers 200 with the whole file; the browser's reader slices it, and
`whole_file_ranges` does the same over any whole-file reader.
"""

from __future__ import annotations

import hashlib
import os
import zlib
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from readingroom_core.formats.versioned import GZIP_SUFFIX, gunzipped

RangeRead = Callable[[str, int, int], bytes]  # (site path, start, end exclusive) -> those bytes
# Told every range one read needs before any is read: the browser's worker fetches them all at once
# (in parallel) and runs the step again; a reader over a folder needs no such notice.
Announce = Callable[[Sequence[tuple[str, int, int]]], None]
Reader = Callable[[str], bytes]
# Checked blocks kept in memory; past this the least recently used go (a long session must not grow
# without bound: `lru`). The blocks a caller keeps decoded (the dense lists) are not held here.
# Pyodide's WebAssembly memory grows in steps of a fifth and never shrinks, so what matters is the peak
# need: this bound keeps the worker's memory at one step through the scale bench's questions at 10,000
# papers, for a few KB more per first-sight query (commit 65bb913, measured with scripts/worker_memory.py,
# removed in cf98ed9, last version at fcd2e07).
# Halving it, readers.postings.KEPT_POSTINGS and readers.dense.KEPT_LISTS would cost far more bytes per query:
# later questions find less of what earlier ones read.
CACHE_BYTES = 24 << 20


class DamagedData(Exception):
    """A block's bytes do not match the checksum its directory gives: the site is damaged.

    Not a ValueError (what the site's boundary answers as a rejected request): it must reach the worker,
    which answers keyword-only when the dense side's files are damaged and says why in one line."""


@dataclass(frozen=True)
class Block:
    """Bytes [start, end) of one site file and the sha256 (hex, or a hex prefix of it) they must have."""

    path: str
    start: int
    end: int
    sha256: str


def check_block(block: Block, data: bytes) -> bytes:
    if len(data) != block.end - block.start:
        raise DamagedData(
            f"{block.path} bytes {block.start}-{block.end}: got {len(data)} bytes; the site's data is damaged"
        )
    if not hashlib.sha256(data).hexdigest().startswith(block.sha256):
        raise DamagedData(
            f"{block.path} bytes {block.start}-{block.end} do not match their checksum; the site's data is damaged"
        )
    return data


class BlockReader:
    """Checked blocks through one `read_range`; adjacent blocks of a file travel as one request."""

    def __init__(
        self, read_range: RangeRead, announce: Announce | None = None, cache_bytes: int = CACHE_BYTES
    ) -> None:
        self._read_range = read_range
        self._announce = announce
        # least recently used first; an OrderedDict, as a dict's first key is found by stepping over the
        # slots of the keys dropped before it, which grows with a long visit (commit 99e46c1)
        self._cache: OrderedDict[Block, bytes] = OrderedDict()
        self._cache_bytes = cache_bytes
        self._cached_bytes = 0
        self.requests = 0
        self.bytes_read = 0

    def reset_counts(self) -> None:
        self.requests = self.bytes_read = 0

    def read(self, blocks: Sequence[Block], gap: int = 0, keep: bool = True) -> list[bytes]:
        """Each block's bytes, checked, in the order asked; blocks already read come from memory. Blocks
        of one file at most `gap` bytes apart are read in one request (the bytes between thrown away); a
        negative `gap` reads each block alone.
        `keep=False`: the caller keeps what it decodes from them, so the cache does not hold them twice."""
        # What this read returns is held apart from the cache: keeping the blocks it fetches may drop
        # others it asked for from the cache (a long session at 10,000 papers fills it).
        found = {block: self._cache[block] for block in blocks if block in self._cache}
        for block in found:
            self._cache.move_to_end(block)  # now the most recently used
        missing = sorted({block for block in blocks if block not in found}, key=_position)
        runs = _runs(missing, gap)
        if self._announce is not None and runs:
            self._announce([(run[0].path, run[0].start, run[-1].end) for run in runs])
        for run in runs:
            first, last = run[0], run[-1]
            data = self._read_range(first.path, first.start, last.end)
            self.requests += 1
            self.bytes_read += len(data)
            for block in run:
                found[block] = check_block(block, data[block.start - first.start : block.end - first.start])
                if keep:
                    self._keep(block, found[block])
        return [found[block] for block in blocks]

    def _keep(self, block: Block, data: bytes) -> None:
        self._cache[block] = data
        self._cached_bytes += len(data)
        while self._cached_bytes > self._cache_bytes and len(self._cache) > 1:
            self._cached_bytes -= len(self._cache.popitem(last=False)[1])


def _position(block: Block) -> tuple[str, int]:
    return block.path, block.start


def _runs(blocks: list[Block], gap: int) -> list[list[Block]]:
    """Sorted blocks grouped where each starts at most `gap` bytes after the previous in the same file."""
    runs: list[list[Block]] = []
    for block in blocks:
        if runs and runs[-1][-1].path == block.path and 0 <= block.start - runs[-1][-1].end <= gap:
            runs[-1].append(block)
        else:
            runs.append([block])
    return runs


def folder_reader(site_dir: str | os.PathLike[str]) -> Reader:
    """A reader over a site folder on disk (CPython, or a folder Node mounts into Pyodide). A file the
    build stored only gzipped (`<path>.gz`, builder/site/store.py) is read unpacked under its own path,
    as the browser's worker hands it over."""

    def read(relative_path: str) -> bytes:
        path = os.path.join(site_dir, relative_path)
        if not os.path.exists(path) and os.path.exists(path + GZIP_SUFFIX):
            with open(path + GZIP_SUFFIX, "rb") as packed:
                try:
                    return gunzipped(packed.read())
                except zlib.error as error:
                    stored = relative_path + GZIP_SUFFIX
                    raise DamagedData(
                        f"{stored} could not be decompressed; the site's data is damaged"
                    ) from error
        with open(path, "rb") as data_file:
            return data_file.read()

    return read


def folder_range_reader(site_dir: str | os.PathLike[str]) -> RangeRead:
    """Ranges of files in a site folder (CPython, or a folder Node mounts into Pyodide)."""

    def read_range(relative_path: str, start: int, end: int) -> bytes:
        with open(os.path.join(site_dir, relative_path), "rb") as data_file:
            data_file.seek(start)
            return data_file.read(end - start)

    return read_range


def whole_file_ranges(read: Reader) -> RangeRead:
    """Ranges sliced from whole files (a reader, or a host, that has no ranges); each file read once."""
    files: dict[str, bytes] = {}

    def read_range(path: str, start: int, end: int) -> bytes:
        if path not in files:
            files[path] = read(path)
        return files[path][start:end]

    return read_range
