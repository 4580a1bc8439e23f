import re

from readingroom_core.analysis import analyze
from readingroom_core.querysyntax import parse_query
from readingroom_core.snippets import ELLIPSIS, ROW_JOINT, find_matches, is_table_text, make_snippet

FILLER = "Other sections discuss unrelated matters such as the datasets, the hardware and the budget. "
CLUSTER = (
    "Dense retrieval systems retrieve passages from a large corpus; the retriever is trained with in-batch "
    "negatives and retrieval quality improves with more negatives. "
)
LONG = FILLER * 6 + "A lone retrieval mention sits here. " + FILLER * 4 + CLUSTER + FILLER * 6


def _highlighted(snippet):
    return [snippet.text[start:end] for start, end in snippet.highlights]


def test_matches_on_analysed_terms():
    snippet = make_snippet(
        "We study Retrieval, retrievers and how models retrieved it.", parse_query("retrieve").terms
    )
    assert _highlighted(snippet) == ["Retrieval", "retrievers", "retrieved"]


def test_compounds_match_their_joined_and_split_forms():
    text = "GPT-3 is large; gpt3 is the same model, and low-rank updates are cheap."
    assert _highlighted(make_snippet(text, parse_query("gpt3").terms)) == ["GPT-3", "gpt3"]
    assert _highlighted(make_snippet(text, parse_query("rank").terms)) == ["low-rank"]


def test_stop_words_and_accents():
    text = "The naïve Bayes baseline and the Schrödinger bridge of the model."
    snippet = make_snippet(text, parse_query("the naive schrodinger").terms)
    assert _highlighted(snippet) == ["naïve", "Schrödinger"]


def test_every_highlight_is_a_whole_matching_word():
    terms = parse_query("retrieval negatives").terms
    snippet = make_snippet(LONG, terms)
    assert snippet.highlights
    for start, end in snippet.highlights:
        word = snippet.text[start:end]
        assert set(analyze(word)) & set(terms)
        assert start == 0 or not snippet.text[start - 1].isalnum()
        assert end == len(snippet.text) or not snippet.text[end].isalnum()


def test_long_text_is_cut_around_the_densest_cluster_with_ellipses():
    snippet = make_snippet(LONG, parse_query("retrieve negatives").terms)
    assert 200 <= len(snippet.text) <= 300
    assert snippet.text.startswith(ELLIPSIS) and snippet.text.endswith(ELLIPSIS)
    assert "in-batch negatives" in snippet.text  # the cluster, not the lone early mention
    assert "lone" not in snippet.text
    assert len(snippet.highlights) >= 5


def test_cuts_fall_between_words():
    snippet = make_snippet(LONG, parse_query("retrieval").terms)
    body = snippet.text.strip(ELLIPSIS)
    words = set(re.findall(r"\S+", LONG))
    assert all(word in words for word in body.split())


def test_whitespace_is_collapsed_before_offsets_are_taken():
    snippet = make_snippet("Dense\n\n   retrieval\twith   negatives", parse_query("negatives").terms)
    assert snippet.text == "Dense retrieval with negatives"
    assert _highlighted(snippet) == ["negatives"]


def test_no_match_shows_the_beginning():
    snippet = make_snippet(LONG, parse_query("zebra").terms)
    assert snippet.text.startswith("Other sections") and snippet.text.endswith(ELLIPSIS)
    assert snippet.highlights == []
    assert len(snippet.text) <= 300


def test_short_text_is_whole_without_ellipses():
    snippet = make_snippet("Retrieval helps.", parse_query("retrieval").terms)
    assert snippet.text == "Retrieval helps."
    assert snippet.highlights == [(0, 9)]


def test_match_at_the_very_end_is_kept():
    text = FILLER * 5 + "Finally, retrieval."
    snippet = make_snippet(text, parse_query("retrieval").terms)
    assert snippet.text.endswith("retrieval.") and snippet.text.startswith(ELLIPSIS)
    assert _highlighted(snippet) == ["retrieval"]


def test_find_matches_without_terms():
    assert find_matches("anything at all", []) == []


# A results passage as the parser gives it (LoRA 2106.09685, Table 4): table rows are paragraphs of
# numbers, the caption below says the same in words.
TABLE_ROWS = (
    "GPT-3 (FT) 175,255.8M 73.8 89.5 52.0/28.0/44.5\n\n"
    "GPT-3 (BitFit) 14.2M 71.3 91.0 51.3/27.4/43.5\n\n"
    "GPT-3 (LoRA) 4.7M 73.4 91.7 53.8/29.8/45.9\n\n"
    "GPT-3 (LoRA) 37.7M 74.0 91.6 53.4/29.2/45.1"
)
CAPTION = (
    "Table 4: Performance of different adaptation methods on GPT-3 175B. We report the logical form "
    "validation accuracy on WikiSQL, validation accuracy on MultiNLI-matched, and Rouge-1/2/L on SAMSum. "
    "LoRA performs better than prior approaches, including full fine-tuning."
)
RESULTS_PASSAGE = TABLE_ROWS + "\n\n" + CAPTION


def test_table_rows_are_told_from_prose():
    for row in TABLE_ROWS.split("\n\n"):
        assert is_table_text(row), row
    assert is_table_text("Humanities STEM Social Science Others All GPT-3 Gopher Chinchilla LLaMA LLaMA-I")
    assert not is_table_text(CAPTION)
    assert not is_table_text(
        "SQuAD v1.1 question answering Test F1 to 93.2 (1.5 point absolute improvement) and SQuAD v2.0"
    )
    assert not is_table_text("C.2 Ablation for Different Masking Procedures")  # a heading
    assert not is_table_text("Appendix D.1 and Appendix D.2).")  # a broken line of prose


def test_snippet_prefers_the_caption_to_the_table_rows():
    """Issue 12: "accuracy on MMLU compared to GPT-3" showed "GPT-3 (LoRA) 4.7M 73.4 91.7 …" first."""
    snippet = make_snippet(RESULTS_PASSAGE, parse_query("accuracy compared to GPT-3").terms)
    assert snippet.text.startswith(ELLIPSIS + "Table 4: Performance of different adaptation methods")
    assert "73.4" not in snippet.text
    assert _highlighted(snippet)[:3] == ["GPT-3", "accuracy", "accuracy"]


def test_snippet_shows_table_rows_apart_when_only_the_table_matches():
    """A query only a row answers gets the row, its neighbours kept apart rather than run together."""
    snippet = make_snippet(RESULTS_PASSAGE, parse_query("BitFit").terms)
    assert snippet.text.startswith(
        f"{ELLIPSIS}GPT-3 (BitFit) 14.2M 71.3 91.0 51.3/27.4/43.5{ROW_JOINT}GPT-3 (LoRA)"
    )
    assert _highlighted(snippet) == ["BitFit"]
    for start, end in snippet.highlights:
        assert snippet.text[start:end] == "BitFit"


def test_no_match_in_a_results_passage_shows_its_prose():
    snippet = make_snippet(RESULTS_PASSAGE, parse_query("zebra").terms)
    assert snippet.text.startswith(ELLIPSIS + "Table 4: Performance") or snippet.text.startswith("Table 4")
    assert snippet.highlights == []


def test_paragraphs_of_prose_join_with_a_plain_space():
    text = "Dense retrieval works.\n\nIt needs negatives."
    assert (
        make_snippet(text, parse_query("negatives").terms).text
        == "Dense retrieval works. It needs negatives."
    )
