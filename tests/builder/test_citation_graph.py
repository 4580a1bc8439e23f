"""The list's citation graph: reference entries read from real PDFs, matched by id, title and author-year,
and `suggest`'s missing works, on a generated list whose papers cite each other in known ways."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from support import citing

from builder.citation_graph import Citation, CitationGraph, build_graph, graph_bytes, read_graph
from builder.citation_match import (
    TITLE_WORDS_NEEDED,
    ListPaper,
    ReferenceMatcher,
    _title_in,
    fold,
    squeeze,
    title_words,
)
from builder.cli import main
from builder.missing_works import entry_title, missing_works
from builder.models import PageSpan, ParsedPaper, Section
from builder.references import Reference, arxiv_ids_in, entry_year, first_surname, read_references
from builder.stages.parse import parse_pdf


@pytest.mark.parametrize(
    ("text", "ids"),
    [
        ("A. Vaswani. Attention is all you need. arXiv:1706.03762, 2017.", ("1706.03762",)),
        ("Attention is all you need. CoRR, abs/1706.03762v5, 2017.", ("1706.03762",)),
        ("Scaling laws. arXiv preprint arXiv: 2001.08361, 2020.", ("2001.08361",)),
        ("Split by a line break: abs/1706. 03762.", ("1706.03762",)),
        ("https://arxiv.org/pdf/2106.09685v2 and old hep-th/9901001, arXiv:cs.CL/0112017", None),
        ("P. Mehta and D. J. Schwab, ArXiv e-prints (2014), 1410.3831.", ("1410.3831",)),
        ("A DOI is no id: doi:10.1145/3292500.3330701, pages 1234-1250, 2019.", ()),
        ("A month 13 is no id: arXiv:2013.01234.", ()),
    ],
)
def test_arxiv_ids_in_references(text, ids):
    found = arxiv_ids_in(text)
    if ids is None:
        assert set(found) == {"2106.09685", "hep-th/9901001", "cs.CL/0112017"}
    else:
        assert found == ids


@pytest.mark.parametrize(
    ("entry", "surname"),
    [
        ("J. Devlin, M.-W. Chang, K. Lee. BERT", "Devlin"),
        ("Devlin, J., Chang, M.-W., and Lee, K. BERT", "Devlin"),
        ("[12] Jacob Devlin and Ming-Wei Chang. 2019. BERT", "Devlin"),
        ("K. Guu, K. Lee, Z. Tung. Retrieval augmented", "Guu"),
    ],
)
def test_first_surname(entry, surname):
    assert first_surname(entry) == surname


LIST = [
    ListPaper.of("1810.04805", "BERT: Pre-training of Deep Bidirectional Transformers for Language Understanding",
                 ["Jacob Devlin", "Ming-Wei Chang"], ["2018-10-11"]),
    ListPaper.of("2002.08909", "REALM: Retrieval-Augmented Language Model Pre-Training", ["Kelvin Guu"], ["2020-02-10"]),
    ListPaper.of("2310.06825", "Mistral 7B", ["Albert Q. Jiang"], ["2023-10-10"]),
    ListPaper.of("2104.08663", "Sparse, Dense & Hybrid Retrieval", ["Nandan Thakur"], ["2021-04-17"]),
]  # fmt: skip


def matched(text: str, citing_id: str = "") -> list[tuple[str, str]]:
    from builder.references import Reference

    reference = Reference(text=text, page=1, arxiv_ids=arxiv_ids_in(text))
    return [(m.arxiv_id, m.how) for m in ReferenceMatcher(LIST).match(reference, citing=citing_id)]


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        # the title through hyphenation, line breaks, case and "&" spelled out
        ("J. Devlin. BERT: Pre-\ntraining of deep bidirec- tional transformers for language understanding. NAACL 2019",
         [("1810.04805", "title")]),
        ("N. Thakur. Sparse, dense and hybrid retrieval. 2021.", [("2104.08663", "title")]),
        # a part of the title (after its colon) counts with the first author only
        ("K. Guu, K. Lee. Retrieval augmented language model pre-training. ICML, 2020.", [("2002.08909", "title")]),
        ("P. Lewis. Retrieval augmented language model pre-training revisited. 2021.", []),
        # a short title needs its first author
        ("Albert Q. Jiang, A. Sablayrolles. Mistral 7B. arXiv preprint, 2023.", [("2310.06825", "title")]),
        ("Someone Else. Fine-tuning Mistral 7B for law. 2024.", []),
        # first author, a year of the paper and most title words
        ("Devlin, J. 2019. Deep bidirectional transformers: pre-training for language understanding.",
         [("1810.04805", "author-year")]),
        ("Devlin, J. 2019. Multilingual transformers for translation.", []),
        # an id decides: another paper's id names no list paper, whatever the title says
        ("J. Devlin. BERT: pre-training of deep bidirectional transformers for language understanding. "
         "arXiv:1906.08237", []),
        ("Guu et al. REALM. arXiv:2002.08909", [("2002.08909", "id")]),
    ],
)  # fmt: skip
def test_matching_rules(entry, expected):
    assert matched(entry) == expected


def test_a_paper_never_cites_itself():
    assert matched("Guu et al. REALM. arXiv:2002.08909", citing_id="2002.08909") == []


def every_title_tried(matcher: ReferenceMatcher, reference, citing: str) -> list[tuple[str, str]]:
    """The rules applied to every paper of the list, as matching did before titles were anchored."""
    if reference.arxiv_ids:
        return [(m.arxiv_id, m.how) for m in matcher.match(reference, citing)]
    entry, surname = squeeze(reference.text), fold(first_surname(reference.text))
    by_title = [
        (paper.arxiv_id, "title")
        for paper, title, parts in matcher.titles
        if paper.arxiv_id != citing and _title_in(entry, title, parts, surname == paper.surname)
    ]
    if by_title or not surname or not entry_year(reference.text):
        return by_title
    words = title_words(reference.text)
    return [
        (paper.arxiv_id, "author-year")
        for paper in matcher.papers
        if paper.arxiv_id != citing and paper.surname == surname and entry_year(reference.text) in paper.years
        and len(matcher.words[paper.arxiv_id]) >= 2
        and len(matcher.words[paper.arxiv_id] & words) >= TITLE_WORDS_NEEDED * len(matcher.words[paper.arxiv_id])
    ]  # fmt: skip


def test_anchored_titles_match_exactly_what_trying_every_title_matches():
    rng = random.Random(5)
    vocabulary = (
        "attention graph retrieval sparse dense model language vision scaling law agent memory".split()
    )
    surnames = ["Devlin", "Guu", "Jiang", "Thakur", "Lewis", "Chen", "Wang"]
    papers = []
    for number in range(1500):
        words = rng.sample(vocabulary, rng.randint(1, 6))
        if rng.random() < 0.3:
            words[rng.randrange(len(words))] += ":"
        title = " ".join(words).rstrip(":") + ("" if rng.random() < 0.1 else f" {number}")
        author = f"{rng.choice('ABCDE')}. {rng.choice(surnames)}"
        papers.append(
            ListPaper.of(f"2{number:03d}.{number:05d}", title, [author], [f"{2015 + number % 9}-01-01"])
        )
    matcher = ReferenceMatcher(papers)
    found = 0
    for _ in range(400):
        paper = rng.choice(papers)
        words = paper.title.split()
        quoted = " ".join(words[rng.randint(0, len(words) - 1) :]) if rng.random() < 0.4 else paper.title
        year = rng.choice(sorted(paper.years))
        text = f"{rng.choice(surnames)}, X. et al. {quoted}. Proc. {year}."
        reference = Reference(text=text, page=1, arxiv_ids=arxiv_ids_in(text))
        expected = every_title_tried(matcher, reference, citing=papers[0].arxiv_id)
        assert [(m.arxiv_id, m.how) for m in matcher.match(reference, citing=papers[0].arxiv_id)] == expected
        found += bool(expected)
    assert found > 200  # most entries name list papers, by title or by author and year


def test_squeeze_keeps_letters_and_digits_only():
    assert squeeze("Rozière & Co.: Pre-\ntraining  vs. w/ GPT-4") == "roziereandcopretrainingversuswithgpt4"


def parsed_paper(text: str, references_at: int) -> ParsedPaper:
    return ParsedPaper(
        arxiv_id="2401.00001",
        text=text,
        pages=[PageSpan(1, 0, references_at), PageSpan(2, references_at, len(text))],
        sections=[Section("References", references_at, 2)],
        references_span=(references_at, len(text)),
    )


def test_entries_numbered_in_one_paragraph_or_broken_over_pages():
    body = "We follow Vaswani et al. (2017) and [2] closely, as [1, 3-4] do.\n\n"
    refs = (
        "References\n\n[1] A. One. First title. 2020. [2] B. Two. Second title. 2021.\n\n"
        "[3] C. Three and D. Four. A title broken over\n\n"
        "Two Pages. In Proceedings, 2019.\n\n[4] E. Five. Last. 2018."
    )
    entries = read_references(parsed_paper(body + refs, len(body))).references
    assert [e.label for e in entries] == ["1", "2", "3", "4"]
    assert entries[2].text == "[3] C. Three and D. Four. A title broken over Two Pages. In Proceedings, 2019."
    assert [e.cited_on for e in entries] == [1, 1, 1, 1]


def test_author_year_entries_find_their_citing_page():
    body = "Intro.\n\nAs Vaswani et al. (2017) showed, attention suffices.\n\n"
    refs = "References\n\nAshish Vaswani and Noam Shazeer. 2017. Attention is all you need.\n\nNobody. 2001. Unused."
    entries = read_references(parsed_paper(body + refs, len(body))).references
    assert [(e.cited_on, e.label) for e in entries] == [(1, ""), (None, "")]


def test_entry_titles():
    assert (
        entry_title("[3] J. Devlin and M. Chang. 2019. BERT: pre-training. In NAACL.") == "BERT: pre-training"
    )
    assert entry_title(
        "A. Desmaison, and A. Lerer, “Automatic differentiation in pytorch,” in NIPS-W. 2017."
    ) == ("Automatic differentiation in pytorch")
    assert entry_title("Jason Wei, Yi Tay. Emergent abilities. TMLR, 2022.") == "Emergent abilities"


def test_graph_file_round_trip():
    graph = CitationGraph((Citation("a", "b", 3, "id"), Citation("c", "b", None, "title")))
    assert read_graph(graph_bytes(graph)) == graph
    assert graph.cited_counts() == {"b": 2}


# --- the generated list -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def citing_mirror(tmp_path_factory) -> Path:
    return citing.write_citing_mirror(tmp_path_factory.mktemp("citing-mirror"))


def list_of(mirror: Path) -> list[ListPaper]:
    papers = []
    for arxiv_id in (citing.A, citing.B, citing.C, citing.D):
        meta = json.loads((mirror / "meta" / f"{arxiv_id}.json").read_text(encoding="utf-8"))
        papers.append(ListPaper.of(arxiv_id, meta["title"], meta["authors"], [meta["version_date"]]))
    return papers


def references_of(mirror: Path):
    ids = (citing.A, citing.B, citing.C, citing.D)
    return [read_references(parse_pdf(mirror / "pdf" / f"{arxiv_id}.pdf", arxiv_id)) for arxiv_id in ids]


def test_the_generated_list_gives_the_exact_graph(citing_mirror):
    graph = build_graph(references_of(citing_mirror), ReferenceMatcher(list_of(citing_mirror)))
    assert {(c.citing, c.cited, c.page, c.how) for c in graph.citations} == citing.expected()
    assert citing_page(citing.A) > 1 and citing_page(citing.B) > 1  # real pages, not the first


def citing_page(arxiv_id: str) -> int:
    return citing.citing_page(arxiv_id)


def test_missing_works_on_the_generated_list(citing_mirror):
    works = missing_works(references_of(citing_mirror), ReferenceMatcher(list_of(citing_mirror)), 2)
    assert [(w.arxiv_id, w.title.lower(), len(w.cited_by)) for w in works] == [
        (citing.VASWANI, "attention is all you need", 4),
        ("", "long short-term memory", 2),
    ]


def test_suggest_command(citing_mirror, tmp_path, capsys):
    corpus = tmp_path / "readingroom.toml"
    corpus.write_text("".join(f'[[paper]]\nid = "{i}"\n\n' for i in (citing.A, citing.B, citing.C, citing.D)))
    common = ["--corpus", str(corpus), "--cache", str(tmp_path / "cache"), "--mirror", str(citing_mirror)]
    assert main(["suggest", *common, "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["papers"] == 4
    assert [(w["arxiv_id"], w["cited_by_count"]) for w in printed["works"]] == [
        (citing.VASWANI, 4),
        (None, 2),
    ]
    assert "Long short-term memory" in printed["works"][1]["reference"]
    assert main(["suggest", *common, "--min", "3"]) == 0
    text = capsys.readouterr()
    assert f"(arXiv:{citing.VASWANI})" in text.out and "Long short-term" not in text.out
    assert "python -m builder add ID" in text.err
    assert (tmp_path / "cache" / "references").is_dir()  # kept for the next run
    with pytest.raises(SystemExit):
        main(["suggest", *common, "--min", "0"])
