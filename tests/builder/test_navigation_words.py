"""An author with topic words or a year names a paper (the author narrows, the words pick); a topic
alone names none; a bare id shows that paper's passages and no others."""

from __future__ import annotations

import json

import pytest

from builder.cli import main
from readingroom_core.formats.papers import PaperRecord
from readingroom_core.navigation import PaperFinder


def record(arxiv_id, title, authors, year, names=()):
    return PaperRecord(
        id=arxiv_id, title=title, first_chunk=0, chunk_count=1, authors=tuple(authors), year=year,
        short_names=tuple(names),
    )  # fmt: skip


PAPERS = [
    record("2004.04906", "Dense Passage Retrieval for Open-Domain Question Answering",
           ["Vladimir Karpukhin", "Barlas Oguz"], 2020, ["DPR"]),
    record("2005.11401", "Retrieval-Augmented Generation for Knowledge-Intensive NLP Tasks",
           ["Patrick Lewis", "Ethan Perez"], 2020, ["RAG"]),
    record("2108.12409", "Train Short, Test Long: Attention with Linear Biases", ["Ofir Press", "Mike Lewis"],
           2021),
    record("2205.14135", "FlashAttention: Fast and Memory-Efficient Exact Attention with IO-Awareness",
           ["Tri Dao", "Daniel Y. Fu"], 2022, ["FlashAttention"]),
    record("2307.08691", "FlashAttention-2: Faster Attention with Better Parallelism and Work Partitioning",
           ["Tri Dao"], 2023, ["FlashAttention-2"]),
    record("2212.03533", "Text Embeddings by Weakly-Supervised Contrastive Pre-training", ["Liang Wang"], 2022),
    record("2401.00368", "Improving Text Embeddings with Large Language Models", ["Liang Wang"], 2024),
    record("2212.10560", "Self-Instruct: Aligning Language Models with Self-Generated Instructions",
           ["Yizhong Wang"], 2022),
    record("2312.10997", "Retrieval-Augmented Generation for Large Language Models: A Survey", ["Yunfan Gao"],
           2023),
    record("2212.10496", "Precise Zero-Shot Dense Retrieval without Relevance Labels", ["Luyu Gao"], 2022),
]  # fmt: skip
FINDER = PaperFinder(PAPERS)


def named(query):
    found = FINDER.find(query)
    return (PAPERS[found.paper].id, found.how) if found else None


@pytest.mark.parametrize(
    ("query", "paper"),
    [
        ("karpukhin dense retrieval", "2004.04906"),
        ("dense retrieval karpukhin", "2004.04906"),  # the surname last
        ("lewis retrieval augmented generation", "2005.11401"),  # Lewis first, not Press et al.'s Lewis
        ("lewis retrieval augmented 2020", "2005.11401"),
        ("dao io-aware exact attention", "2205.14135"),  # two Dao papers: the words pick
        ("dao parallelism work partitioning", "2307.08691"),
        ("wang weakly supervised embeddings", "2212.03533"),  # three Wang papers
        ("liang wang contrastive", "2212.03533"),
        ("wang self generated instructions", "2212.10560"),
        ("gao survey retrieval augmented", "2312.10997"),  # Gao the surveyor, not Gao of HyDE
        ("press linear biases", "2108.12409"),
    ],
)
def test_author_and_topic_words(query, paper):
    assert named(query) == (paper, "author-topic")


@pytest.mark.parametrize(
    "query",
    [
        "wang text embeddings",  # both of Liang Wang's papers hold the words equally
        "dao attention",  # both of Tri Dao's
        "lewis retrieval augmented 2023",  # no Lewis paper of that year
        "karpukhin",  # an author alone: the words must pick
        "dense retrieval",  # a topic alone
        "retrieval augmented generation",
        "what does dao say about attention on long sequences with io awareness",  # a question
        "gao cooking recipes",  # an author, words of none of their papers
    ],
)
def test_ambiguous_authors_and_topics_name_no_paper(query):
    assert named(query) is None


@pytest.mark.mirror
def test_a_bare_id_shows_that_papers_passages_only(mirror_site, capsys):
    """Through `query --json`, as the browser's worker runs it: every hit is the paper's, its opening
    first; an id among other words keeps the ranked list with the paper first."""
    for query in ("2305.13245", "arXiv:2305.13245v3", "https://arxiv.org/abs/2305.13245"):
        capsys.readouterr()
        assert main(["query", query, "--site", str(mirror_site), "--json"]) == 0
        hits = json.loads(capsys.readouterr().out)
        assert len(hits) > 1 and {hit["arxiv_id"] for hit in hits} == {"2305.13245"}, query
        assert hits[0]["page_start"] == 1
    capsys.readouterr()
    assert main(["query", "2305.13245 document expansion", "--site", str(mirror_site), "--json"]) == 0
    hits = json.loads(capsys.readouterr().out)
    assert hits[0]["arxiv_id"] == "2305.13245" and len({hit["arxiv_id"] for hit in hits}) > 1
