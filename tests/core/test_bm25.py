import math
from collections import Counter

import pytest
from support.passages import CORPUS

from readingroom_core.analysis import analyze
from readingroom_core.bm25 import (
    BM25Index,
    build_postings,
    decode_entry,
    encode_entry,
)
from readingroom_core.querysyntax import parse_query

QUERIES = [
    "language models",
    "dropout overfitting",
    "retrieval augmented generation",
    "GPT-3 few-shot",
    "BERT-base fine-tuning",
    "state-of-the-art neural networks",
    "l2 regularization weight decay",
    "2005.11401",
    "normalization training",
    "k-NN",
    "quantum chromodynamics",
]


def reference_bm25(docs: list[str], query: str, k1: float = 1.2, b: float = 0.75) -> list[tuple[int, float]]:
    """Textbook BM25 with Lucene's idf, straight from term counts, best first, ties by doc id."""
    counts = [Counter(analyze(doc)) for doc in docs]
    lengths = [sum(count.values()) for count in counts]
    avgdl = sum(lengths) / len(docs)
    scores = {}
    for doc_id, count in enumerate(counts):
        score, matched = 0.0, False
        for term in dict.fromkeys(parse_query(query).terms):
            if count[term] == 0:
                continue
            matched = True
            df = sum(1 for other in counts if other[term])
            idf = math.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
            tf = count[term]
            score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * lengths[doc_id] / avgdl))
        if matched:
            scores[doc_id] = score
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


def assert_same_ranking(got, expected):
    assert [doc for doc, _ in got] == [doc for doc, _ in expected]
    for (_, got_score), (_, expected_score) in zip(got, expected, strict=True):
        assert got_score == pytest.approx(expected_score, abs=1e-9)


@pytest.fixture(scope="module")
def postings():
    return build_postings(CORPUS)


@pytest.mark.parametrize("query", QUERIES)
def test_scores_match_reference(postings, query):
    index = BM25Index(postings)
    assert_same_ranking(index.search(parse_query(query).terms, k=len(CORPUS)), reference_bm25(CORPUS, query))


def test_top_k_cuts_the_full_ranking(postings):
    full = BM25Index(postings).search(parse_query("language models").terms, k=100)
    assert len(full) > 5
    assert BM25Index(postings).search(parse_query("language models").terms, k=5) == full[:5]
    assert BM25Index(postings).search(["model"], k=0) == []


def test_other_parameters_are_stored_and_used():
    tuned = build_postings(CORPUS, k1=0.9, b=0.4)
    assert (tuned.k1, tuned.b) == (0.9, 0.4)
    got = BM25Index(tuned).search(parse_query("language models").terms, k=50)
    assert_same_ranking(got, reference_bm25(CORPUS, "language models", k1=0.9, b=0.4))


def test_equal_scores_break_ties_by_doc_id(postings):
    hits = BM25Index(postings).search(parse_query("dropout").terms, k=10)
    assert [doc for doc, _ in hits] == [4, 30]  # the same sentence twice
    assert hits[0][1] == hits[1][1]


def test_repeated_query_terms_count_once(postings):
    index = BM25Index(postings)
    assert index.search(["model", "languag", "model"], k=10) == index.search(["model", "languag"], k=10)


def test_common_term_still_scores_positive(postings):
    everywhere = build_postings(["alpha beta", "alpha gamma", "alpha delta"])
    hits = BM25Index(everywhere).search(["alpha"], k=3)
    assert len(hits) == 3 and all(score > 0 for _, score in hits)


def test_filter_applies_while_scoring(postings):
    index = BM25Index(postings)
    terms = parse_query("language models").terms
    best_overall = [doc for doc, _ in index.search(terms, k=3)]
    asked = []

    def allowed(doc_id):
        asked.append(doc_id)
        return doc_id not in best_overall

    hits = index.search(terms, k=3, allowed=allowed)
    assert len(hits) == 3
    assert not {doc for doc, _ in hits} & set(best_overall)
    expected = [hit for hit in reference_bm25(CORPUS, "language models") if hit[0] not in best_overall][:3]
    assert_same_ranking(hits, expected)
    # asked while scoring, not after: the best overall were put to it and kept out
    assert set(best_overall) <= set(asked)


def test_postings_encode_deltas_and_omit_all_one_frequencies():
    assert encode_entry([(3, 1), (7, 2), (8, 1)]) == [[3, 4, 1], [1, 2, 1]]
    assert encode_entry([(0, 1), (5, 1)]) == [[0, 5]]
    assert decode_entry([[3, 4, 1], [1, 2, 1]]) == ([3, 7, 8], [1, 2, 1])
    assert decode_entry([[0, 5]]) == ([0, 5], [1, 1])


def test_postings_hold_what_scoring_needs(postings):
    assert postings.n == len(CORPUS)
    assert postings.doc_lengths == [len(analyze(doc)) for doc in CORPUS]
    assert postings.avgdl == pytest.approx(sum(postings.doc_lengths) / len(CORPUS))
    assert decode_entry(postings.terms["dropout"]) == ([4, 30], [1, 1])


def test_empty_corpus_finds_nothing():
    assert BM25Index(build_postings([])).search(["model"], k=5) == []


def test_ties_at_the_cut_go_to_the_lower_doc_ids():
    same = BM25Index(build_postings(["tied words here"] * 7 + ["tied"]))
    full = same.search(["tie"], k=100)
    assert [doc for doc, _ in full] == [7, 0, 1, 2, 3, 4, 5, 6]  # the short one first, then doc order
    for k in range(1, 9):
        assert same.search(["tie"], k=k) == full[:k]


def test_a_terms_weights_are_kept_and_scores_are_the_same_floats(postings):
    index = BM25Index(postings)
    terms = parse_query("language models scaling").terms
    first = index.search(terms, k=20)
    kept = index.weights("model")
    assert index.search(terms, k=20) == first and index.weights("model") is kept
    assert BM25Index(postings).search(terms, k=20) == first  # a fresh index, nothing kept yet
    # Exactly the float operations of the textbook loop, in query-term order.
    doc_ids, frequencies = index.postings("model")
    idf = math.log(1 + (index.n_docs - len(doc_ids) + 0.5) / (len(doc_ids) + 0.5))
    norms = [index.k1 * (1 - index.b + index.b * dl / index.avgdl) for dl in index.doc_lengths]
    assert kept == (
        doc_ids,
        [idf * f * (index.k1 + 1) / (f + norms[d]) for d, f in zip(doc_ids, frequencies, strict=True)],
    )
    assert index.weights("nosuchterm") is None
