"""A generated reading list of two papers that both cite a work not on it, as real PDFs in a mirror
folder: one cites "Chinchilla [2]" (its entry with the arXiv id), the other "Chinchilla (Hoffmann et
al., 2022)" (its entry without). Each also cites a work the other does not, which is no gap in the list.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from support import corpus

CHINCHILLA_ID = "2203.15556"
CHINCHILLA_TITLE = "Training compute-optimal large language models"
HOFFMANN = f"Jordan Hoffmann, Sebastian Borgeaud, and Arthur Mensch. {CHINCHILLA_TITLE}."
CITING = {
    "2401.20001": (
        [
            "Ashish Vaswani and Noam Shazeer. Attention is all you need. 2017.",
            f"{HOFFMANN} arXiv preprint arXiv:{CHINCHILLA_ID}, 2022.",
        ],
        "Chinchilla [2] was trained on four times more tokens than its predecessors of the same size.",
    ),
    "2401.20002": (
        [f"{HOFFMANN} 2022.", "Sepp Hochreiter. Long short-term memory. 1997."],
        "Chinchilla (Hoffmann et al., 2022) showed that smaller models trained longer do as well.",
    ),
}


def topics() -> dict[str, corpus.Topic]:
    """The two papers: the suite's first two topics under new ids, with these references and sentences."""
    made = {}
    for (arxiv_id, (references, sentence)), topic in zip(CITING.items(), corpus.TOPICS, strict=False):
        facts = {topic.sections[1]: sentence}
        made[arxiv_id] = replace(topic, arxiv_id=arxiv_id, versions=1, references=references, facts=facts)
    return made


def citing_page(arxiv_id: str) -> int:
    """The page whose body sentence cites the missing work."""
    topic = topics()[arxiv_id]
    return corpus.generated(arxiv_id).fact_pages[topic.sections[1]]


def write_missing_mirror(folder: Path) -> Path:
    """The two papers as a mirror folder (support/corpus.write_mirror's layout)."""
    corpus.TOPIC_BY_ID.update(topics())  # generated() looks topics up by id
    return corpus.write_mirror(folder, tuple(CITING))
