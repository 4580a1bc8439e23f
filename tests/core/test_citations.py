"""Citation parsing and verification on the hard cases of tests/support/citation_cases.py, in CPython
(tests/browser/test_pyodide.py holds Pyodide to the same verdicts on them).
"""

import pytest
from support.citation_cases import CASES, EVIDENCE, PAGE_10, Q_P8, Q_RAG, Q_SURVEY, RAG, SURVEY

from readingroom_core.answers import verify
from readingroom_core.citations import parse_citations
from readingroom_core.verification import find_quote


@pytest.mark.parametrize(("name", "answer", "statuses", "uncited"), CASES, ids=[c[0] for c in CASES])
def test_hard_cases(name, answer, statuses, uncited):
    result = verify(answer, EVIDENCE)
    assert [c["status"] for c in result["citations"]] == statuses, [c["reason"] for c in result["citations"]]
    assert [u["text"] for u in result["uncited"]] == uncited
    for citation in result["citations"]:
        assert citation["verified"] == (citation["status"] == "verified")
        assert (
            answer[citation["start"] : citation["end"]]
            .lstrip("[(*`_ ")
            .lower()
            .startswith(("arxiv", SURVEY, RAG))
        )
        assert citation["reason"] or citation["status"] == "verified"
    for claim in result["uncited"]:
        assert answer[claim["start"] : claim["end"]] == claim["text"]
    verified = statuses.count("verified")
    assert result["summary"] == f"{verified} of {len(statuses)} citations verified"


def test_reasons_say_what_is_wrong():
    answer = (
        f'A [arXiv:{SURVEY} p.9 "{Q_SURVEY}"]. B [arXiv:{SURVEY} p.7 "{Q_P8}"]. '
        f'C [arXiv:{SURVEY} p.7 "has emerged as a promising solution by adding knowledge from external databases"]. '
        f'D [arXiv:2401.99999 p.3 "{Q_RAG}"]. E [arXiv:{SURVEY} p.7 "includes indexing, retrieval, and generation, '
        'also known as"].'
    )
    reasons = [c["reason"] for c in verify(answer, EVIDENCE)["citations"]]
    assert reasons[0] == (
        f"p.9 of arXiv:{SURVEY} was not among the sources (given: pp.7-8, p.10); the quote is on p.7"
    )
    assert reasons[1] == "the quote is on p.8, not p.7"
    assert reasons[2] == "the quote does not occur verbatim on p.7 (at most 7 of its 12 words match in a row)"
    assert reasons[3] == "arXiv:2401.99999 was not one of the sources given to the model"
    assert reasons[4] == "the quote runs across the page break from p.7 to p.8"


def test_verified_citation_points_at_its_source_and_the_quote_in_it():
    answer = f'It adapts [arXiv:{SURVEY} p.10 "the retriever lets it adapt to flexible domain data"].'
    (citation,) = verify(answer, EVIDENCE)["citations"]
    assert citation["source"] == 2 and citation["found_page"] == 10
    start, end = citation["highlight"]
    assert PAGE_10[start:end] == "the retriever lets it adapt to \ufb02exible domain data"


def test_range_citation_finds_the_page_the_quote_is_on():
    answer = f'X [arXiv:{SURVEY} pp.7-8 "{Q_P8}"]. Y [arXiv:{SURVEY} pp.7-8 "retrieval, and generation, also known"].'
    on_8, across = verify(answer, EVIDENCE)["citations"]
    assert (on_8["status"], on_8["page"], on_8["page_end"], on_8["found_page"], on_8["reason"]) == (
        "verified", 7, 8, 8, ""
    )  # fmt: skip
    assert (across["status"], across["found_page"]) == ("verified", 7)
    assert across["reason"] == "the quote runs across the page break from p.7 to p.8"


def test_parser_reads_what_models_write():
    answer = (
        "See [arXiv:2312.10997v2, pp. 7\u20138: \u201cquote one here now\u201d] and (2005.11401 page 3 "
        "\u00abquote two here now\u00bb) and [ARXIV: 2106.09685 p.5-p.6 'not a quote'] and 2005.11401 "
        'without a page, and the year 2023.12345 nothing. As they put it, "quote three comes first" '
        '[arXiv:1706.03762 (p. 2)] and [arXiv:1810.04805, (pp. 4\u20135), "quote four here"].'
    )
    parsed = [(c.arxiv_id, c.page, c.page_end, c.quote) for c in parse_citations(answer)]
    assert parsed == [
        ("2312.10997v2", 7, 8, "quote one here now"),
        ("2005.11401", 3, 3, "quote two here now"),
        ("2106.09685", 5, 6, ""),
        ("1706.03762", 2, 2, "quote three comes first"),
        ("1810.04805", 4, 5, "quote four here"),
    ]
    grouped = parse_citations('[arXiv:1706.03762 p.2 "a quote for the first", arXiv:1810.04805 p.4]')
    assert [c.quote for c in grouped] == ["a quote for the first", ""]


