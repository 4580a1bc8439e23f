"""The parser on real arXiv PDFs: the papers the dev questions point at (one- and two-column)."""

import json
import re
from pathlib import Path

import pytest

from builder.models import ParsedPaper
from builder.paths import SHARED_MIRROR
from builder.stages.parse import parse_pdf
from builder.stages.parse.cleanup import quote_pattern

pytestmark = pytest.mark.mirror

QUESTIONS = SHARED_MIRROR.parent / "eval" / "dev-questions.jsonl"


def _evidence() -> list[dict]:
    if not QUESTIONS.is_file():
        return []
    questions = [json.loads(line) for line in QUESTIONS.read_text().splitlines() if line.strip()]
    return [q for q in questions if q.get("relevant") and q.get("evidence")]


EVIDENCE = _evidence()
GOLD_PAPERS = sorted({q["relevant"][0]["arxiv_id"] for q in EVIDENCE})
_PARSED: dict[str, ParsedPaper] = {}


@pytest.fixture(scope="module")
def parsed(mirror_dir: Path):
    def get(arxiv_id: str) -> ParsedPaper:
        if arxiv_id not in _PARSED:
            _PARSED[arxiv_id] = parse_pdf(mirror_dir / "pdf" / f"{arxiv_id}.pdf", arxiv_id)
        return _PARSED[arxiv_id]

    return get


def page_text(paper: ParsedPaper, page: int) -> str:
    span = paper.pages[page - 1]
    return paper.text[span.start : span.end]


def words(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def test_the_dev_set_mixes_layouts(mirror_dir):
    if not EVIDENCE:
        pytest.skip(f"no dev questions at {QUESTIONS}")
    layouts = {
        json.loads((mirror_dir / "meta" / f"{i}.json").read_text())["layout_guess"] for i in GOLD_PAPERS
    }
    assert layouts == {"single-column", "two-column"}


@pytest.mark.parametrize("question", EVIDENCE, ids=[q["id"] for q in EVIDENCE])
def test_evidence_quote_is_on_its_gold_page(parsed, question):
    gold = question["relevant"][0]
    paper = parsed(gold["arxiv_id"])
    page = gold["pages"][0]
    assert quote_pattern(question["evidence"]).search(page_text(paper, page)), (
        f"{question['id']}: evidence not found on {gold['arxiv_id']} p.{page}"
    )


@pytest.mark.parametrize("arxiv_id", GOLD_PAPERS)
def test_stamp_gone_title_on_page_one_pages_mapped(parsed, mirror_dir, arxiv_id):
    paper = parsed(arxiv_id)
    meta = json.loads((mirror_dir / "meta" / f"{arxiv_id}.json").read_text())
    assert paper.page_count == meta["pages"] == len(paper.pages)
    assert f"arXiv:{arxiv_id}" not in page_text(paper, 1)
    assert words(meta["title"]) in words(page_text(paper, 1))
    assert not any(flag.kind == "no-text" for flag in paper.flags if flag.page == 1)
    for span in paper.pages:
        if span.end > span.start:
            assert paper.page_at(span.start) == paper.page_at(span.end - 1) == span.page


def test_lora_sections_references_and_appendix(parsed):
    paper = parsed("2106.09685")
    titles = [s.title for s in paper.sections]
    assert titles[:3] == ["ABSTRACT", "1 INTRODUCTION", "2 PROBLEM STATEMENT"]
    assert "4.1 LOW-RANK-PARAMETRIZED UPDATE MATRICES" in titles
    start, end = paper.references_span
    assert paper.page_at(start) == 13
    assert paper.text[end:].lstrip().startswith("A LARGE LANGUAGE MODELS STILL NEED PARAMETER UPDATES")
    bibliography = paper.text[start:end]
    assert len(re.findall(r"\b(?:19|20)\d\d\b", bibliography)) > 40  # the whole list, kept out of the chunks


def test_two_column_paper_reads_left_column_then_right(parsed):
    paper = parsed("2004.04906")  # DPR, two columns; page 1 has a full-width title above them
    first = page_text(paper, 1)
    order = [
        first.index("Dense Passage Retrieval for Open-Domain Question Answering"),
        first.index("Abstract"),
        first.index("1 Introduction"),
        # a sentence wrapped over six lines of the left column, then the right column's first line
        first.index(
            "Although reducing open-domain QA to machine reading is a very reasonable strategy, "
            "a huge performance degradation is often observed in practice"
        ),
        first.index("Retrieval in open-domain QA is usually implemented using TF-IDF or BM25"),
    ]
    assert order == sorted(order)
    for span in paper.pages:
        paragraphs = page_text(paper, span.page).split("\n\n")
        assert not paragraphs[0].isdigit() and not paragraphs[-1].isdigit(), f"page number on p.{span.page}"


def test_full_width_abstract_above_two_columns(parsed):
    """revtex page 1: a long full-width abstract outweighs the columns, which must still be read apart."""
    first = page_text(parsed("1608.08225"), 1)
    left_column_end = first.index("This makes it timely and interesting to develop new analytic insights")
    right_column_start = first.index("When investigating the quality of a neural net")
    assert first.index("We show how the success of deep learning") < left_column_end < right_column_start


@pytest.mark.parametrize(
    ("arxiv_id", "formula"),
    [
        ("2004.05150", "(QKT"),  # CMEX10's parenleftbigg: "\ufffdQKT" in a Longformer snippet before
        (
            "1412.6980",
            "\u02c6mt \u2190mt/(1 \u2212\u03b2t 1)",
        ),  # Adam's bias-corrected moment, its hat from CMEX10
        ("1502.03167", "N \u2211 1 N"),  # batch norm's sum from a CFF CMEX7 with /Differences
        ("1411.2738", "\u27e6"),  # stmaryrd's llbracket
    ],
)
def test_tex_math_glyphs_take_the_character_their_font_names(parsed, arxiv_id, formula):
    """Issue 12, item 5: glyphs pymupdf gives as U+FFFD are mapped from the font's own glyph names."""
    paper = parsed(arxiv_id)
    assert formula in paper.text
    assert "\ufffd" not in paper.text
    assert not re.search("[\ue000-\uf8ff]", paper.text)
    assert paper.unmapped_glyphs == 0


def test_glyphs_nothing_maps_are_dropped_and_counted(parsed):
    """A subset CFF font with bare codes and no names: nothing to map, so dropped and counted."""
    paper = parsed("1502.05767")
    assert "\ufffd" not in paper.text
    assert paper.unmapped_glyphs >= 1
    assert (
        ParsedPaper.from_json(json.loads(json.dumps(paper.to_json()))).unmapped_glyphs
        == paper.unmapped_glyphs
    )
