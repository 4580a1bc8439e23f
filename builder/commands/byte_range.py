"""A `Range` request header read as GitHub Pages' CDN reads it, so the preview answers ranges as the host does.

Pages sits behind Fastly, a Varnish: it serves one byte range per request and never builds a
`multipart/byteranges` reply. One well-formed range (`bytes=A-B`, `bytes=A-`, `bytes=-N`) is served
with 206, its end clipped to the file; a range that starts past the end (or `bytes=-0`) is unsatisfiable
(416, `Content-Range: bytes */size`); anything else (several ranges, another unit, garbage) is ignored
and the whole file is sent with 200, as RFC 9110 allows and as every reader must handle anyway, since
some hosts ignore Range altogether. A position Varnish cannot hold (past 2^63 - 1, its ssize_t) is such
garbage: the header is ignored, and its digits are never turned into an int (Python refuses past
4,300 digits, and a header line may hold 65,536).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ONE_RANGE = re.compile(r"bytes=(\d*)-(\d*)", re.IGNORECASE | re.ASCII)
LARGEST = 2**63 - 1  # bytes: the largest position Varnish reads; a longer number is a range it ignores


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
    if match is None or match.group(1) == match.group(2) == "" or any(map(past_largest, match.groups())):
        return None
    first, last = match.group(1), match.group(2)
    if first == "":  # a suffix: the last N bytes
        suffix = number(last)
        if suffix == 0 or size == 0:
            return Unsatisfiable(size)
        return ByteRange(max(size - suffix, 0), size, size)
    start = number(first)
    stop = size if last == "" else min(number(last) + 1, size)
    if last != "" and number(last) < start:
        return None  # RFC 9110: an invalid range set is ignored
    if start >= size:
        return Unsatisfiable(size)
    return ByteRange(start, stop, size)


def past_largest(digits: str) -> bool:
    significant = digits.lstrip("0")
    return len(significant) > len(str(LARGEST)) or (significant != "" and int(significant) > LARGEST)


def number(digits: str) -> int:
    """Leading zeros do not count towards Python's limit on the digits an int is read from."""
    return int(digits.lstrip("0") or "0")
