"""What every data file of the site shares: one format version, compact JSON, and stored gzip.

Data files are named `<stem>.<hash12><ext>` by the builder so a visitor's cache never serves stale data,
and `manifest.json` names each by role. Every JSON data file carries FORMAT_VERSION as `"v"` (the
manifest as `"format_version"`) and a reader refuses any other (`load_versioned`). A file that gzip
shrinks by 5% or more (builder/site/store.py) is stored only as `<path>.gz`: the manifest lists both
paths, `<path>` with the checksum of the contents and `<path>.gz` with that of the stored bytes. Readers
ask for `<path>` and get the contents (`ranges.folder_reader`, the worker: `gunzipped`).

Records convert to and from the JSON they are stored as with the keys in a fixed order, so the same build
writes the same bytes. Stdlib only (CPython and Pyodide read alike).
"""

from __future__ import annotations

import json
import sys
import zlib
from array import array
from typing import Any

FORMAT_VERSION = 10  # 2: postings and vectors read by range, the citation graph, short names; 3: paper table;
# 4: the forward file that rescores keyword candidates, paper texts stored only as .gz; 5: varint postings
# pages, a dictionary entry names its first pages (the rest's records lie before them), no HNSW file in
# the site, a paper's record holds its text's checksum (the manifest no longer lists the texts); 6: a file
# that gzip shrinks is stored only as its .gz (readers unpack it: ranges.folder_reader, the worker); 7: the
# dense lists' codes are their rows' residuals from the list's mean, with a weight byte a row; 8: the chunk
# table's columns typed (a binary file), 64 bits of each forward group's sha256 in the forward index, a
# text file without the chunk ids its chunks rebuild (`chunk_id`), a paper table without the text paths it
# rebuilds; 9: paper texts in one ranged file, a head per paper and chunks in deflated groups
# (`formats.texts`), read a group at a time, not a paper's whole text; 10: 64 bits of each dense row's
# sha256 in its list, not 128
GZIP_MAGIC = b"\x1f\x8b"
GZIP_SUFFIX = ".gz"  # a file stored gzipped is `<its path>.gz` (builder/site/store.py)


def compact_json(data: Any) -> bytes:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def sorted_json(data: Any) -> bytes:
    """The ranged indexes' directories and dictionary blocks as stored: keys sorted, ASCII, no NaN."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=False).encode("ascii")


def load_versioned(data: bytes | str, what: str, key: str = "v") -> dict[str, Any]:
    """A site file's JSON, refused unless its `key` holds this reader's FORMAT_VERSION."""
    loaded = json.loads(data)
    if not isinstance(loaded, dict) or loaded.get(key) != FORMAT_VERSION:
        version = loaded.get(key) if isinstance(loaded, dict) else None
        raise ValueError(
            f"{what} has format {version!r}; this reader knows {FORMAT_VERSION} (rebuild the site with this version)"
        )
    return loaded


def little_endian(values: array[int]) -> bytes:
    """A typed array's bytes as stored: little-endian whatever the machine."""
    if sys.byteorder != "little":
        values = array(values.typecode, values)
        values.byteswap()
    return values.tobytes()


def gunzipped(data: bytes) -> bytes:
    """gzip bytes unpacked; bytes that are not gzip (a host that decoded the file on its way) as they are."""
    return zlib.decompress(data, wbits=31) if data[:2] == GZIP_MAGIC else data  # 31: a gzip header
