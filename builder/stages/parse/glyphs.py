"""Glyphs a PDF does not map to Unicode, given the character their font says they are.

TeX's math fonts name their glyphs in their own encoding tables ("summationdisplay", "parenleftbigg",
"llbracket"), names the Adobe Glyph List does not know; without a ToUnicode map in the PDF, MuPDF then
gives U+FFFD ("\ufffdQKT" for a big "(QK^T" in Longformer). The name is still there: in the font's
/Differences or in the embedded Type 1 program's own encoding, and pymupdf hands out the glyph's
character code on request (TEXT_USE_CID_FOR_UNKNOWN_UNICODE). Code -> name -> Unicode, and for the
extension font's fixed layout (OMX) code -> name even when the name cannot be read. Glyphs that are
pieces of drawings (circle quarters, horizontal brace pieces, icons) map to "" and are dropped.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator

import pymupdf

# TeX's math extension layout (cmex10, lmex, txexs, pxexs share codes 0-127), code order.
OMX_NAMES = (
    "parenleftbig parenrightbig bracketleftbig bracketrightbig floorleftbig floorrightbig ceilingleftbig "
    "ceilingrightbig braceleftbig bracerightbig angbracketleftbig angbracketrightbig vextendsingle "
    "vextenddouble slashbig backslashbig parenleftBig parenrightBig parenleftbigg parenrightbigg "
    "bracketleftbigg bracketrightbigg floorleftbigg floorrightbigg ceilingleftbigg ceilingrightbigg "
    "braceleftbigg bracerightbigg angbracketleftbigg angbracketrightbigg slashbigg backslashbigg "
    "parenleftBigg parenrightBigg bracketleftBigg bracketrightBigg floorleftBigg floorrightBigg "
    "ceilingleftBigg ceilingrightBigg braceleftBigg bracerightBigg angbracketleftBigg angbracketrightBigg "
    "slashBigg backslashBigg slashBig backslashBig parenlefttp parenrighttp bracketlefttp bracketrighttp "
    "bracketleftbt bracketrightbt bracketleftex bracketrightex bracelefttp bracerighttp braceleftbt "
    "bracerightbt braceleftmid bracerightmid braceex arrowvertex parenleftbt parenrightbt parenleftex "
    "parenrightex angbracketleftBig angbracketrightBig unionsqtext unionsqdisplay contintegraltext "
    "contintegraldisplay circledottext circledotdisplay circleplustext circleplusdisplay "
    "circlemultiplytext circlemultiplydisplay summationtext producttext integraltext uniontext "
    "intersectiontext unionmultitext logicalandtext logicalortext summationdisplay productdisplay "
    "integraldisplay uniondisplay intersectiondisplay unionmultidisplay logicalanddisplay logicalordisplay "
    "coproducttext coproductdisplay hatwide hatwider hatwidest tildewide tildewider tildewidest "
    "bracketleftBig bracketrightBig floorleftBig floorrightBig ceilingleftBig ceilingrightBig "
    "braceleftBig bracerightBig radicalbig radicalBig radicalbigg radicalBigg radicalbt radicalvertex "
    "radicaltp arrowvertexdbl arrowtp arrowbt bracehtipdownleft bracehtipdownright bracehtipupleft "
    "bracehtipupright arrowdbltp arrowdblbt"
).split()
_OMX_FONT = re.compile(r"cmex|mathextension|lmex|^[tp]xexs?$", re.IGNORECASE)
_SIZES = re.compile(r"(?:big|Big|bigg|Bigg|text|display|wide|wider|widest)$")

# The character each size of a delimiter or operator stands for (the size suffix stripped).
_TEX_BASES = {
    "parenleft": "(",
    "parenright": ")",
    "bracketleft": "[",
    "bracketright": "]",
    "floorleft": "\u230a",
    "floorright": "\u230b",
    "ceilingleft": "\u2308",
    "ceilingright": "\u2309",
    "braceleft": "{",
    "braceright": "}",
    "angbracketleft": "\u27e8",
    "angbracketright": "\u27e9",
    "slash": "/",
    "backslash": "\\",
    "unionsq": "\u2294",
    "contintegral": "\u222e",
    "circledot": "\u2a00",
    "circleplus": "\u2a01",
    "circlemultiply": "\u2a02",
    "summation": "\u2211",
    "product": "\u220f",
    "integral": "\u222b",
    "union": "\u22c3",
    "intersection": "\u22c2",
    "unionmulti": "\u2a04",
    "logicaland": "\u22c0",
    "logicalor": "\u22c1",
    "coproduct": "\u2210",
    "hat": "\u02c6",
    "tilde": "\u02dc",
    "radical": "\u221a",
}
# Whole names: delimiter pieces (Unicode's own bracket pieces, U+239B-U+23AD), other TeX fonts' names,
# and drawing pieces that carry no text ("").
_TEX_NAMES = {
    "vextendsingle": "|",
    "vextenddouble": "\u2016",
    "parenlefttp": "\u239b",
    "parenleftex": "\u239c",
    "parenleftbt": "\u239d",
    "parenrighttp": "\u239e",
    "parenrightex": "\u239f",
    "parenrightbt": "\u23a0",
    "bracketlefttp": "\u23a1",
    "bracketleftex": "\u23a2",
    "bracketleftbt": "\u23a3",
    "bracketrighttp": "\u23a4",
    "bracketrightex": "\u23a5",
    "bracketrightbt": "\u23a6",
    "bracelefttp": "\u23a7",
    "braceleftmid": "\u23a8",
    "braceleftbt": "\u23a9",
    "braceex": "\u23aa",
    "bracerighttp": "\u23ab",
    "bracerightmid": "\u23ac",
    "bracerightbt": "\u23ad",
    "arrowvertex": "\u23d0",
    "arrowvertexdbl": "\u2016",
    "arrowtp": "\u2191",
    "arrowbt": "\u2193",
    "arrowdbltp": "\u21d1",
    "arrowdblbt": "\u21d3",
    "radicalbt": "\u23b7",
    "radicalvertex": "",
    "radicaltp": "",
    "bracehtipdownleft": "",
    "bracehtipdownright": "",
    "bracehtipupleft": "",
    "bracehtipupright": "",
    "bracehext": "",
    "barex": "",
    "mapsto": "",  # cmsy's bar that \mapsto sets before an arrow: the arrow carries the meaning
    "llbracket": "\u27e6",  # stmaryrd
    "rrbracket": "\u27e7",
    "Circle": "\u25cb",  # wasysym
    "hexagon": "\u2b21",
}
_PICTURE_FONT = re.compile(r"^(?:lcircle|lcirclew|line|linew)\d*$|fontawesome", re.IGNORECASE)

# Adobe's private-use code points for delimiter pieces (what AGL gives for "parenlefttp" and what some
# ToUnicode maps say): the Unicode pieces instead, so they are text and not junk.
ADOBE_PIECES = {
    0xF8E6: "\u23d0",
    0xF8E7: "\u23af",
    0xF8EB: "\u239b",
    0xF8EC: "\u239c",
    0xF8ED: "\u239d",
    0xF8EE: "\u23a1",
    0xF8EF: "\u23a2",
    0xF8F0: "\u23a3",
    0xF8F1: "\u23a7",
    0xF8F2: "\u23a8",
    0xF8F3: "\u23a9",
    0xF8F4: "\u23aa",
    0xF8F5: "\u23ae",
    0xF8F6: "\u239e",
    0xF8F7: "\u239f",
    0xF8F8: "\u23a0",
    0xF8F9: "\u23a4",
    0xF8FA: "\u23a5",
    0xF8FB: "\u23a6",
    0xF8FC: "\u23ab",
    0xF8FD: "\u23ac",
    0xF8FE: "\u23ad",
}
_PRIVATE_USE = re.compile("[\ue000-\uf8ff]")
_TYPE1_ENCODING = re.compile(rb"dup\s+(\d+)\s*/(\S+)\s+put")
_DIFFERENCES = re.compile(r"(\d+)|/([^\s/\[\]]+)")


def unicode_of(name: str) -> str | None:
    """The text a glyph name stands for ("" for a drawing piece), or None when the name is unknown."""
    base = name.split(".")[0]  # "summationdisplay.1": a variant of the same glyph
    if base in _TEX_NAMES:
        return _TEX_NAMES[base]
    sized = _SIZES.sub("", base)
    if sized != base and sized in _TEX_BASES:
        return _TEX_BASES[sized]
    code = pymupdf.mupdf.fz_unicode_from_glyph_name(base)
    if code in (0, 0xFFFD):
        return None
    text = ADOBE_PIECES.get(code, chr(code))
    return None if _PRIVATE_USE.match(text) else text


def font_names(doc: pymupdf.Document, xref: int) -> dict[int, str]:
    """Glyph names by character code: the embedded Type 1 program's encoding, then /Differences."""
    names: dict[int, str] = {}
    try:
        _, extension, _, program = doc.extract_font(xref)
    except Exception:  # a damaged font stream: no names from it
        extension, program = "", b""
    if extension in ("pfa", "pfb") and program:
        clear = program[: program.find(b"eexec")] if b"eexec" in program else program[:65536]
        names.update((int(code), name.decode("latin-1")) for code, name in _TYPE1_ENCODING.findall(clear))
    kind, differences = doc.xref_get_key(xref, "Encoding/Differences")
    if kind == "array":
        code = 0
        for number, name in _DIFFERENCES.findall(differences):
            if number:
                code = int(number)
            else:
                names[code] = name
                code += 1
    return names


