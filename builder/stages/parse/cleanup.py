"""Text cleanup shared by every line of a page: ligatures and compatibility characters, control
characters and glyphs without a Unicode mapping; and the pattern that finds a raw quote in cleaned text.
All per-character work goes through `str.translate` and regular expressions."""

from __future__ import annotations

import re

from builder.stages.parse.glyphs import ADOBE_PIECES

# Ligatures and compatibility characters that split words for search. NFKC would also rewrite math
# (superscripts, script letters), so only these are mapped.
_CHAR_MAP = str.maketrans(
    {
        "\ufb00": "ff",
        "\ufb01": "fi",
        "\ufb02": "fl",
        "\ufb03": "ffi",
        "\ufb04": "ffl",
        "\ufb05": "st",
        "\ufb06": "st",
        "\u0132": "IJ",
        "\u0133": "ij",
        "\u00ad": None,  # soft hyphen
        "\u200b": None,
        "\u200c": None,
        "\u200d": None,
        "\u2060": None,
        "\ufeff": None,
        "\u00a0": " ",
        "\u2002": " ",
        "\u2003": " ",
        "\u2004": " ",
        "\u2005": " ",
        "\u2006": " ",
        "\u2007": " ",
        "\u2008": " ",
        "\u2009": " ",
        "\u200a": " ",
        "\u202f": " ",
        "\u205f": " ",
        "\u3000": " ",
        "\u2010": "-",
        "\u2011": "-",
        "\t": " ",
        "\r": " ",
        "\n": " ",
        **{chr(code): piece for code, piece in ADOBE_PIECES.items()},
    }
)
PIECES = str.maketrans({chr(code): piece for code, piece in ADOBE_PIECES.items()})
_SPACES = re.compile(r" {2,}")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
WHITESPACE = re.compile(r"\s+")
# Glyphs without a Unicode mapping: U+FFFD, private use, control characters, pdfminer-style (cid:NN).
JUNK = re.compile(r"[\ufffd\ue000-\uf8ff\x00-\x08\x0b\x0c\x0e-\x1f]|\(cid:\d+\)")
# What is left of a glyph its font does not map to Unicode once `glyphs` has mapped what the font names
# (TeX's big delimiters and sums, delimiter pieces): subset fonts with bare codes, bitmap Type 3 fonts.
# Left in, they show in snippets ("\ufffdQKT") and split words in the index; nothing a reader could type,
# so they are dropped from the text and counted.
UNMAPPED = re.compile(r"[\ufffd\ue000-\uf8ff]")
_QUOTE_BREAK = re.compile(r"((?<=[^\W\d_])- (?=[^\W\d_])|\s+)")


def clean_line(text: str) -> str:
    text = UNMAPPED.sub("", _CONTROL.sub("", text.translate(_CHAR_MAP)))
    return _SPACES.sub(" ", text).strip()


def mostly_junk(raw: str) -> bool:
    if not JUNK.search(raw):
        return False
    junk = sum(len(match) for match in JUNK.findall(raw))
    return junk >= 0.5 * visible_length(raw)


def visible_length(text: str) -> int:
    return len(WHITESPACE.sub("", text))


def quote_pattern(quote: str) -> re.Pattern[str]:
    """A pattern that finds a quote taken from raw PyMuPDF text (or a PDF viewer) in the cleaned text.

    The quote may carry ligatures and "dur- ing" line-break hyphens; the cleaned text may have joined
    the word or kept a compound's hyphen, and its whitespace may differ.
    """
    pieces = _QUOTE_BREAK.split(clean_line(quote))
    joined = "".join(
        re.escape(piece) if index % 2 == 0 else ("-?" if piece.startswith("-") else r"\s*")
        for index, piece in enumerate(pieces)
    )
    return re.compile(joined)
