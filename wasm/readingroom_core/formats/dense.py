"""The dense index a query reads by range: coarse lists of 1-bit codes, and the int8 rows they rescore.

The build (builder/writers/dense.py) clusters the passage vectors (spherical k-means, lists of 128 rows
on average, fewer on a small site) and writes four files, which `readers/dense.py` reads:

- the directory (`files.dense`, checked by the manifest, read when semantic search starts): each list's
  mean row as int8 (base64, row-major) and the row units a step of it stands for, the row units a step
  of a residual weight stands for, per list its first slot, size, and byte range and sha256 in the
  lists file, and the sha256 of each block of the list-of file:
      {"v": FORMAT_VERSION, "dims", "block_rows": R, "lists_file": path, "rows_file": path,
       "centroids": base64, "centroid_scale": float, "residual_scale": float,
       "lists": [[first slot, count, start, end, sha256], ...],
       "list_of_file": path, "list_of_blocks": [sha256, ...]}
- the lists file, per list: little-endian uint32 doc ids, the 1-bit code of each row's residual from its
  list's mean (dims / 8 bytes, bit i = component i of row - mean > 0), each residual's weight (one byte,
  `residual_weights` in the build), and the first ROW_SHA_BYTES bytes of the sha256 of each block of R
  int8 rows;
- the rows file: the int8 rows (the very rows of the HNSW file) in list order, slot s at s * dims;
- the list-of file: each doc id's list number, little-endian uint16, in blocks of LIST_OF_BLOCK_DOCS.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from readingroom_core.formats.versioned import FORMAT_VERSION, load_versioned

# Per block of rows, inside the checked list: 64 bits of its sha256, as the forward index and the text heads
# keep of their groups. A checksum is a sizeable share of a row's bytes in its list, and 64 bits catch a
# damaged or stale row as surely as 128 (format 10, commit 949d399).
ROW_SHA_BYTES = 8

# Doc ids per checked block of the list-of file (8 KB): a paper's chunks lie in one block, or two.
LIST_OF_BLOCK_DOCS = 4096


@dataclass(frozen=True)
class ListEntry:
    first_slot: int
    count: int
    start: int
    end: int
    sha256: str


@dataclass(frozen=True)
class DenseDirectory:
    dims: int
    block_rows: int
    lists_file: str
    rows_file: str
    centroids: bytes  # each list's mean row, int8, len(lists) x dims
    centroid_scale: float  # row units per step of a centroid
    residual_scale: float  # row units per step of a residual weight
    lists: tuple[ListEntry, ...]
    list_of_file: str = ""  # none in a site built before it: a filter then widens its scan
    list_of_blocks: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        data = {
            "v": FORMAT_VERSION,
            "dims": self.dims,
            "block_rows": self.block_rows,
            "lists_file": self.lists_file,
            "rows_file": self.rows_file,
            "centroids": base64.b64encode(self.centroids).decode("ascii"),
            "centroid_scale": self.centroid_scale,
            "residual_scale": self.residual_scale,
            "lists": [[e.first_slot, e.count, e.start, e.end, e.sha256] for e in self.lists],
        }
        if self.list_of_file:
            data["list_of_file"] = self.list_of_file
            data["list_of_blocks"] = list(self.list_of_blocks)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> DenseDirectory:
        lists = tuple(ListEntry(int(f), int(c), int(s), int(e), str(h)) for f, c, s, e, h in data["lists"])
        centroids = base64.b64decode(data["centroids"])
        if len(centroids) != len(lists) * data["dims"]:
            raise ValueError(f"dense directory: {len(centroids)} centroid bytes for {len(lists)} lists")
        return cls(
            data["dims"],
            data["block_rows"],
            data["lists_file"],
            data["rows_file"],
            centroids,
            float(data["centroid_scale"]),
            float(data["residual_scale"]),
            lists,
            data.get("list_of_file", ""),
            tuple(str(sha) for sha in data.get("list_of_blocks", ())),
        )


def read_dense_directory(data: bytes | str, what: str = "dense directory") -> DenseDirectory:
    return DenseDirectory.from_json(load_versioned(data, what))
