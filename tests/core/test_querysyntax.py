"""The search box's grammar: terms, "quoted phrases" and field filters, and what the encoder reads."""

import pytest

from readingroom_core.filters import Filters, merge_filters
from readingroom_core.querysyntax import (
    QuerySyntaxError,
    embedding_text,
    field_spans,
    free_text,
    parse_search,
    parse_year,
)

TAGS = ["finetuning", "rag", "retrieval"]


# --- field filters ------------------------------------------------------------------------------------


def test_field_filters_are_parsed_out_of_the_query():
    query, filters = parse_search(
        'low-rank year:2020..2023 cat:cs.CL tag:rag id:2005.11401v2 author:"van der" x', TAGS
    )
    assert query.terms == ["lowrank", "low", "rank"]
    assert filters == Filters(
        year_min=2020,
        year_max=2023,
        categories=("cs.CL",),
        tags=("rag",),
        paper_ids=("2005.11401v2",),
        authors=("van der",),
    )


def test_repeated_fields_are_alternatives_and_years_intersect():
    query, filters = parse_search("attention cat:cs.CL CAT:cs.CV year:>=2020 year:<2023", TAGS)
    assert query.terms == ["attent"]
    assert filters.categories == ("cs.CL", "cs.CV")
    assert (filters.year_min, filters.year_max) == (2020, 2022)


def test_phrases_survive_field_parsing():
    query, filters = parse_search('"low-rank adaptation" author:hu', TAGS)
    assert query.phrases == [["low", "rank", "adapt"]]
    assert filters.authors == ("hu",)


def test_words_with_colons_that_are_not_fields_stay_text():
    query, filters = parse_search("ratio:3 foo:bar", TAGS)
    assert filters.is_empty()
    assert "ratio" in query.terms and "foo" in query.terms


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2021", (2021, 2021)),
        ("2020..2023", (2020, 2023)),
        ("2020..", (2020, None)),
        ("..2023", (None, 2023)),
        (">=2021", (2021, None)),
        (">2021", (2022, None)),
        ("<=2021", (None, 2021)),
        ("<2021", (None, 2020)),
    ],
)
def test_year_values(value, expected):
    assert parse_year(value) == expected


@pytest.mark.parametrize("value", ["20", "..", "2021-2023", "recent"])
def test_bad_year_values_are_refused(value):
    with pytest.raises(QuerySyntaxError, match="year:"):
        parse_search(f"attention year:{value}", TAGS)


def test_merge_intersects_years_and_joins_lists():
    merged = merge_filters(
        Filters(year_min=2019, categories=("cs.CL",)),
        Filters(year_min=2021, year_max=2022, categories=("cs.CL", "cs.IR")),
    )
    assert merged == Filters(year_min=2021, year_max=2022, categories=("cs.CL", "cs.IR"))


def test_a_tag_is_read_as_the_corpus_spells_it():
    assert parse_search("tag:RAG tag:fine", TAGS)[1].tags == ("rag", "finetuning")
    with pytest.raises(QuerySyntaxError, match="tag:r matches several tags; the tags are rag, retrieval"):
        parse_search("tag:r", TAGS)
    with pytest.raises(
        QuerySyntaxError, match="tag:cooking is not a tag of this corpus; the tags are finetuning"
    ):
        parse_search("cooking tag:cooking", TAGS)


# --- what else reads the query string ------------------------------------------------------------------


def test_the_encoder_reads_the_query_without_its_field_filters():
    query = 'low-rank  adapters year:2020..2023 author:"van der" cat:cs.CL "exact phrase" id:2106.09685'
    assert embedding_text(query) == 'low-rank adapters "exact phrase"'


def test_field_spans_cover_each_filter_and_its_value():
    query = 'attention year:2021 author:"van der" ratio:3'
    assert [query[start:end] for start, end in field_spans(query)] == ["year:2021", 'author:"van der"']


def test_free_text_keeps_the_words_of_plain_text_queries():
    """Query sets written as plain text (BEIR) must not trigger phrase or field syntax."""
    assert (
        free_text('what "id:42" means for year:2020 Cat:dogs') == "what  id 42  means for year 2020 Cat dogs"
    )
    assert parse_search(free_text('the "exact" year:2020 claim'), TAGS)[1].is_empty()
