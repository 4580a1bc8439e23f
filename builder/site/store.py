"""Putting the site's files on disk: content-hashed names (`<stem>.<hash12><ext>`, so a visitor's cache
never serves stale data), files under their own names, and files stored gzipped where that pays.

The formats themselves (layout, version, codec) live in `readingroom_core.formats`.
"""

from __future__ import annotations

import gzip
import hashlib
import zlib
from collections.abc import Callable
from pathlib import Path

from readingroom_core.formats.manifest import Artifact
from readingroom_core.formats.versioned import GZIP_SUFFIX


def write_hashed(site_dir: Path, folder: str, stem: str, suffix: str, data: bytes) -> Artifact:
    """`<folder>/<stem>.<sha256[:12]><suffix>`: changed contents get a new name."""
    return write_plain(site_dir, f"{folder}/{stem}.{hashlib.sha256(data).hexdigest()[:12]}{suffix}", data)


def write_plain(site_dir: Path, relative: str, data: bytes) -> Artifact:
    """A file under its own name, for files that are found by name (Pyodide's, ES modules')."""
    path = site_dir / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return Artifact(relative, len(data), hashlib.sha256(data).hexdigest())


# A file is stored gzipped only where that saves at least this share of the bytes: a zip of deflated files
# (Pyodide's standard library as npm ships it) saves next to nothing and would cost the visitor a
# decompression for nothing, while the query encoder saves about a quarter, a second at 20 Mbit/s against
# a fraction of a second of gunzip.
GZIP_MIN_SAVING = 0.05


def smallest_gzip(data: bytes) -> bytes:
    """The smaller of deflate's and literals-only gzip streams of `data` (see stored_gzipped)."""
    return min(gzip.compress(data, compresslevel=6, mtime=0), huffman_only_gzip(data), key=len)


def stored_gzipped(
    site_dir: Path, artifact: Artifact, pack: Callable[[bytes], bytes] = smallest_gzip
) -> list[Artifact]:
    """The artifact, and `<path>.gz` in its place where gzip pays (see GZIP_MIN_SAVING): the plain file
    is then removed, and the artifact's entry stays as the checksum of the contents the `.gz` unpacks to.

    Static hosts differ: GitHub Pages gzips text types (JSON, JavaScript) on the fly but not binary
    files (and wasm by no documented rule); `builder serve` and many others send every byte as stored.
    The browser runtime fetches the `.gz` of a file the manifest lists one for and decompresses it
    itself (DecompressionStream), so a visitor downloads the small form on any host. Nothing fetches
    the plain copy, and the CLI's folder reader unpacks the `.gz` (readingroom_core.ranges.folder_reader),
    so keeping it would cost the site bytes for nothing: over a third of a 1,000-paper site (the Python
    snapshot, the query encoder, the runtime's wasm; commit 830e1ed).
    Level 6 (level 9 takes twice as long for 0.5% fewer bytes on the runtime's wasm) with no name and a
    zero mtime: the same input gives the same bytes. `pack` makes the stream (smallest_gzip, or a memo of
    it for the runtime's files, the same in every build).
    """
    path = site_dir / artifact.path
    data = path.read_bytes()
    packed = pack(data)
    if len(packed) > (1 - GZIP_MIN_SAVING) * len(data):
        return [artifact]
    relative = artifact.path + GZIP_SUFFIX
    (site_dir / relative).write_bytes(packed)
    path.unlink()
    return [artifact, Artifact(relative, len(packed), hashlib.sha256(packed).hexdigest())]


def huffman_only_gzip(data: bytes) -> bytes:
    """A gzip stream of literals only (zlib's Z_HUFFMAN_ONLY, level 6, zero mtime): deterministic, and
    read by any gunzip. On the query encoder's coarse int8 codes deflate's 3-byte matches cost more than
    the literals they replace (commit 40a46ce), so the smaller of the two streams is kept."""
    packer = zlib.compressobj(6, zlib.DEFLATED, 31, 8, zlib.Z_HUFFMAN_ONLY)
    return packer.compress(data) + packer.flush()
