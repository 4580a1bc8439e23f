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
HANGING_REFERENCES = [
    (
        "Alice Author and Bob Writer. 2020. A study of synthetic documents. In Proceedings",
        "of the Conference.",
    ),
    ("Carol Scholar. 2021. Parsing two columns without tears. Journal of Layout, pages", "1-10."),
    ("Dan Reader and Eve Editor. 2019. Hyphens, ligatures and other things. In Workshop", "on Text."),
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


def write_paper(path: Path, references: str = "labelled") -> Path:
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
    entries = LABELLED_REFERENCES if references == "labelled" else HANGING_REFERENCES
    indent = 16 if references == "labelled" else 12
    for first, second in entries:
        y = _lines(page, 72, y, [first])
        if second:
            y = _lines(page, 72 + indent, y, [second])
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
