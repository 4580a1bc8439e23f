"""How many sources a prompt budget holds, and the parts of a question that compares or joins two things.

A model with a long context window can read more than an 8k model: the candidate count grows with the
prompt budget from `BASE_CANDIDATES` at `BASE_BUDGET` (what an 8k model has always been given) up to
`MAX_CANDIDATES`, and the per-paper cap with it, so the extra sources are spread over papers. The cap
is where more sources stopped finding gold pages on the tuning questions (docs/measurements/ask-sources.json,
`scripts/bench_ask_sources.py`).

A question such as "RAG vs RETRO" or "how do LoRA and prefix tuning differ" retrieves mostly one side
when searched whole; `question_parts` finds the two sides, each part (the question with the pair
replaced by one side) is searched by keyword too, and `interleave` puts the best of each beside the
whole question's best, so both papers reach the model. Detection is conservative: a question it does
not match keeps exactly its own ranking.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol, TypeVar

BASE_BUDGET = 4500  # answers.DEFAULT_BUDGET: a budget up to this keeps the 8k model's sources
BASE_CANDIDATES = 16
BASE_PER_PAPER = 4
MAX_CANDIDATES = 48
MAX_PER_PAPER = 8
# Per retriever before fusion; the per-paper cap needs more than the candidates it keeps.
BASE_RETRIEVER_CANDIDATES = 100
COMMON_WORDS = 2  # a side of common words ("prefix tuning") is at most this long
CUE_WORDS = 3  # a cue word ("compare", "differ", "both") at most this many words from the pair
PART_ROUNDS = 3  # the best this many of each part sit beside the whole question's best


def candidates_for_budget(budget: int) -> int:
    """Candidate sources for a prompt of `budget` tokens: proportional to it above `BASE_BUDGET`."""
    if budget <= BASE_BUDGET:
        return BASE_CANDIDATES
    return min(MAX_CANDIDATES, BASE_CANDIDATES * budget // BASE_BUDGET)


def per_paper_for(candidates: int) -> int:
    """Most sources from one paper: a quarter of the candidates, as at the base count."""
    return max(BASE_PER_PAPER, min(MAX_PER_PAPER, candidates * BASE_PER_PAPER // BASE_CANDIDATES))


def retriever_candidates(candidates: int) -> int:
    return max(BASE_RETRIEVER_CANDIDATES, 6 * candidates)


# --- parts --------------------------------------------------------------------------------------------

_WORD = r"[\w][\w\-./+']*"
_SIDE = rf"{_WORD}(?:\s+{_WORD}){{0,3}}"
# Words that cannot start or end a side: the question's own frame around the pair.
_FRAME = frozenset(
    """a an the how what why which when where who do does did is are was were can could should would
    compare comparing contrast between of in on for at to with by from than differ differs difference
    differences both about regarding versus vs vs. and or their its it they""".split()
)
_JOINED = re.compile(rf"(?P<a>{_SIDE})\s+(?:and|&)\s+(?P<b>{_SIDE})", re.IGNORECASE)
_VERSUS = re.compile(rf"(?P<a>{_SIDE})\s+(?:vs\.?|versus)\s+(?P<b>{_SIDE})", re.IGNORECASE)
# A pair of names is a comparison or a join when one of these frames it.
_CUES = (
    re.compile(r"\b(?:compare|comparing|contrast|contrasting)\b", re.IGNORECASE),
    re.compile(r"\bdifferen(?:ce|ces|t)\s+between\b", re.IGNORECASE),
    re.compile(r"\b(?:differ|differs|differed)\b", re.IGNORECASE),
    re.compile(r"\bboth\b", re.IGNORECASE),
)
# "Why do RAG and RETRO ..." joins two things without a cue word: then both sides must be names.
_OPENING = re.compile(r"^(?:why|how|what|when|where|which)\s+(?:do|does|did|are|were|is|can)\s+", re.I)
_NAME = re.compile(r"[A-Z0-9]")  # a side that names something has a capital or a digit in it


def _pair(match: re.Match[str], names: int = 1) -> tuple[str, str, int, int] | None:
    """(side a, side b, start, end of the pair in the question), each side cut to the name next to the
    conjunction: its run of capitalised words when it starts with one, else up to the nearest frame
    word; None unless at least `names` sides look like names."""
    a_words, b_words = match["a"].split(), match["b"].split()
    a_words = a_words[len(a_words) - _name_run(a_words[::-1]) :]
    b_words = b_words[: _name_run(b_words)]
    a, b = " ".join(a_words), " ".join(b_words)
    if not a or not b or a.lower() == b.lower():
        return None
    start = match.start("a") + match["a"].rfind(a)
    end = match.start("b") + match["b"].find(b) + len(b)
    # the question's first letter is capitalised whatever it names
    if bool(_NAME.search(a[1:] if start == 0 else a)) + bool(_NAME.search(b)) < names:
        return None
    return a, b, start, end


def _name_run(words: Sequence[str]) -> int:
    """How many of `words` (nearest the conjunction first) belong to the side's name."""
    if words and _NAME.search(words[0]):
        run = 1
        while run < len(words) and _NAME.search(words[run]) and words[run].lower() not in _FRAME:
            run += 1
        return run
    run = 0
    while run < min(len(words), COMMON_WORDS) and words[run].lower() not in _FRAME:
        run += 1
    return run


