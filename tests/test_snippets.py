import re

from readingroom_core.analysis import analyze, parse_query
from readingroom_core.snippets import ELLIPSIS, find_matches, make_snippet

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
