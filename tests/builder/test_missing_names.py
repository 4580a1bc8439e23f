"""The works the list cites and lacks as the site stores them (builder/writers/missing.py): read from
real PDFs (the suite's generated papers, given reference lists and citing sentences), each with the
pages that cite it and the name its citing papers give it ("Chinchilla [2]", "Chinchilla (Hoffmann et
al., 2022)"), and the rules that keep those names conservative."""

from __future__ import annotations

from support import corpus, missing_list

from builder.citation_match import ListPaper, ReferenceMatcher
from builder.missing_names import name_before, title_words, work_names
from builder.references import read_references
from builder.stages.parse import parse_pdf
from builder.writers.missing import site_missing_works
from readingroom_core.formats.missing import read_missing
from readingroom_core.readers.missing import MissingIndex


def _paper(tmp_path, topic: corpus.Topic):
    data, fact_pages = corpus.write_pdf(topic, 1)
    path = tmp_path / f"{topic.arxiv_id}.pdf"
    path.write_bytes(data)
    return topic, parse_pdf(path, topic.arxiv_id), fact_pages[topic.sections[1]]


def test_a_work_two_papers_cite_is_stored_with_its_name_pages_and_id(tmp_path):
    made = [_paper(tmp_path, topic) for topic in missing_list.topics().values()]
    references = [read_references(parsed) for _, parsed, _ in made]
    matcher = ReferenceMatcher(
        [ListPaper.of(t.arxiv_id, t.title, t.authors, [t.published[:10]]) for t, _, _ in made]
    )
    parsed = {t.arxiv_id: p for t, p, _ in made}
    works = site_missing_works(references, matcher, parsed, [t.title for t, _, _ in made])
    assert len(works) == 1  # Vaswani and Hochreiter are cited once each: no gap in the list
    work = works[0]
    assert work.arxiv_id == missing_list.CHINCHILLA_ID and work.title == missing_list.CHINCHILLA_TITLE
    assert work.names == ("Chinchilla",)
    assert work.cited_by == tuple((t.arxiv_id, page) for t, _, page in made)
    assert all(page > 1 for _, _, page in made)  # the citing sentence's own page, not the first
    assert MissingIndex(works).match("chinchilla") == works  # what the site's search then finds


def test_a_name_is_the_word_right_before_a_citation():
    body = "Models such as Chinchilla (Hoffmann et al., 2022) and PaLM [4] or GPT-4 [5]; see Table [6]."
    assert name_before(body, body.index("(Hoffmann")) == "Chinchilla"
    assert name_before(body, body.index("[4]")) == "PaLM"
    assert name_before(body, body.index("[5]")) == "GPT-4"
    assert name_before(body, body.index("[6]")) == ""  # a word that points into the paper
    text = "As shown by Hoffmann et al. (2022), and recently, [7] agrees."
    assert name_before(text, text.index("Hoffmann")) == ""  # "by": no name
    assert name_before(text, text.index("[7]")) == ""  # a comma between


def test_names_used_once_or_found_in_the_lists_titles_are_dropped():
    listed = title_words(["Transformer-XL: Attentive language models", "Sparse Transformers"])
    assert work_names(["Transformer", "Transformer", "LSTM"], listed) == []
    assert work_names(["LSTM", "LSTMs", "LSTM", "LSTMs", "GRU"], listed) == ["LSTM", "LSTMs"]
    assert read_missing  # the file's codec: tests/core/test_missing_index.py
