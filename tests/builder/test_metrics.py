import math

import pytest

from builder.evaluation.metrics import dcg, evaluate, mean_metric, mrr_at_k, ndcg_at_k, recall_at_k

LOG2_3 = math.log2(3)
QRELS = {"b": 2, "d": 1, "e": 1, "z": 0}  # z is judged not relevant
RANKED = ["a", "b", "c", "d"]


def test_dcg_discounts_by_log2_of_rank_plus_one():
    assert dcg([3, 2, 1]) == pytest.approx(3 + 2 / LOG2_3 + 1 / 2)
    assert dcg([]) == 0


def test_ndcg_uses_linear_gain_over_the_ideal_top_k():
    # DCG@3 = 2/log2(3); ideal@3 = grades 2, 1, 1 = 2 + 1/log2(3) + 1/2
    assert ndcg_at_k(RANKED, QRELS, 3) == pytest.approx((2 / LOG2_3) / (2 + 1 / LOG2_3 + 0.5))
    # DCG@4 adds d at rank 4: 1/log2(5); ideal@4 is still the three relevant docs
    expected = (2 / LOG2_3 + 1 / math.log2(5)) / (2 + 1 / LOG2_3 + 0.5)
    assert ndcg_at_k(RANKED, QRELS, 4) == pytest.approx(expected)


def test_ndcg_graded_order_matters_and_is_not_exponential():
    qrels = {"x": 2, "y": 1}
    assert ndcg_at_k(["x", "y"], qrels, 10) == pytest.approx(1.0)
    # trec_eval gain = grade: (1 + 2/log2 3) / (2 + 1/log2 3); 2**grade - 1 would give about 0.797
    assert ndcg_at_k(["y", "x"], qrels, 10) == pytest.approx((1 + 2 / LOG2_3) / (2 + 1 / LOG2_3))
    assert ndcg_at_k(["y", "x"], qrels, 10) == pytest.approx(0.8597, abs=1e-4)


def test_ties_in_grade_give_the_same_score_in_either_order():
    qrels = {"x": 1, "y": 1}
    assert ndcg_at_k(["x", "y"], qrels, 2) == ndcg_at_k(["y", "x"], qrels, 2) == pytest.approx(1.0)
    assert ndcg_at_k(["x", "q", "y"], qrels, 3) == ndcg_at_k(["y", "q", "x"], qrels, 3) < 1


def test_unjudged_and_zero_grade_docs_count_as_not_relevant():
    assert ndcg_at_k(["z", "unjudged"], QRELS, 2) == 0
    assert recall_at_k(["z"], QRELS, 10) == 0
    assert mrr_at_k(["z", "unjudged", "e"], QRELS, 10) == pytest.approx(1 / 3)


def test_recall_counts_relevant_docs_found_within_k():
    assert recall_at_k(RANKED, QRELS, 1) == 0
    assert recall_at_k(RANKED, QRELS, 3) == pytest.approx(1 / 3)
    assert recall_at_k(RANKED, QRELS, 100) == pytest.approx(2 / 3)


def test_mrr_is_the_first_relevant_rank_within_k():
    assert mrr_at_k(RANKED, QRELS, 10) == pytest.approx(1 / 2)
    assert mrr_at_k(RANKED, QRELS, 1) == 0


def test_a_repeated_doc_counts_once():
    qrels = {"x": 1}
    assert ndcg_at_k(["x", "x"], {"x": 1, "y": 1}, 2) == pytest.approx(1 / (1 + 1 / LOG2_3))
    assert mrr_at_k(["q", "q", "x"], qrels, 2) == pytest.approx(1 / 2)  # the second "q" takes no rank


def test_queries_without_relevant_docs_score_zero():
    assert ndcg_at_k(["a"], {"a": 0}, 10) == 0
    assert recall_at_k(["a"], {}, 10) == 0


def test_means_cover_judged_queries_and_missing_runs_score_zero():
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    run = {"q1": ["a"], "q3": ["c"]}  # q2 not run; q3 has no qrels and is not scored
    assert mean_metric(run, qrels, "recall", 10) == pytest.approx(0.5)
    assert evaluate(run, qrels, [("ndcg", 10), ("recall", 100), ("mrr", 10)]) == {
        "ndcg@10": pytest.approx(0.5),
        "recall@100": pytest.approx(0.5),
        "mrr@10": pytest.approx(0.5),
    }


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="k must be >= 1"):
        ndcg_at_k(["a"], {"a": 1}, 0)
    with pytest.raises(ValueError, match="metric must be one of"):
        mean_metric({}, {"q": {"a": 1}}, "map", 10)
    with pytest.raises(ValueError, match="no queries"):
        mean_metric({}, {}, "ndcg", 10)
