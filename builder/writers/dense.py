"""Passage vectors -> the ranged dense files (`readingroom_core/formats/dense.py`) that search reads.

The rows are the HNSW file's int8 rows (same calibrated scale); they are grouped into coarse lists of
about ROWS_PER_LIST rows by spherical k-means, so a query reads a few dozen lists' 1-bit codes and then
the int8 rows of its best candidates, which lie together in the rows file because similar passages share
a list; within a list the rows are grouped again, by a smaller k-means, so that those candidates also lie
in few runs. A row's code is the sign of its residual from its list's mean row, with one byte for the
residual's weight: the estimate a query ranks the codes by (see `readers.dense.code_scorer`).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass

import numpy as np

from readingroom_core.formats.dense import LIST_OF_BLOCK_DOCS, ROW_SHA_BYTES, DenseDirectory, ListEntry

# Rows per checked block of the rows file. One: a query rescores ~100 rows spread over its lists, so a
# larger block mostly brings rows it never uses, while a row's checksum (formats.dense.ROW_SHA_BYTES) is
# small beside its 384 bytes, in the lists file (scripts/ranged_search_study.py, removed in cf98ed9, last
# version at 68a4b03; commit 52016cb).
BLOCK_ROWS = 1
# Rows in a coarse list, on average: a query scans a budget of rows (readers.dense.DEFAULT_SCAN), so the
# lists' size, not their count, sets how finely it chooses where to look; recall at 10,000 papers rose
# with every halving down to this size, while the centroids, loaded when semantic search starts (384
# bytes a list), grow with the count (commit ed50a00).
ROWS_PER_LIST = 128
BATCH_ROWS = 65536  # rows whose residuals are held at once (100 MB as float32)
KMEANS_SAMPLE = 65536  # rows the centroids are trained on (all rows are assigned)
KMEANS_ITERATIONS = 12
SEED = 0


@dataclass(frozen=True)
class DenseFiles:
    """The bytes of the lists and rows files, and the directory to write once their paths are known."""

    lists: bytes
    rows: bytes
    list_of: bytes  # each doc id's list number, uint16
    centroids: bytes  # each list's mean row, int8
    entries: tuple[ListEntry, ...]
    dims: int
    centroid_scale: float  # row units per step of a centroid
    residual_scale: float  # row units per step of a residual weight

    def directory(self, lists_path: str, rows_path: str, list_of_path: str) -> DenseDirectory:
        block = 2 * LIST_OF_BLOCK_DOCS
        list_of_blocks = tuple(
            hashlib.sha256(self.list_of[at : at + block]).hexdigest()
            for at in range(0, len(self.list_of), block)
        )
        return DenseDirectory(
            self.dims,
            BLOCK_ROWS,
            lists_path,
            rows_path,
            self.centroids,
            self.centroid_scale,
            self.residual_scale,
            self.entries,
            list_of_path,
            list_of_blocks,
        )


def list_count(rows: int) -> int:
    """Lists of ROWS_PER_LIST rows on average; below 16,384 rows, sqrt(rows) lists of fewer (the
    112-paper site keeps its 98 lists)."""
    return max(1, math.ceil(rows / ROWS_PER_LIST), round(math.sqrt(rows)))


def sub_cluster_count(rows: int) -> int:
    return max(1, round(math.sqrt(rows)))


def spherical_kmeans(rows: np.ndarray, lists: int) -> np.ndarray:
    """Centroids of `lists` clusters of int8 `rows` by cosine, as int16 directions; deterministic (a fixed
    seed, a fixed sample, exact arithmetic: `cosines`)."""
    rng = np.random.default_rng(SEED)
    sample = rows if len(rows) <= KMEANS_SAMPLE else rows[rng.choice(len(rows), KMEANS_SAMPLE, replace=False)]
    centroids = direction(sample[rng.choice(len(sample), lists, replace=False)])
    wide = sample.astype(np.float32)  # sums of int8 rows are exact in float32 below 2^24 / 127 of them
    for _ in range(KMEANS_ITERATIONS):
        assigned = assign(wide, centroids)
        sums = np.zeros(centroids.shape, dtype=np.float32)
        np.add.at(sums, assigned, wide)
        centroids = np.where((sums == 0).all(axis=1, keepdims=True), centroids, direction(sums))
    return centroids


def direction(vectors: np.ndarray) -> np.ndarray:
    """Each row's direction as int16, its largest component at +-32767 (a zero row stays zero): finer
    than int8 centroids, chosen on the 10,000-paper list's tuning questions (commit 3f7c13c)."""
    largest = np.abs(vectors).max(axis=1, keepdims=True).astype(np.float64)
    return np.rint(vectors * (32767 / np.where(largest == 0, 1, largest))).astype(np.int16)


