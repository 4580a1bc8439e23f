"""Real PDFs written with PyMuPDF, shaped like arXiv papers, for the parse tests.

Every feature the parser must handle is put on the page the way LaTeX would put it: positioned lines,
a rotated arXiv stamp, running header and footer, two columns, a bigger bold font for headings.
"""

from __future__ import annotations

from pathlib import Path

import pymupdf

PAGE_WIDTH, PAGE_HEIGHT = 612, 792
HEADER = "Synthetic Reading Room Test Paper"
STAMP = "arXiv:2401.00001v2  [cs.CL]  1 Jan 2024"
TITLE = "A Synthetic Study of Parsing"
LINE_PITCH = 12  # 10 pt body text

INTRO_LINES = [
    "Our model reads papers carefully and the loss went down dur-",
    "ing training, while the GPT-",
    "3 baseline stayed flat on the same data.",
]
LIGATURE_LINE = "An e\ufb03cient \ufb01ne-tuning \ufb02ow uses o\ufb00-the-shelf parts."
LEFT_COLUMN = [f"Left column sentence {n} explains the method." for n in range(1, 9)]
RIGHT_COLUMN = [f"Right column sentence {n} reports the results." for n in range(1, 9)]
WIDE_CAPTION = "Figure 1: A full-width caption that spans both columns of the page above the text."
WIDE_FOOTER = "Table 1: A full-width table note below both columns of the page."
LABELLED_REFERENCES = [
    (
        "[1] Alice Author and Bob Writer. A study of synthetic documents. In Proceedings of the",
        "Conference, 2020.",
    ),
    ("[2] Carol Scholar. Parsing two columns without tears. Journal of Layout, 2021.", ""),
    ("[3] Dan Reader and Eve Editor. Hyphens, ligatures and other things. In Workshop on", "Text, 2019."),
]
APPENDIX_TEXT = "The appendix holds extra results that must stay searchable after the references."
GARBLED = "\ue000\ue001\ue002\ue003 \ue004\ue005\ue006 \ue007\ue008\ue009\ue00a\ue00b"

# Page of each feature in `write_paper`'s output (1-based).
PAGE_INTRO, PAGE_COLUMNS, PAGE_EMPTY, PAGE_REFERENCES, PAGE_GARBLED = 1, 2, 3, 4, 5


def _lines(page: pymupdf.Page, x: float, y: float, lines: list[str], size: float = 10, **kw) -> float:
    """Writes lines downwards from baseline y; returns the next free baseline."""
    for line in lines:
        page.insert_text((x, y), line, fontsize=size, **kw)
        y += size * 1.2
    return y


def _heading(page: pymupdf.Page, x: float, y: float, text: str) -> float:
    page.insert_text((x, y), text, fontsize=12, fontname="hebo")  # Helvetica-Bold
    return y + 20


def _embed_ligature_font(page: pymupdf.Page) -> str:
    """MuPDF's built-in Times, embedded with a ToUnicode map: its U+FB01..U+FB04 glyphs extract as such.

    (A plain base-14 font would write them through WinAnsi, which has no ligatures.)
    """
    page.insert_font(fontname="ligatures", fontbuffer=pymupdf.Font("tiro").buffer)
    return "ligatures"


PAGE_NUMBER_STYLES = {1: "1", 2: "- 2 -", 4: "Page 4 of 5", 5: "5"}


def _margins(page: pymupdf.Page, number: int) -> None:
    page.insert_text((72, 40), HEADER, fontsize=8)
    page.insert_text((PAGE_WIDTH / 2 - 20, 760), PAGE_NUMBER_STYLES[number], fontsize=9)