class FontGlyphs:
    """Per document: each font's codes that map to text, read once per font and only when needed."""

    def __init__(self, doc: pymupdf.Document):
        self._doc = doc
        self._by_xref: dict[int, dict[int, str] | None] = {}

    def text_of(self, page_fonts: dict[str, int], span_font: str, code: int | None) -> str | None:
        """What glyph `code` of a span's font stands for ("" for a drawing piece), None if unknown.

        `page_fonts` maps the page's font names (no subset prefix) to their xrefs; pymupdf cuts long
        names short ("LMMathExtension10-Regula"), so a prefix names the font too.
        """
        name = (
            span_font
            if span_font in page_fonts
            else next((n for n in page_fonts if n.startswith(span_font)), None)
        )
        if name is None:
            return None
        xref = page_fonts[name]
        if xref not in self._by_xref:
            self._by_xref[xref] = None if _PICTURE_FONT.search(name) else self._table(xref, name)
        table = self._by_xref[xref]
        if table is None:
            return ""  # every glyph of a picture or icon font is a drawing piece
        return None if code is None else table.get(code)

    def _table(self, xref: int, font: str) -> dict[int, str]:
        """The font's own names first; a math extension font's fixed layout where they say nothing."""
        table: dict[int, str] = {}
        if _OMX_FONT.search(font):
            table.update(
                (code, text) for code, name in enumerate(OMX_NAMES) if (text := unicode_of(name)) is not None
            )
        for code, name in font_names(self._doc, xref).items():
            text = unicode_of(name)
            if text is not None:
                table[code] = text
        return table