def cosines(rows: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Each int8 row's product with each integer centroid (int16) over the centroid's norm.

    The products are exact: every partial sum is an integer far inside float64's 2^53 (384 * 127 * 32767
    = 1.6e9), so any BLAS kernel, in any order, gives the same bits, and a build of the same
    vectors writes the same files on any CPU. On float vectors OpenBLAS's kernels round differently (with
    FMA or without): at 1,000 papers the Haswell and Sandybridge kernels left the centroids up to 9e-4
    apart and two rows in other lists, so a rebuild on another machine (a CI runner) renamed every dense
    file and a returning visitor fetched them again."""
    squares = np.square(centroids, dtype=np.int64).sum(axis=1)
    inverse = (1 / np.sqrt(np.where(squares == 0, 1, squares))).astype(np.float32)
    products = (rows.astype(np.float64, copy=False) @ centroids.astype(np.float64).T).astype(np.float32)
    products *= inverse  # float32 from here (half the memory), rounded alike on every CPU
    return products


def chained(centroids: np.ndarray) -> np.ndarray:
    """The centroids in a greedy nearest-neighbour chain, so that clusters a query reads together (close
    centroids) tend to lie side by side and are read in fewer requests."""
    similarity = cosines(centroids, centroids)
    order, left = [0], set(range(1, len(centroids)))
    while left:
        candidates = np.fromiter(left, dtype=np.int64)
        best = int(candidates[np.argmax(similarity[order[-1], candidates])])
        order.append(best)
        left.remove(best)
    return centroids[order]


def grouped(rows: np.ndarray) -> np.ndarray:
    """The order of one list's int8 rows: by sub-cluster (about sqrt(rows) of them, chained), then by
    position. A query rescores a list's rows nearest to it, which then lie in a few runs of the rows file,
    so it makes far fewer row requests (commit 92a2fea)."""
    if len(rows) < 2:
        return np.arange(len(rows))
    return np.argsort(
        assign(rows, chained(spherical_kmeans(rows, sub_cluster_count(len(rows))))), kind="stable"
    )


def assign(rows: np.ndarray, centroids: np.ndarray, batch: int = 8192) -> np.ndarray:
    """Each int8 row's (or its float copy's) nearest integer centroid by cosine (ties to the lower list)."""
    return (
        np.concatenate(
            [np.argmax(cosines(rows[i : i + batch], centroids), axis=1) for i in range(0, len(rows), batch)]
        )
        if len(rows)
        else np.zeros(0, dtype=np.int64)
    )


def dense_files(rows: np.ndarray) -> DenseFiles:
    """The lists, rows and list-of files for the passages' int8 `rows` (doc id = position)."""
    n, dims = rows.shape
    if dims % 8:
        raise ValueError(f"the 1-bit codes need dimensions divisible by 8, got {dims}")
    centroids = chained(spherical_kmeans(rows, list_count(n))) if n else np.zeros((0, dims), dtype=np.int16)
    if len(centroids) > 1 << 16:
        raise ValueError(f"{len(centroids)} lists: the list-of file holds list numbers as uint16")
    assigned = assign(rows, centroids) if n else np.zeros(0, dtype=np.int64)
    sizes = [int(size) for size in np.bincount(assigned, minlength=len(centroids))]
    by_list = np.lexsort((np.arange(n), assigned))
    centres, centroid_scale = list_means(rows[by_list], sizes)
    centre_rows = centres.astype(np.float32) * np.float32(centroid_scale)

    def residuals(members: np.ndarray) -> np.ndarray:
        return rows[members].astype(np.float32) - centre_rows[assigned[members]]

    weights = np.concatenate(
        [
            residual_weights(residuals(np.arange(at, min(at + BATCH_ROWS, n))))
            for at in range(0, n, BATCH_ROWS)
        ]
        or [np.zeros(0, dtype=np.float32)]
    )
    residual_scale = max(float(weights.max(initial=0)), 1e-12) / 255
    weight_bytes = np.rint(weights / residual_scale).astype(np.uint8)
    members_of = np.split(by_list, np.cumsum(sizes)[:-1]) if n else []
    order = np.concatenate([members[grouped(rows[members])] for members in members_of]) if n else by_list
    lists, entries, slot = bytearray(), [], 0
    ordered_rows = rows[order]
    for size in sizes:
        members = order[slot : slot + size]
        member_rows = ordered_rows[slot : slot + size]
        shas = b"".join(
            hashlib.sha256(member_rows[i : i + BLOCK_ROWS].tobytes()).digest()[:ROW_SHA_BYTES]
            for i in range(0, size, BLOCK_ROWS)
        )
        codes = np.packbits(residuals(members) > 0, axis=1, bitorder="little")
        region = members.astype("<u4").tobytes() + codes.tobytes() + weight_bytes[members].tobytes() + shas
        entries.append(
            ListEntry(slot, size, len(lists), len(lists) + len(region), hashlib.sha256(region).hexdigest())
        )
        lists += region
        slot += size
    list_of = assigned.astype("<u2").tobytes()
    return DenseFiles(
        bytes(lists),
        ordered_rows.tobytes(),
        list_of,
        centres.tobytes(),
        tuple(entries),
        dims,
        centroid_scale,
        residual_scale,
    )


def list_means(rows_by_list: np.ndarray, sizes: list[int]) -> tuple[np.ndarray, float]:
    """Each list's mean row (rows given list by list), as int8, and the row units one of its steps stands
    for: the centre a row's residual is taken from, and (its direction) the centroid a query ranks the
    lists by."""
    counts = np.array(sizes, dtype=np.int64)
    sums = np.zeros((len(sizes), rows_by_list.shape[1]), dtype=np.float64)
    filled = counts > 0
    if filled.any():  # float32 sums of int8 rows are exact below 2^24 / 127 rows a list
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])[filled]
        sums[filled] = np.add.reduceat(rows_by_list.astype(np.float32), starts, axis=0)
    means = sums / np.maximum(counts, 1)[:, None]
    scale = max(float(np.abs(means).max(initial=0)), 1e-12) / 127
    return np.clip(np.rint(means / scale), -127, 127).astype(np.int8), scale


def residual_weights(residuals: np.ndarray) -> np.ndarray:
    """|r|^2 / |r|_1 per residual r: the factor that turns a query's product with r's signs into an
    estimate of its product with r, exact for a query along r (as RaBitQ scales its codes; measured
    against codes of the rows' own signs in commit ed50a00)."""
    first = np.abs(residuals).sum(axis=1)
    return np.where(first > 0, (residuals**2).sum(axis=1) / np.where(first > 0, first, 1), 0.0)
