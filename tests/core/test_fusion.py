import pytest

from readingroom_core.fusion import (
    Fused,
    diversify,
    min_max_normalize,
    ranks_by_doc,
    reciprocal_rank_fusion,
    single_ranking,
    weighted_score_fusion,
)

BM25 = [(7, 12.0), (3, 9.0), (5, 4.0)]
DENSE = [(3, 0.80), (9, 0.70), (7, 0.60), (1, 0.55)]


def test_ranks_are_one_based_and_none_where_missing():
    ranks = ranks_by_doc({"bm25": BM25, "dense": DENSE})
    assert ranks[7] == {"bm25": 1, "dense": 3}
    assert ranks[5] == {"bm25": 3, "dense": None}
    assert ranks[1] == {"bm25": None, "dense": 4}
    assert set(ranks) == {1, 3, 5, 7, 9}


def test_rrf_by_hand():
    fused = reciprocal_rank_fusion({"bm25": BM25, "dense": DENSE}, k=60)
    scores = {result.doc_id: result.score for result in fused}
    assert scores[3] == pytest.approx(1 / 62 + 1 / 61)
    assert scores[7] == pytest.approx(1 / 61 + 1 / 63)
    assert scores[9] == pytest.approx(1 / 62)  # in one list only: the other adds nothing
    assert scores[5] == pytest.approx(1 / 63)
    assert scores[1] == pytest.approx(1 / 64)
    assert [result.doc_id for result in fused] == [3, 7, 9, 5, 1]
    assert fused[0].ranks == {"bm25": 2, "dense": 1}


def test_rrf_k_changes_the_balance():
    # With k=0 a single first place (1/1) beats second and third places together (1/2 + 1/3).
    fused = reciprocal_rank_fusion(
        {"a": [(1, 1.0), (2, 0.5), (3, 0.1)], "b": [(4, 1.0), (3, 0.5), (2, 0.1)]}, k=0
    )
    assert [result.doc_id for result in fused][:2] == [1, 4]
    fused_60 = reciprocal_rank_fusion(
        {"a": [(1, 1.0), (2, 0.5), (3, 0.1)], "b": [(4, 1.0), (3, 0.5), (2, 0.1)]}
    )
    assert {result.doc_id for result in fused_60[:2]} == {2, 3}


def test_rrf_ties_break_by_doc_id():
    fused = reciprocal_rank_fusion({"bm25": [(8, 3.0), (2, 1.0)], "dense": [(2, 0.9), (8, 0.1)]})
    assert [result.doc_id for result in fused] == [2, 8]
    assert fused[0].score == fused[1].score


def test_min_max():
    assert min_max_normalize([12.0, 9.0, 4.0]) == [1.0, 0.625, 0.0]
    assert min_max_normalize([0.5, 0.5]) == [1.0, 1.0]
    assert min_max_normalize([3.0]) == [1.0]
    assert min_max_normalize([]) == []


def test_weighted_fusion_by_hand():
    fused = weighted_score_fusion({"bm25": BM25, "dense": DENSE}, {"dense": 0.6, "bm25": 0.4})
    scores = {result.doc_id: result.score for result in fused}
    # bm25 normalised: 7 -> 1, 3 -> 0.625, 5 -> 0; dense: 3 -> 1, 9 -> 0.6, 7 -> 0.2, 1 -> 0
    assert scores[3] == pytest.approx(0.4 * 0.625 + 0.6 * 1.0)
    assert scores[7] == pytest.approx(0.4 * 1.0 + 0.6 * 0.2)
    assert scores[9] == pytest.approx(0.6 * 0.6)  # missing from bm25: 0 from it
    assert scores[5] == pytest.approx(0.0)
    assert scores[1] == pytest.approx(0.0)
    assert [result.doc_id for result in fused] == [3, 7, 9, 1, 5]  # 1 and 5 tie at 0: doc id decides