def map_unmapped(page: pymupdf.Page, plain: dict, flags: int, fonts: FontGlyphs) -> dict:
    """`plain` (the page's "rawdict" under `flags`) as "dict" text, U+FFFD glyphs replaced by what their
    fonts say they are.

    The page is read again with character codes in place of U+FFFD (TEXT_USE_CID_FOR_UNKNOWN_UNICODE);
    the same glyph of the same font sits at the same origin in both readings. A glyph nothing knows
    stays U+FFFD (dropped and counted by the parser).
    """
    unmapped_fonts = {
        span["font"] for span in _spans(plain) if any(c["c"] == "\ufffd" for c in span["chars"])
    }
    coded = page.get_text("rawdict", flags=flags | pymupdf.TEXT_USE_CID_FOR_UNKNOWN_UNICODE)
    codes: dict[tuple[str, float, float], list[int]] = {}
    for span in _spans(coded):
        if span["font"] in unmapped_fonts:
            for char in span["chars"]:
                codes.setdefault(_glyph_key(span["font"], char), []).append(ord(char["c"]))
    page_fonts = {basefont.split("+", 1)[-1]: xref for xref, _, _, basefont, _, _ in page.get_fonts()}
    seen: Counter[tuple[str, float, float]] = Counter()  # a zero-width glyph shares its origin
    for span in _spans(plain):
        chars = span.pop("chars")
        if span["font"] not in unmapped_fonts:
            span["text"] = "".join(char["c"] for char in chars)
            continue
        pieces = []
        for char in chars:
            key = _glyph_key(span["font"], char)
            text, index = char["c"], seen[key]
            seen[key] += 1
            if text == "\ufffd":
                same_place = codes.get(key, ())
                code = same_place[index] if index < len(same_place) else None
                found = fonts.text_of(page_fonts, span["font"], code)
                text = text if found is None else found
            pieces.append(text)
        span["text"] = "".join(pieces)
    return plain


def _spans(data: dict) -> Iterator[dict]:
    for block in data["blocks"]:
        for line in block.get("lines", ()):
            yield from line["spans"]


def _glyph_key(font: str, char: dict) -> tuple[str, float, float]:
    x, y = char["origin"]
    return font, round(x, 2), round(y, 2)