def _near(cue: re.Match[str], start: int, end: int, text: str) -> bool:
    """The cue word within `CUE_WORDS` words of the pair, before or after it."""
    if cue.end() <= start:
        between = text[cue.end() : start]
    elif cue.start() >= end:
        between = text[end : cue.start()]
    else:
        return False
    return len(between.split()) <= CUE_WORDS


def question_parts(question: str) -> list[str]:
    """The question once per side of the pair it compares or joins ("X vs Y", "compare A and B", "how
    do A and B differ", "both A and B"), the pair replaced by that side; [] for any other question.
    A side must look like a name (a capital or a digit), so "precision and recall" never splits; a pair
    without a cue word ("why do RAG and RETRO ...") needs two names right after the question's opening."""
    text = " ".join(question.split())
    found = None
    versus = _VERSUS.search(text)
    if versus:
        found = _pair(versus)
    else:
        opening = _OPENING.match(text)
        cues = [cued for cue in _CUES for cued in cue.finditer(text)]
        for match in _JOINED.finditer(text) if cues or opening else ():
            pair = _pair(match)
            if pair and any(_near(cue, pair[2], pair[3], text) for cue in cues):
                found = pair
            elif opening and pair and pair[2] == opening.end() and _pair(match, names=2):
                found = pair
            if found:
                break
    if found is None:
        return []
    a, b, start, end = found
    return [f"{text[:start]}{side}{text[end:]}".strip() for side in (a, b)]


class _Passage(Protocol):
    @property
    def arxiv_id(self) -> str: ...
    @property
    def page_start(self) -> int: ...
    @property
    def page_end(self) -> int: ...


P = TypeVar("P", bound=_Passage)


def interleave(whole: Sequence[P], parts: Sequence[Sequence[P]], k: int, per_paper: int) -> list[P]:
    """The whole question's ranking with each part's best `PART_ROUNDS` beside its own best (whole,
    part 1, part 2, whole, ...), then the rest of the whole ranking, then the parts' rest in turn; one
    passage per page and `per_paper` per paper kept, `k` in all."""
    order: list[P] = []
    for rank in range(PART_ROUNDS):
        for ranking in (whole, *parts):
            if rank < len(ranking):
                order.append(ranking[rank])
    order += whole[PART_ROUNDS:]
    longest = max((len(ranking) for ranking in parts), default=0)
    for rank in range(PART_ROUNDS, longest):
        order += [ranking[rank] for ranking in parts if rank < len(ranking)]
    kept: list[P] = []
    pages: set[tuple[str, int]] = set()
    papers: dict[str, int] = {}
    for passage in order:
        spans = {(passage.arxiv_id, page) for page in range(passage.page_start, passage.page_end + 1)}
        if spans & pages or papers.get(passage.arxiv_id, 0) >= per_paper:
            continue
        kept.append(passage)
        pages |= spans
        papers[passage.arxiv_id] = papers.get(passage.arxiv_id, 0) + 1
        if len(kept) == k:
            break
    return kept
