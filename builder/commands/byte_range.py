"""A `Range` request header read as GitHub Pages' CDN reads it, so the preview answers ranges as the host does.

Pages sits behind Fastly, a Varnish: it serves one byte range per request and never builds a
`multipart/byteranges` reply. One well-formed range (`bytes=A-B`, `bytes=A-`, `bytes=-N`) is served
with 206, its end clipped to the file; a range that starts past the end (or `bytes=-0`) is unsatisfiable
(416, `Content-Range: bytes */size`); anything else (several ranges, another unit, garbage) is ignored
and the whole file is sent with 200, as RFC 9110 allows and as every reader must handle anyway, since
some hosts ignore Range altogether.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ONE_RANGE = re.compile(r"bytes=(\d*)-(\d*)", re.IGNORECASE)


@dataclass(frozen=True)
class ByteRange:
    """Bytes [start, stop) of a file of `size` bytes."""

    start: int
    stop: int
    size: int

    @property
    def content_range(self) -> str:
        return f"bytes {self.start}-{self.stop - 1}/{self.size}"


@dataclass(frozen=True)
class Unsatisfiable:
    """A range no byte of the file falls in; the reply names the file's size."""

    size: int

    @property
    def content_range(self) -> str:
        return f"bytes */{self.size}"


def requested_range(header: str, size: int) -> ByteRange | Unsatisfiable | None:
    """The range `header` asks of a file of `size` bytes; None when it is to be ignored (200, whole)."""
    match = ONE_RANGE.fullmatch(header.strip().replace(" ", ""))
    if match is None or match.group(1) == match.group(2) == "":
        return None
    first, last = match.group(1), match.group(2)
    if first == "":  # a suffix: the last N bytes
        suffix = int(last)
        if suffix == 0 or size == 0:
            return Unsatisfiable(size)
        return ByteRange(max(size - suffix, 0), size, size)
    start = int(first)
    stop = size if last == "" else min(int(last) + 1, size)
    if last != "" and int(last) < start:
        return None  # RFC 9110: an invalid range set is ignored
    if start >= size:
        return Unsatisfiable(size)
    return ByteRange(start, stop, size)
