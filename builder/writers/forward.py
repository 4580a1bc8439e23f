"""The forward file and its index (`readingroom_core.formats.forward`), from each document's held terms as
the postings writer collects them (`writers/postings.py`)."""

from __future__ import annotations

import hashlib
from array import array

from readingroom_core.formats.forward import FORWARD_SHA_BYTES
from readingroom_core.formats.postings import deflated, varint
from readingroom_core.formats.versioned import little_endian


def forward_files(held: list[list[tuple[int, int]]], group: int) -> tuple[bytes, bytes]:
    """The forward file (per document its held terms' rank gaps and frequencies, as varints, deflated a
    group at a time) and its index (each group's start, the end, each group's sha256 prefix)."""
    data, starts, shas = bytearray(), array("I"), []
    for first in range(0, len(held), group):
        values = bytearray()
        for pairs in held[first : first + group]:
            values += varint(len(pairs))
            previous = 0
            for rank, frequency in pairs:
                values += varint(rank - previous) + varint(frequency)
                previous = rank
        packed = deflated(bytes(values))
        starts.append(len(data))
        shas.append(hashlib.sha256(packed).digest()[:FORWARD_SHA_BYTES])
        data += packed
    starts.append(len(data))
    return bytes(data), little_endian(starts) + b"".join(shas)
