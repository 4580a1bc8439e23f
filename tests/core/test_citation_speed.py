"""A complexity guard: reading and checking a hostile 100,000-character answer takes about a second at
most in CPython (a pattern that backtracks over unbounded input took 27 s on 20,000 spaces)."""

import time

import pytest

from readingroom_core.citations import find_uncited, parse_citations
from readingroom_core.verification import SourceSpan, verify_answer

PAPER = "2312.10997"
SIZE = 100_000
# Linear steps take 0.05-0.3 s here and up to 0.6 s on a loaded CI machine; a backtracking pattern takes
# tens of seconds, so the guard keeps a wide margin rather than timing the code.
LIMIT_S = 2.0
PAGE = "Retrieval-Augmented Generation has emerged as a promising solution for knowledge-intensive tasks."
SOURCES = [SourceSpan(1, PAPER, 7, 7, PAGE)]
PAGES = {PAPER: {7: PAGE}}
CITATION = f'[arXiv:{PAPER} p.7 "has emerged as a promising solution"]'


def _fill(unit: str) -> str:
    return (unit * (SIZE // len(unit) + 1))[:SIZE]


HOSTILE = {
    "spaces after an id": f"See arXiv:{PAPER}" + " " * SIZE,
    "spaces after a page": f"See arXiv:{PAPER} p." + " " * SIZE,
    "brackets": _fill("["),
    "parentheses and brackets": _fill("[(") + f"arXiv:{PAPER}",
    "arxiv prefixes": _fill("arXiv:"),
    "arxiv prefixes with marks": _fill("[arXiv: * _ `"),
    "quotes": _fill('"'),
    "typographic quotes after citations": _fill(f"arXiv:{PAPER} p.7 \u201c"),
    "stars": "A claim " + _fill("*") + ".",
    "nested brackets": _fill("[[(") + _fill("])")[: SIZE // 2],
    "citation without its closing bracket": f'[arXiv:{PAPER} p.7 "' + _fill("word "),
    "5,000 citations": f"Claim. {CITATION} " * 5000,
    "5,000 altered citations": "".join(
        f'[arXiv:{PAPER} p.7 "has emerged as a {n} solution"]' for n in range(5000)
    ),
    "old-style id letters": _fill("abc.def-"),
    "html and links": _fill("<script [x](") + ".",
    "a sentence of dots": _fill(". ") + _fill(".)")[:1000],
    "100 long quotes that are not on the page": "".join(
        f'[arXiv:{PAPER} p.7 "' + " ".join(f"has emerged {n}" for n in range(60)) + '"] ' for _ in range(100)
    ),
    "a quote before a citation, many times": _fill(f'"a quote that is long enough" arXiv:{PAPER} p.7 '),
}


@pytest.mark.parametrize("answer", HOSTILE.values(), ids=HOSTILE.keys())
def test_hostile_answers_are_read_and_checked_in_linear_time(answer):
    assert len(answer) >= SIZE * 0.9
    citations = parse_citations(answer)
    steps = (
        parse_citations,
        lambda a: find_uncited(a, citations),
        lambda a: verify_answer(a, SOURCES, PAGES),
    )
    for step in steps:
        started = time.perf_counter()
        step(answer)
        assert time.perf_counter() - started < LIMIT_S
