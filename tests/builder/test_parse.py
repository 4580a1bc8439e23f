import pickle
import re
from pathlib import Path

import pymupdf
import pytest
from support import pdfgen

from builder.models import ParsedPaper
from builder.stages.parse import PARSER_VERSION, ParseError, parse_pdf
from builder.stages.parse.cleanup import quote_pattern


@pytest.fixture(scope="module")
def paper_pdf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return pdfgen.write_paper(tmp_path_factory.mktemp("pdf") / "paper.pdf")


@pytest.fixture(scope="module")
def paper(paper_pdf: Path) -> ParsedPaper:
    return parse_pdf(paper_pdf, "2401.00001")


def page_text(paper: ParsedPaper, page: int) -> str:
    span = paper.pages[page - 1]
    return paper.text[span.start : span.end]


def test_parser_version_is_a_nonempty_string():
    assert isinstance(PARSER_VERSION, str) and PARSER_VERSION


def test_page_count_and_one_span_per_page(paper):
    assert paper.arxiv_id == "2401.00001"
    assert paper.page_count == 5
    assert [span.page for span in paper.pages] == [1, 2, 3, 4, 5]


def test_page_map_is_exact(paper):
    """Spans tile the text with the "\\n\\n" page joints and nothing else; page_at agrees everywhere."""
    pieces = [page_text(paper, span.page) for span in paper.pages]
    assert paper.text == "\n\n".join(pieces)
    for previous, span in zip(paper.pages, paper.pages[1:], strict=False):
        assert span.start == previous.end + 2
    for span in paper.pages:
        for offset in range(span.start, span.end):
            assert paper.page_at(offset) == span.page
    assert paper.page_at(paper.text.index(pdfgen.TITLE)) == pdfgen.PAGE_INTRO
    assert paper.page_at(paper.text.index("Right column sentence 8")) == pdfgen.PAGE_COLUMNS
    assert paper.page_at(paper.text.index(pdfgen.APPENDIX_TEXT)) == pdfgen.PAGE_REFERENCES


def test_no_paragraph_break_runs_or_stray_spaces(paper):
    assert "  " not in paper.text
    assert not re.search(r" \n|\n | $", paper.text, re.MULTILINE)
    for span in paper.pages:
        text = page_text(paper, span.page)
        assert text == text.strip()
        assert "\n\n\n" not in text
        assert all("\n" not in paragraph for paragraph in text.split("\n\n"))


def test_arxiv_stamp_is_removed(paper, paper_pdf):
    raw = pymupdf.open(paper_pdf)[0].get_text()
    assert "arXiv:2401.00001v2" in raw  # the generator really wrote it
    assert "arXiv:" not in paper.text
    assert page_text(paper, 1).startswith(pdfgen.TITLE)


def test_running_header_and_page_numbers_are_removed(paper):
    assert pdfgen.HEADER not in paper.text
    assert "Page 4 of 5" not in paper.text and "- 2 -" not in paper.text
    for span in paper.pages:
        text = page_text(paper, span.page)
        for paragraph in text.split("\n\n") if text else []:
            assert not paragraph.isdigit(), f"page number left on page {span.page}"


def test_line_break_hyphenation_is_joined_but_real_hyphens_stay(paper):
    intro = page_text(paper, pdfgen.PAGE_INTRO)
    assert "went down during training" in intro
    assert "dur-" not in intro
    assert "the GPT-3 baseline" in intro


def test_ligatures_are_normalised(paper, paper_pdf):
    raw = pymupdf.open(paper_pdf)[0].get_text()
    assert "\ufb03" in raw and "\ufb01" in raw  # extraction really yields the ligature characters
    intro = page_text(paper, pdfgen.PAGE_INTRO)
    assert "An efficient fine-tuning flow uses off-the-shelf parts." in intro
    assert not re.search("[\ufb00-\ufb06]", paper.text)


def test_two_columns_are_read_left_then_right_between_full_width_lines(paper):
    text = page_text(paper, pdfgen.PAGE_COLUMNS)
    order = [text.index(pdfgen.WIDE_CAPTION)]
    order += [text.index(sentence) for sentence in pdfgen.LEFT_COLUMN + pdfgen.RIGHT_COLUMN]
    order.append(text.index(pdfgen.WIDE_FOOTER))
    assert order == sorted(order)


def test_paragraphs_follow_blocks_and_headings(paper):
    paragraphs = page_text(paper, pdfgen.PAGE_COLUMNS).split("\n\n")
    assert paragraphs[1] == "2 Method"
    assert paragraphs[2] == " ".join(pdfgen.LEFT_COLUMN[:4])
    assert paragraphs[3] == "2.1 Training"


def test_sections_with_levels_and_pages(paper):
    found = [(s.title, s.level, s.page) for s in paper.sections]
    assert found == [
        ("Abstract", 1, 1),
        ("1 Introduction", 1, 1),
        ("2 Method", 1, 2),
        ("2.1 Training", 2, 2),
        ("References", 1, 4),
        ("A Appendix Details", 1, 4),
    ]
    for section in paper.sections:
        assert paper.text[section.start :].startswith(section.title)
    assert paper.section_at(paper.text.index("Left column sentence 6")) == "2.1 Training"


def test_title_and_body_lines_are_not_sections(paper):
    titles = {s.title for s in paper.sections}
    assert pdfgen.TITLE not in titles
    assert not any(title.startswith(("Left", "Right", "Figure", "Table")) for title in titles)