def test_weights_decide_the_winner():
    rankings = {"bm25": [(1, 10.0), (2, 0.0)], "dense": [(2, 0.9), (1, 0.1)]}
    assert weighted_score_fusion(rankings, {"dense": 0.6, "bm25": 0.4})[0].doc_id == 2
    assert weighted_score_fusion(rankings, {"dense": 0.3, "bm25": 0.7})[0].doc_id == 1


def test_raw_scores_are_never_added():
    # BM25 scores in the hundreds would swamp cosine similarities if added raw; normalised they do not.
    rankings = {"bm25": [(1, 300.0), (2, 299.0)], "dense": [(2, 0.9), (1, 0.2)]}
    assert weighted_score_fusion(rankings, {"dense": 0.6, "bm25": 0.4})[0].doc_id == 2


def test_weighted_fusion_needs_every_weight():
    with pytest.raises(ValueError, match="dense"):
        weighted_score_fusion({"bm25": BM25, "dense": DENSE}, {"bm25": 1.0})


def test_single_ranking_keeps_its_scores_and_names_the_absent_retriever():
    fused = single_ranking("bm25", BM25, ("bm25", "dense"))
    assert fused[1] == Fused(3, 9.0, {"bm25": 2, "dense": None})


def _results(*doc_ids):
    return [Fused(doc_id, 1.0 / (position + 1)) for position, doc_id in enumerate(doc_ids)]


# doc id -> (paper, section): docs 0-5 are paper A (sections s1: 0-3, s2: 4-5), 6-9 paper B (s1).
GROUPS = {
    **{d: ("A", "s1") for d in range(4)},
    4: ("A", "s2"),
    5: ("A", "s2"),
    **{d: ("B", "s1") for d in range(6, 10)},
}
# doc id -> pages it spans; each doc has a page of its own unless a test says otherwise.
OWN_PAGE = {d: range(d, d + 1) for d in range(10)}


def _diversify(results, k, per_paper, per_section, per_page=0, pages=OWN_PAGE):
    return [
        r.doc_id
        for r in diversify(
            results,
            k,
            lambda d: GROUPS[d][0],
            lambda d: GROUPS[d][1],
            pages.__getitem__,
            per_paper,
            per_section,
            per_page,
        )
    ]


def test_caps_skip_and_later_results_fill_the_page():
    results = _results(0, 1, 2, 4, 5, 3, 6, 7, 8, 9)
    assert _diversify(results, 5, per_paper=3, per_section=2) == [0, 1, 4, 6, 7]


def test_section_cap_is_per_paper_and_section():
    # Paper B's "s1" is a different section from paper A's "s1".
    results = _results(0, 6, 1, 7, 2, 8)
    assert _diversify(results, 6, per_paper=0, per_section=1) == [0, 6]
    assert _diversify(results, 6, per_paper=0, per_section=2) == [0, 6, 1, 7]


def test_zero_means_unlimited():
    results = _results(0, 1, 2, 3, 4, 5)
    assert _diversify(results, 4, per_paper=0, per_section=0) == [0, 1, 2, 3]


def test_fewer_than_k_when_the_caps_leave_too_few():
    assert _diversify(_results(0, 1, 2, 3), 3, per_paper=1, per_section=1) == [0]


def test_diversity_keeps_order_and_stops_at_k():
    results = _results(6, 0, 7, 4, 8, 1, 9)
    assert _diversify(results, 3, per_paper=2, per_section=2) == [6, 0, 7]


def test_page_cap_skips_a_chunk_on_a_page_already_cited():
    # Paper A: doc 0 spans pages 1-2, doc 1 is on page 2, doc 2 on page 3; paper B's doc 6 is also "page 2".
    pages = {0: range(1, 3), 1: range(2, 3), 2: range(3, 4), 6: range(2, 3), 7: range(2, 4)}
    results = _results(0, 1, 6, 2, 7)
    assert _diversify(results, 5, per_paper=0, per_section=0, per_page=1, pages=pages) == [0, 6, 2]
    assert _diversify(results, 5, per_paper=0, per_section=0, per_page=2, pages=pages) == [0, 1, 6, 2, 7]
    assert _diversify(results, 5, per_paper=0, per_section=0, per_page=0, pages=pages) == [0, 1, 6, 2, 7]
