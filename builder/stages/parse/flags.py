"""Pages whose text cannot be trusted or is missing (garbled glyphs, no text layer), for the build report."""

from __future__ import annotations

import re

from builder.models import PageFlag
from builder.stages.parse.cleanup import JUNK, visible_length
from builder.stages.parse.page import RawPage

_WORDLIKE = re.compile(r"[^\W_]{2,}")
_GARBLED_JUNK_SHARE = 0.3  # unmapped glyphs among visible characters
_GARBLED_WORD_SHARE = 0.3  # below this share of characters in words or numbers; real pages are above 0.44


def page_flag(page: RawPage, page_text: str) -> PageFlag | None:
    if page.error:
        return PageFlag(page.number, "no-text", page.error)
    raw = page.junk_text
    visible = visible_length(raw)
    if visible:
        junk = sum(len(match) for match in JUNK.findall(raw)) / visible
        if junk > _GARBLED_JUNK_SHARE:
            return PageFlag(page.number, "garbled", f"{junk:.0%} of characters are unmapped glyphs")
        wordlike = sum(len(word) for word in _WORDLIKE.findall(raw)) / visible
        if visible >= 200 and wordlike < _GARBLED_WORD_SHARE:
            return PageFlag(page.number, "garbled", f"only {wordlike:.0%} of characters in words or numbers")
    if not page_text:
        return PageFlag(page.number, "no-text", "no extractable text (scanned or figure-only page)")
    return None
