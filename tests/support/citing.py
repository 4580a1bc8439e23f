"""A generated reading list whose papers cite one another in known ways, as real PDFs in a mirror folder.

The four papers are the suite's topics (support/corpus.py) under new ids, each with a reference list
written for it:
- A cites B by arXiv id (in its body on a known page), and two works that are not on the list;
- B cites C by its title alone, A by first author, year and most of A's title words (worded
  differently), and a work off the list by `CoRR abs/…`;
- C cites A by an arXiv URL with a version, B by a title broken by hyphens ("Stu- dents");
- D cites no paper of the list, but names A's first author with another title (a false friend).
So the graph is exactly `EXPECTED` and `suggest` finds "Attention is all you need" (cited by all
four, by id in three of them) and "Long short-term memory" (two, no id).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from support import corpus

A, B, C, D = "2401.10001", "2401.10002", "2401.10003", "2401.10004"
VASWANI = "1706.03762"

_REFERENCES = {
    A: [
        f"Amara Nwosu and Felix Brandt. Compact students from large teachers. arXiv preprint arXiv:{B}, 2024.",
        f"Ashish Vaswani, Noam Shazeer, and Niki Parmar. Attention is all you need. arXiv:{VASWANI}, 2017.",
        "Sepp Hochreiter and Jurgen Schmidhuber. Long short-term memory. Neural Computation, 1997.",
    ],
    B: [
        "Ines Carvalho, Kwame Mensah, and Lena Vogel. Grouped-query attention: sharing key-value heads "
        "for fast decoding. In Proceedings of EMNLP, 2024.",
        f"A. Vaswani, N. Shazeer, and N. Parmar. Attention is all you need. CoRR, abs/{VASWANI}, 2017.",
        "Rosa Lindqvist, Tomasz Okafor, and Mei Sato. 2024. Expanding documents with predicted queries "
        "for retrieval. In SIGIR.",
    ],
    C: [
        f"Rosa Lindqvist, Tomasz Okafor, and Mei Sato. Document expansion. https://arxiv.org/abs/{A}v1.",
        "Amara Nwosu and Felix Brandt. Compact Stu- dents from Large Teach- ers: Logit Distil- lation for "
        "Language Models. In ACL, 2024.",
        "Ashish Vaswani, Noam Shazeer, and Niki Parmar. Attention Is All You Need. In NeurIPS, 2017.",
    ],
    D: [
        f"A. Vaswani and N. Shazeer. Attention is all you need. arXiv: {VASWANI}, 2017.",
        "S. Hochreiter and J. Schmidhuber. Long Short-Term Memory. Neural Computation 9(8), 1997.",
        "Rosa Lindqvist. Sparse retrieval at scale. In ECIR, 2024.",
    ],
}
# (section, sentence): the body sentence that cites, placed on a page the generator records.
_CITING_SENTENCES = {
    A: ("Query Prediction", "Our predictor reuses the compact students of [1], which keeps decoding fast."),
    B: (
        "Student Architecture",
        "Unlike [3], we shrink the model itself, and we keep the grouped heads of [1].",
    ),
}


def topics() -> dict[str, corpus.Topic]:
    made = {}
    for day, (arxiv_id, topic) in enumerate(zip((A, B, C, D), corpus.TOPICS, strict=True), start=10):
        facts = dict([_CITING_SENTENCES[arxiv_id]]) if arxiv_id in _CITING_SENTENCES else {}
        made[arxiv_id] = replace(
            topic,
            arxiv_id=arxiv_id,
            versions=1,
            published=f"2024-01-{day}T09:00:00Z",
            references=_REFERENCES[arxiv_id],
            facts=facts,
        )
    return made


def write_citing_mirror(folder: Path) -> Path:
    """The four papers as a mirror folder (support/corpus.write_mirror's layout)."""
    corpus.TOPIC_BY_ID.update(topics())  # generated() looks topics up by id
    return corpus.write_mirror(folder, (A, B, C, D))


def citing_page(arxiv_id: str) -> int:
    """The page of `arxiv_id` (A or B) whose body sentence cites."""
    section, _ = _CITING_SENTENCES[arxiv_id]
    return corpus.generated(arxiv_id).fact_pages[section]


def expected() -> set[tuple[str, str, int | None, str]]:
    """The exact graph: (citing, cited, page of the citing paper, how it was matched)."""
    return {
        (A, B, citing_page(A), "id"),
        (B, C, citing_page(B), "title"),
        (B, A, citing_page(B), "author-year"),
        (C, A, None, "id"),
        (C, B, None, "title"),
    }