def write_paper(path: Path) -> Path:
    """A five-page paper: intro, two-column page, empty page, references + appendix, garbled page."""
    doc = pymupdf.open()

    page = doc.new_page(width=PAGE_WIDTH, height=PAGE_HEIGHT)
    _margins(page, 1)
    page.insert_text((20, 600), STAMP, fontsize=20, rotate=90)  # the margin stamp runs bottom to top
    page.insert_text((160, 100), TITLE, fontsize=18, fontname="hebo")
    y = _heading(page, 72, 140, "Abstract")
    y = _lines(page, 72, y, ["We parse synthetic papers and check every feature of the cleaned text."])
    y = _heading(page, 72, y + 14, "1 Introduction")
    y = _lines(page, 72, y, INTRO_LINES)
    _lines(page, 72, y + 8, [LIGATURE_LINE], fontname=_embed_ligature_font(page))

    page = doc.new_page(width=PAGE_WIDTH, height=PAGE_HEIGHT)
    _margins(page, 2)
    _lines(page, 72, 90, [WIDE_CAPTION])
    y = _heading(page, 72, 130, "2 Method")
    y = _lines(page, 72, y, LEFT_COLUMN[:4])
    y = _heading(page, 72, y + 10, "2.1 Training")
    _lines(page, 72, y, LEFT_COLUMN[4:])
    _lines(page, 320, 130, RIGHT_COLUMN)
    _lines(page, 72, 400, [WIDE_FOOTER])

    doc.new_page(width=PAGE_WIDTH, height=PAGE_HEIGHT)  # empty: no header, no number, no text

    page = doc.new_page(width=PAGE_WIDTH, height=PAGE_HEIGHT)
    _margins(page, 4)
    y = _heading(page, 72, 90, "References")
    for first, second in LABELLED_REFERENCES:
        y = _lines(page, 72, y, [first])
        if second:
            y = _lines(page, 72 + 16, y, [second])
        y += 4
    y = _heading(page, 72, y + 16, "A Appendix Details")
    _lines(page, 72, y, [APPENDIX_TEXT])

    page = doc.new_page(width=PAGE_WIDTH, height=PAGE_HEIGHT)
    _margins(page, 5)
    # private-use code points the font has no glyphs for: they extract as control characters
    _lines(page, 72, 100, [GARBLED] * 20, fontname=_embed_ligature_font(page))

    doc.save(path)
    doc.close()
    return path


def write_encrypted(path: Path) -> Path:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "Secret text behind a password.")
    doc.save(path, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="reader", owner_pw="owner")
    doc.close()
    return path


