"""The names a list's papers call each other by: mined from real generated PDFs whose bodies cite one
another with known sentences, guarded against generic terms and names written for several papers, and
found by navigation once they are in the records."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from support import corpus

from builder.citation_match import ListPaper, ReferenceMatcher
from builder.list_names import body_of, coined, list_names, with_list_names
from builder.references import read_references
from builder.stages.parse import parse_pdf
from readingroom_core.formats.papers import PaperRecord
from readingroom_core.navigation import PaperFinder

EXPANSION, STUDENTS, GROUPED, PHYSICS = (f"2402.3000{n}" for n in range(1, 5))
_ENTRY = {
    EXPANSION: "Rosa Lindqvist, Tomasz Okafor, and Mei Sato. Expanding documents with predicted queries for "
    f"passage retrieval. arXiv:{EXPANSION}, 2024.",
    STUDENTS: "Amara Nwosu and Felix Brandt. Compact students from large teachers: logit distillation for "
    f"language models. arXiv:{STUDENTS}, 2024.",
}
OFF_LIST = "Ashish Vaswani, Noam Shazeer, and Niki Parmar. Attention is all you need. arXiv:1706.03762, 2017."
# section of the paper -> the sentence placed there; numbers are the paper's own reference list
_SENTENCES = {
    EXPANSION: ("Query Prediction", "We refer to it as Predict-and-Expand throughout this paper."),
    STUDENTS: ("Student Architecture", "We index with DocX [1] and compare to the LLM [2] it serves."),
    GROUPED: ("Uptraining", "Our baseline is DocX [1], and RETRO [3] is left out since it is off the list."),
    PHYSICS: ("Introduction", "Both GroupNet [1] and GroupNet [2] are named so by us alone."),
}
_REFERENCES = {
    EXPANSION: [OFF_LIST],
    STUDENTS: [
        _ENTRY[EXPANSION],
        f"Ines Carvalho and Kwame Mensah. Sharing key-value heads. arXiv:{GROUPED}, 2024.",
    ],
    GROUPED: [_ENTRY[EXPANSION], _ENTRY[STUDENTS], OFF_LIST],
    PHYSICS: [_ENTRY[EXPANSION], _ENTRY[STUDENTS]],
}


@pytest.fixture(scope="module")
def mined(tmp_path_factory) -> tuple[list[corpus.Topic], dict[str, tuple[str, ...]]]:
    """The four suite papers under new ids, each citing the others as `_SENTENCES` says, as PDFs parsed
    the way the build parses them."""
    folder = tmp_path_factory.mktemp("named-list")
    topics, bodies, references = [], {}, []
    for day, (arxiv_id, topic) in enumerate(
        zip((EXPANSION, STUDENTS, GROUPED, PHYSICS), corpus.TOPICS, strict=True), 1
    ):
        section, sentence = _SENTENCES[arxiv_id]
        topic = replace(
            topic,
            arxiv_id=arxiv_id,
            versions=1,
            published=f"2024-02-0{day}T09:00:00Z",
            facts={section: sentence},
            references=_REFERENCES[arxiv_id],
        )
        pdf = folder / f"{arxiv_id}.pdf"
        pdf.write_bytes(corpus.write_pdf(topic, 1)[0])
        parsed = parse_pdf(pdf, arxiv_id)
        topics.append(topic)
        bodies[arxiv_id] = body_of(parsed)
        references.append(read_references(parsed))
    matcher = ReferenceMatcher(
        [ListPaper.of(t.arxiv_id, t.title, t.authors, [t.published[:10]]) for t in topics]
    )
    return topics, list_names(bodies, references, matcher, {t.arxiv_id: t.title for t in topics})


def test_names_written_beside_citations_and_the_papers_own(mined):
    topics, names = mined
    # "DocX [1]" in two citing papers; "Predict-and-Expand" the paper's own name for its method
    assert names == {EXPANSION: ("DocX", "Predict-and-Expand")}


def test_generic_capitals_and_names_for_several_papers_name_none(mined):
    _, names = mined
    written = {name for found in names.values() for name in found}
    assert "LLM" not in written  # capitals once beside a citation: a generic term
    assert "GroupNet" not in written  # written for two papers equally
    assert "RETRO" not in written  # beside a work off the list


def test_navigation_finds_a_paper_by_its_mined_name(mined):
    topics, names = mined
    records = [
        PaperRecord(id=t.arxiv_id, title=t.title, first_chunk=n, chunk_count=1, authors=tuple(t.authors))
        for n, t in enumerate(topics)
    ]
    finder = PaperFinder(with_list_names(records, names))
    for query in ("DocX", "docx", "the DocX paper", "predict and expand"):
        found = finder.find(query)
        assert found is not None and topics[found.paper].arxiv_id == EXPANSION, query
    assert finder.find("GroupNet") is None and finder.find("LLM") is None


@pytest.mark.parametrize(
    ("token", "is_name"),
    [
        ("FiD", True),
        ("RETRO", True),
        ("TAS-B", True),
        ("E5", True),
        ("vLLM", True),
        ("LLMs", False),
        ("Transformer", False),
        ("the", False),
        ("A", False),
    ],
)
def test_coined_names_are_not_words(token, is_name):
    assert coined(token) is is_name


def test_the_list_names_follow_the_papers_own(tmp_path: Path):
    record = PaperRecord(id="1", title="LoRA: Low-Rank Adaptation", first_chunk=0, chunk_count=1,
                         short_names=("LoRA",))  # fmt: skip
    named = with_list_names([record], {"1": ("LORA", "LoRA-FA")})
    assert named[0].short_names == ("LoRA", "LoRA-FA")  # one spelling of each name