def test_references_span_excludes_bibliography_but_keeps_appendix(paper):
    start, end = paper.references_span
    bibliography = paper.text[start:end]
    assert bibliography.startswith("References")
    assert "Carol Scholar" in bibliography
    assert pdfgen.APPENDIX_TEXT not in bibliography
    assert paper.text.index(pdfgen.APPENDIX_TEXT) > end
    assert paper.page_at(start) == pdfgen.PAGE_REFERENCES


def test_empty_page_gets_empty_span_and_no_text_flag(paper):
    span = paper.pages[pdfgen.PAGE_EMPTY - 1]
    assert span.start == span.end
    assert [f.kind for f in paper.flags if f.page == pdfgen.PAGE_EMPTY] == ["no-text"]


def test_garbled_page_is_flagged_and_its_junk_dropped(paper, paper_pdf):
    raw = pymupdf.open(paper_pdf)[pdfgen.PAGE_GARBLED - 1].get_text()
    assert raw.count("\x00") > 100  # the generator really wrote unmapped glyphs
    assert [f.kind for f in paper.flags if f.page == pdfgen.PAGE_GARBLED] == ["garbled"]
    assert page_text(paper, pdfgen.PAGE_GARBLED) == ""
    assert not re.search("[\x00-\x08\ue000-\uf8ff\ufffd]", paper.text)


def test_tex_math_glyphs_without_unicode_take_the_names_their_font_gives(tmp_path):
    """Issue 12, item 5: a display formula's big parentheses and sum come from an embedded Type 1 font
    with no ToUnicode map; pymupdf gives U+FFFD for them, the font's own encoding names them."""
    pdf = pdfgen.write_tex_formula(tmp_path / "formula.pdf")
    raw = "".join(
        span["text"]
        for block in pymupdf.open(pdf)[0].get_text("dict", flags=pymupdf.TEXT_MEDIABOX_CLIP)["blocks"]
        for line in block["lines"]
        for span in line["spans"]
    )
    assert raw.count("\ufffd") == 4  # the generator really wrote glyphs pymupdf cannot map
    parsed = parse_pdf(pdf, "2401.00003")
    expected = f"{pdfgen.FORMULA_BEFORE} ({pdfgen.FORMULA_INSIDE})\u2211 {pdfgen.FORMULA_AFTER}"
    assert parsed.text == expected
    assert parsed.unmapped_glyphs == 1  # "nosuchglyph": nothing knows it, so dropped and counted


def test_math_extension_font_maps_by_its_fixed_layout_when_names_say_nothing(tmp_path):
    """A CMEX-named font whose glyph names are no help still has TeX's OMX layout: code 0x12 is a big (."""
    glyphs = {18: "cmex18", 19: "cmex19", 88: "cmex88", 100: "cmex100"}
    pdf = pdfgen.write_tex_formula(tmp_path / "cmex.pdf", font_name="CMEX10", glyphs=glyphs)
    parsed = parse_pdf(pdf, "2401.00004")
    # 100 (0x64) is hatwidest in OMX: a wide circumflex accent
    expected = f"{pdfgen.FORMULA_BEFORE} ({pdfgen.FORMULA_INSIDE})\u2211\u02c6 {pdfgen.FORMULA_AFTER}"
    assert parsed.text == expected
    assert parsed.unmapped_glyphs == 0


def test_pages_with_good_text_are_not_flagged(paper):
    assert {f.page for f in paper.flags} == {pdfgen.PAGE_EMPTY, pdfgen.PAGE_GARBLED}


def test_round_trips_through_json(paper):
    assert ParsedPaper.from_json(paper.to_json()) == paper


@pytest.mark.parametrize(
    ("writer", "reason", "hint"),
    [
        (pdfgen.write_encrypted, "encrypted", "password-protected"),
        (pdfgen.write_truncated, "truncated", "re-download"),
        (pdfgen.write_zero_pages, "no pages", "re-download"),
        (pdfgen.write_not_a_pdf, "not a readable PDF", "re-download"),
    ],
)
def test_unreadable_files_raise_parse_error_naming_the_file(tmp_path, writer, reason, hint):
    path = writer(tmp_path / "bad.pdf")
    with pytest.raises(ParseError) as caught:
        parse_pdf(path, "2401.00003")
    assert str(path) in caught.value.reason
    assert reason in caught.value.reason
    assert hint in caught.value.hint
    assert caught.value.hint in str(caught.value)
    copied = pickle.loads(pickle.dumps(caught.value))  # builds parse in worker processes
    assert (copied.reason, copied.hint) == (caught.value.reason, caught.value.hint)


def test_missing_file_raises_parse_error(tmp_path):
    with pytest.raises(ParseError, match="does not exist"):
        parse_pdf(tmp_path / "absent.pdf", "2401.00004")


def test_quote_pattern_matches_raw_quotes_against_cleaned_text():
    pattern = quote_pattern("an e\ufb03cient dur- ing  the open- domain step")
    assert pattern.search("so an efficient during the open-domain step")
    assert pattern.search("so an efficient during\n\nthe opendomain step")
    assert not pattern.search("an efficient during the closed-domain step")


def test_evidence_from_raw_text_is_found_in_parsed_text(paper, paper_pdf):
    raw = pymupdf.open(paper_pdf)[pdfgen.PAGE_INTRO - 1].get_text()
    quote = raw[raw.index("down dur-") : raw.index("GPT-")].replace("\n", " ")
    assert "dur- ing" in quote
    assert quote_pattern(quote).search(page_text(paper, pdfgen.PAGE_INTRO))