def write_truncated(path: Path) -> Path:
    """The first half of a real paper, as an interrupted download leaves it."""
    whole = write_paper(path.with_name(path.stem + "-whole.pdf")).read_bytes()
    path.write_bytes(whole[: len(whole) // 2])
    return path


def write_zero_pages(path: Path) -> Path:
    """A syntactically valid PDF whose page tree is empty (PyMuPDF refuses to save one)."""
    path.write_bytes(
        b"%PDF-1.4\n"
        b"1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n"
        b"2 0 obj << /Type /Pages /Kids [] /Count 0 >> endobj\n"
        b"trailer << /Root 1 0 R >>\n%%EOF\n"
    )
    return path


def write_not_a_pdf(path: Path) -> Path:
    path.write_bytes(b"<html>503 Service Unavailable</html>\n%%EOF\n")
    return path


# --- glyphs without a Unicode mapping --------------------------------------------------------------

# What a TeX display formula puts on the page through its math extension font: glyph names the Adobe
# Glyph List does not know, in a Type 1 program embedded without a ToUnicode map (as dvips and pdfTeX
# write CMEX10). Codes as in TeX's OMX layout.
TEX_GLYPHS = {18: "parenleftbigg", 19: "parenrightbigg", 88: "summationdisplay", 100: "nosuchglyph"}
FORMULA_BEFORE, FORMULA_INSIDE, FORMULA_AFTER = "Attention = softmax", "QKT", "V over all keys"


def _charstring(width: int) -> bytes:
    """`0 width hsbw endchar`: an empty glyph that still advances, encrypted as Type 1 charstrings are."""
    high, low = divmod(width - 108, 256)
    plain = bytes([139, 247 + high, low, 13, 14])
    return _type1_encrypt(bytes(4) + plain, 4330)


def _type1_encrypt(data: bytes, key: int) -> bytes:
    out = bytearray()
    for byte in data:
        cipher = byte ^ (key >> 8)
        key = ((cipher + key) * 52845 + 22719) & 0xFFFF
        out.append(cipher)
    return bytes(out)


def type1_font(name: str, glyphs: dict[int, str]) -> tuple[bytes, int, int]:
    """A minimal Type 1 font program whose built-in encoding names `glyphs` (code -> glyph name), and
    the lengths of its clear and encrypted parts (the /Length1 and /Length2 of a /FontFile)."""
    encoding = "".join(f"dup {code} /{glyph} put\n" for code, glyph in sorted(glyphs.items()))
    clear = (
        f"%!PS-AdobeFont-1.0: {name} 001.000\n12 dict begin\n/FontName /{name} def\n/PaintType 0 def\n"
        "/FontType 1 def\n/FontMatrix [0.001 0 0 0.001 0 0] readonly def\n/Encoding 256 array\n"
        f"0 1 255 {{1 index exch /.notdef put}} for\n{encoding}readonly def\n"
        "/FontBBox {0 -1000 1000 1000} readonly def\ncurrentdict end\ncurrentfile eexec\n"
    ).encode("ascii")
    strings = b"".join(
        b"/%s %d RD " % (glyph.encode(), len(_charstring(600))) + _charstring(600) + b" ND\n"
        for glyph in [".notdef", *glyphs.values()]
    )
    char_strings = b"2 index /CharStrings %d dict dup begin\n" % (len(glyphs) + 1)
    private = (
        b"dup /Private 8 dict dup begin\n/RD{string currentfile exch readstring pop}executeonly def\n"
        b"/ND{noaccess def}executeonly def\n/NP{noaccess put}executeonly def\n/MinFeature{16 16}def\n"
        b"/password 5839 def\n/BlueValues [] def\n/Subrs 0 array ND\n"
        + char_strings
        + strings
        + b"end\nend\nreadonly put\nnoaccess put\ndup/FontName get exch definefont pop\n"
        b"mark currentfile closefile\n"
    )
    encrypted = _type1_encrypt(bytes(4) + private, 55665)
    return clear + encrypted, len(clear), len(encrypted)


def write_tex_formula(path: Path, font_name: str = "TestTeXMath", glyphs: dict | None = None) -> Path:
    """One page: a display formula whose big parentheses and sum come from an embedded Type 1 font
    with no ToUnicode map, "Attention = softmax (QKT) ∑ V over all keys", plus one glyph named
    `nosuchglyph` that nothing can map."""
    glyphs = TEX_GLYPHS if glyphs is None else glyphs
    doc = pymupdf.open()
    page = doc.new_page(width=PAGE_WIDTH, height=PAGE_HEIGHT)

    def new_object(text: str, stream: bytes | None = None) -> int:
        xref = doc.get_new_xref()
        doc.update_object(xref, text)
        if stream is not None:
            doc.update_stream(xref, stream, compress=False)
        return xref

    program, clear, encrypted = type1_font(font_name, glyphs)
    font_file = new_object(f"<< /Length1 {clear} /Length2 {encrypted} /Length3 0 >>", program)
    descriptor = new_object(
        f"<< /Type /FontDescriptor /FontName /ABCDEF+{font_name} /Flags 4 /FontBBox [0 -1000 1000 1000] "
        f"/ItalicAngle 0 /Ascent 800 /Descent -200 /CapHeight 700 /StemV 50 /FontFile {font_file} 0 R >>"
    )
    math = new_object(
        f"<< /Type /Font /Subtype /Type1 /BaseFont /ABCDEF+{font_name} /FontDescriptor {descriptor} 0 R >>"
    )
    text = new_object("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    shown = (
        f"BT /T 10 Tf 72 700 Td ({FORMULA_BEFORE} ) Tj /M 10 Tf <12> Tj /T 10 Tf ({FORMULA_INSIDE}) Tj "
        f"/M 10 Tf <13> Tj <58> Tj <64> Tj /T 10 Tf ( {FORMULA_AFTER}) Tj ET"
    )
    contents = new_object("<< >>", shown.encode("ascii"))
    doc.xref_set_key(page.xref, "Resources", f"<< /Font << /T {text} 0 R /M {math} 0 R >> >>")
    doc.xref_set_key(page.xref, "Contents", f"{contents} 0 R")
    doc.save(path)
    doc.close()
    return path


def write_inflating(path: Path, repeats: int = 200_000) -> Path:
    """A one-page PDF of ~30 KB whose content stream inflates ~300:1 into `repeats` text operators at one
    spot: a few seconds and hundreds of MB of parsing (the shape of issue 25's stalling PDF)."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), "A page whose text never ends.", fontname="helv")
    xref = page.get_contents()[0]
    operators = b"".join(
        b"BT /helv 9 Tf %d 700 Td (word1) Tj ET\n" % (50 + (i % 2) * 300) for i in range(repeats)
    )
    doc.update_stream(xref, doc.xref_stream(xref) + operators, compress=True)
    path.write_bytes(doc.tobytes(deflate=True))
    doc.close()
    return path


# --- a title page as arXiv serves it: stamp, title, author block, abstract -------------------------


def _wrap(text: str, width: int) -> list[str]:
    lines: list[str] = []
    for word in text.split():
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


def write_titled_paper(
    path: Path,
    title: str,
    authors: list[str],
    stamp: str | None,
    abstract: str = "We study a question with care and report what we found on every page of this paper.",
    pages: int = 3,
) -> Path:
    """A paper whose page 1 prints what a reader sees on arXiv: the margin `stamp` (None: no stamp),
    the `title` in a large bold font over as many lines as it needs, the authors in one row with
    footnote and affiliation markers after each name, an affiliation line and e-mail addresses, the
    abstract, then body text over `pages` pages."""
    doc = pymupdf.open()
    page = doc.new_page(width=PAGE_WIDTH, height=PAGE_HEIGHT)
    if stamp is not None:
        page.insert_text((20, 560), stamp, fontsize=20, rotate=90)
    y = 100.0
    for line in _wrap(title, 46):
        width = pymupdf.get_text_length(line, fontname="hebo", fontsize=17)
        page.insert_text(((PAGE_WIDTH - width) / 2, y), line, fontsize=17, fontname="hebo")
        y += 21
    x, y = 90.0, y + 24
    for number, name in enumerate(authors, start=1):
        width = pymupdf.get_text_length(name, fontname="hebo", fontsize=10)
        if x + width > PAGE_WIDTH - 90:
            x, y = 90.0, y + 14
        page.insert_text((x, y), name, fontsize=10, fontname="hebo")
        page.insert_text(
            (x + width + 1, y - 4), f"{1 + number % 2}*" if number == 1 else f"{1 + number % 2}", fontsize=7
        )
        x += width + 24
    y = _lines(page, 90, y + 16, ["1 University of Testing, Testville", "2 Example Research Lab"], size=10)
    y = _lines(page, 90, y, ["{first.last}@testing.example"], size=9, fontname="cour")
    y = _heading(page, 280, y + 20, "Abstract")
    y = _lines(page, 100, y, _wrap(abstract, 80), size=10)
    y = _heading(page, 72, y + 16, "1 Introduction")
    body = [
        f"Sentence {n} of this paper explains one more step of the method we describe." for n in range(40)
    ]
    y = _lines(page, 72, y, body[: int((700 - y) // 12)])
    for number in range(2, pages + 1):
        page = doc.new_page(width=PAGE_WIDTH, height=PAGE_HEIGHT)
        _heading(page, 72, 80, f"{number} Section {number}")
        _lines(
            page,
            72,
            110,
            [f"Page {number}, line {n}: the results hold on every dataset we tried." for n in range(45)],
        )
    doc.save(path)
    doc.close()
    return path


def write_unreadable_pages(path: Path, pages: int = 2) -> Path:
    """A PDF that says it has `pages` pages, none of which MuPDF can load: its page tree's only node
    lists itself as its children (MuPDF: "cycle in page tree"), as a damaged or hostile file may. (With
    more than 2 such children MuPDF refuses to count the pages at all.)"""
    path.write_bytes(
        b"%PDF-1.4\n"
        b"1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n"
        b"2 0 obj << /Type /Pages /Kids ["
        + b"2 0 R " * pages
        + b"] /Count %d >> endobj\n" % pages
        + b"trailer << /Root 1 0 R >>\n%%EOF\n"
    )
    return path
