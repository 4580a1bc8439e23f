"""The papers' texts file and its preset dictionary (`readingroom_core.formats.texts`), from the chunks and
page spans the build holds; `readingroom_core.readers.texts` reads them."""

from __future__ import annotations

import hashlib
import re
from array import array
from collections import Counter
from collections.abc import Sequence

from builder.models import Chunk, ParsedPaper
from readingroom_core.formats.texts import (
    DICTIONARY_BYTES,
    GROUP_CHUNKS,
    SHA_DIGITS,
    PageRange,
    PaperText,
    TextChunk,
    TextHead,
    chunk_entry,
    deflated,
)
from readingroom_core.formats.versioned import compact_json

DICTIONARY_SAMPLE_CHARS = (
    8 << 20
)  # the text the preset dictionary's words are counted in, spread over the list
_WORD_RE = re.compile(r" ?[^\W\d_]+[,.]?")


def paper_text(arxiv_id: str, chunks: Sequence[Chunk], parsed: ParsedPaper) -> PaperText:
    """A paper's chunks with their spans, and the span of every page, so a cited page's text can be
    rebuilt from the chunks and a quote checked against exactly that page."""
    return PaperText(
        id=arxiv_id,
        chunks=tuple(TextChunk(c.chunk_id, c.char_start, c.char_end, c.text) for c in chunks),
        pages=tuple(PageRange(p.page, p.start, p.end) for p in parsed.pages),
    )


def preset_dictionary(texts: Sequence[str]) -> bytes:
    """The commonest words of `texts` (with their leading space, and a trailing comma or stop), the
    commonest last (deflate reaches near bytes more cheaply), at most DICTIONARY_BYTES; counted over
    about DICTIONARY_SAMPLE_CHARS of texts taken evenly from the whole list."""
    total = sum(map(len, texts))
    step = max(1, -(-total // DICTIONARY_SAMPLE_CHARS))
    counts: Counter[str] = Counter()
    for text in texts[::step]:
        counts.update(_WORD_RE.findall(text))
    words, size = [], 0
    for word, _ in counts.most_common():
        words.append(word)
        size += len(word.encode("utf-8"))
        if size >= DICTIONARY_BYTES:
            break
    return "".join(reversed(words)).encode("utf-8")[-DICTIONARY_BYTES:]


def texts_file_bytes(
    texts: Sequence[PaperText], dictionary: bytes
) -> tuple[bytes, list[tuple[int, int, str]]]:
    """The texts file, and for each paper (its head's size, its whole size, its head's sha256 prefix)."""
    parts: list[bytes] = []
    located = []
    for text in texts:
        groups = [
            deflated(
                compact_json([chunk_entry(chunk, text.id) for chunk in text.chunks[at : at + GROUP_CHUNKS]]),
                dictionary,
            )
            for at in range(0, len(text.chunks), GROUP_CHUNKS)
        ]
        head = TextHead(
            array("q", [value for chunk in text.chunks for value in (chunk.start, chunk.end)]),
            text.pages,
            tuple((len(group), _sha(group)) for group in groups),
        )
        head_bytes = deflated(compact_json(head.to_json()))
        parts += [head_bytes, *groups]
        located.append((len(head_bytes), len(head_bytes) + sum(map(len, groups)), _sha(head_bytes)))
    return b"".join(parts), located


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:SHA_DIGITS]