def _quotes(answer: str) -> list[tuple[str, str]]:
    return [(c.arxiv_id, c.quote) for c in parse_citations(answer)]


A, B = "1706.03762", "1810.04805"
Q1, Q2 = "the first quote of the answer", "the second quote of the answer"


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        # two citations, then one quote: the quote is the nearer one's alone
        (f'X [arXiv:{A} p.2] [arXiv:{B} p.4] "{Q1}".', [(A, ""), (B, Q1)]),
        # a quote before the next citation belongs to the citation before it (the spec's order)
        (f'X [arXiv:{A} p.2] "{Q1}" [arXiv:{B} p.4].', [(A, Q1), (B, "")]),
        # quote first throughout: each citation keeps the quote before it
        (f'X "{Q1}" [arXiv:{A} p.2] "{Q2}" [arXiv:{B} p.4].', [(A, Q1), (B, Q2)]),
        # quote after throughout
        (f'X [arXiv:{A} p.2] "{Q1}" [arXiv:{B} p.4] *"{Q2}"*.', [(A, Q1), (B, Q2)]),
        # a quote before and one after, nothing following: the spec's place (after) wins
        (f'X "{Q1}" [arXiv:{A} p.2] "{Q2}".', [(A, Q2)]),
        # a bracket of several: the quote after it is the last one's
        (f'X [arXiv:{A} p.2; arXiv:{B} p.4] "{Q1}".', [(A, ""), (B, Q1)]),
        # a quote inside the brackets is the citation's; a quote after it is not taken as well
        (f'X [arXiv:{A} p.2 "{Q1}"] "{Q2}" says more.', [(A, Q1)]),
        # words between the brackets and a quote: not the citation's quote
        (f'X [arXiv:{A} p.2] and then "{Q1}" later.', [(A, "")]),
        # a sentence's end between them: the quote opens the next sentence, not this citation
        (f'X [arXiv:{A} p.2]. "{Q1}" is what they wrote.', [(A, "")]),
        # emphasis in running text after a citation is a quote only when it directly follows
        (f"X [arXiv:{A} p.2], *and this is emphasis* here.", [(A, "")]),
    ],
)
def test_a_quote_belongs_to_one_citation(answer, expected):
    assert _quotes(answer) == expected


def test_spans_cover_a_quote_taken_from_outside_the_brackets():
    answer = f'Claim [arXiv:{A} p.2] *"{Q1}"*. Next.'
    (citation,) = parse_citations(answer)
    assert answer[citation.start : citation.end] == f'[arXiv:{A} p.2] *"{Q1}"*'


def test_ids_without_a_page():
    answer = (
        f"Cited [arXiv:{A}] and [arXiv:{B}v2 \u201c{Q1}\u201d] and (arXiv:{A}); mentioned arXiv:{B} and "
        f"{A} and [{B}] in running text."
    )
    assert [(c.arxiv_id, c.page, c.quote) for c in parse_citations(answer)] == [
        (A, 0, ""),
        (f"{B}v2", 0, Q1),
        (A, 0, ""),
    ]


def test_echoed_prompt_markup_is_never_a_citation():
    echoed = (
        f'<source n="1" cite="arXiv:{A} p.7" title="Attention Is All You Need" section="Intro">\n'
        f"<source n='2' cite='arXiv:{B} pp.3-4' title='BERT'>\n"
        f'The label cite="arXiv:{A} p.7" came from the prompt.'
    )
    assert parse_citations(echoed) == []


def test_quote_matching_ignores_typography_but_not_words():
    text = "The \ufb01rst-stage re-\ntriever\u2019s recall \u2014 on NQ \u2014 is 79.4%."
    assert find_quote("the first-stage retriever's recall - on NQ - is 79.4%", text)
    assert find_quote("THE FIRSTSTAGE RETRIEVER\u2019S RECALL ON NQ IS 79.4 %", text)
    assert find_quote("the first-stage retriever's recall on NQ is 79.4", text) is None
    assert find_quote("the first-stage retriever's recall on NQ is 79.5%", text) is None
    assert find_quote("the first-stage retriever recall on NQ is 79.4%", text) is None
