"""The paper view of hybrid search: each paper's vector (its abstract and its chunks) lifts the passages of
papers that are about the question, and brings in their opening passage when words do not match."""

import math

import numpy as np
import pytest

from builder.stages.embed import about_text, paper_vector
from builder.writers.papers import paper_vectors_bytes
from readingroom_core.browser import open_folder
from readingroom_core.filters import Allowed
from readingroom_core.formats.papers import PaperRecord, PaperVector, read_papers
from readingroom_core.fusion import Fused, with_paper_prior
from readingroom_core.options import SearchOptions
from readingroom_core.packedrows import MAX_QUERY
from readingroom_core.paperview import PaperView, most_similar_first
from readingroom_core.ranges import folder_reader
from readingroom_core.readers.papers import read_paper_vectors

NO_SHARED_WORD = "zzqx vvqk"  # no term of the corpus: BM25 finds nothing, only the semantic side speaks


def unit(values) -> list[float]:
    norm = math.sqrt(sum(v * v for v in values))
    return [v / norm for v in values]


def cosine(a, b) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / math.sqrt(
        sum(x * x for x in a) * sum(y * y for y in b)
    )


def test_a_paper_vector_keeps_its_direction_in_512_characters():
    rng = np.random.default_rng(7)
    for _ in range(20):
        vector = rng.normal(size=384)
        text = PaperVector.encode(vector.tolist())
        assert len(text) == 512
        assert cosine(PaperVector.decode(text), vector) > 0.999
    assert PaperVector.decode(PaperVector.encode([0.0, -1.0, 0.5])) == [0, -127, 64]


def test_the_paper_vector_weighs_abstract_and_chunks_alike():
    chunks = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]], dtype=np.float32)
    about = np.array([0.0, 0.0, 1.0], dtype=np.float32)
    both = paper_vector(chunks, about)
    assert np.linalg.norm(both) == pytest.approx(1.0)
    assert both[2] == pytest.approx(math.hypot(both[0], both[1]), rel=1e-5)  # unit chunk mean + unit abstract
    assert paper_vector(chunks, None) == pytest.approx(np.array([1, 1, 0]) / math.sqrt(2))
    assert about_text("Title", "  An   abstract.\n") == "Title. An abstract."
    assert about_text("Title", "") == ""


def test_the_paper_prior_adds_normalised_paper_scores():
    fused = [Fused(0, 1.0, {}), Fused(1, 0.9, {}), Fused(2, 0.1, {})]
    paper_of = {0: 0, 1: 1, 2: 1}.__getitem__
    lifted = with_paper_prior(fused, paper_of, {0: 0.2, 1: 0.6, 2: 0.4}, 0.3)
    assert [(r.doc_id, round(r.score, 6)) for r in lifted] == [(1, 1.2), (0, 1.0), (2, 0.4)]
    assert with_paper_prior(fused, paper_of, {}, 0.3) == fused
    assert with_paper_prior(fused, paper_of, {0: 0.2, 1: 0.6}, 0.0) == fused


def _paper(number: int, vector: list[float] | None) -> PaperRecord:
    encoded = PaperVector.encode(vector) if vector is not None else None
    return PaperRecord(str(number), f"Paper {number}", 10 * number, 10, vector=encoded)


def _view(papers: list[PaperRecord]) -> PaperView:
    """The view as the engine makes it: the vectors read from the file the builder writes of them."""
    data = paper_vectors_bytes(papers)
    return PaperView(papers, None if data is None else lambda: read_paper_vectors(data, len(papers)))


def _site_vectors(site) -> list[list[int]]:
    """The int8 rows of the site's paper vectors file, as written, one per paper."""
    data = site.engine.read(site.manifest.files.paper_vectors)
    size = len(data) // len(site.engine.papers)
    signed = memoryview(data).cast("b")
    return [list(signed[at : at + size]) for at in range(0, len(data), size)]


def test_the_paper_view_scores_papers_and_adds_the_closest_openings():
    view = _view([_paper(0, [1.0, 0.0]), _paper(1, [0.6, 0.8]), _paper(2, [0.0, 1.0])])
    similarities = view.similarities([0.0, 1.0])
    assert similarities == pytest.approx({0: 0.0, 1: 0.8, 2: 1.0}, abs=0.01)
    dense = [(15, 0.9), (3, 0.2)]
    assert view.with_openings(dense, similarities, 2, None) == [
        (20, similarities[2]),
        (15, 0.9),
        (10, similarities[1]),
        (3, 0.2),
    ]
    only_first = Allowed(lambda doc_id: doc_id < 10, 10)  # the closest papers' openings are not allowed
    assert view.with_openings(dense, similarities, 1, only_first) == [
        (15, 0.9),
        (3, 0.2),
        (0, similarities[0]),
    ]
    assert view.with_openings(dense, similarities, 0, None) == dense


@pytest.mark.parametrize("first", range(8))
def test_papers_come_most_similar_first_ties_by_index_however_far_the_caller_reads(first):
    similarities = {0: 0.5, 1: 0.9, 2: 0.5, 3: 0.9, 4: 0.1, 5: 0.5}
    assert list(most_similar_first(similarities, first)) == [1, 3, 0, 2, 5, 4]


def test_no_paper_view_where_a_paper_has_no_vector():
    view = _view([_paper(0, [1.0, 0.0]), _paper(1, None)])
    assert view.similarities([1.0, 0.0]) == {}
    assert view.with_openings([(3, 0.5)], {}, 3, None) == [(3, 0.5)]


def test_every_paper_of_a_built_site_carries_its_vector(built_sites):
    site = open_folder(built_sites.second)
    full = read_papers(folder_reader(built_sites.second)(site.manifest.files.papers))
    vectors = _site_vectors(site)
    assert len(vectors) == len(full) == len(site.engine.papers)
    for paper, row in zip(full, vectors, strict=True):  # the search's rows are the papers file's vectors
        assert paper.vector is not None and PaperVector.decode(paper.vector) == row
        assert len(row) == site.manifest.model.dims
    query = unit(vectors[0])
    expected = {i: cosine(query, row) for i, row in enumerate(vectors)}
    # each component of the query is held to within half a step of MAX_QUERY's resolution
    step = max(map(abs, query)) / MAX_QUERY
    bound = max(step / 2 * sum(map(abs, row)) / math.sqrt(sum(x * x for x in row)) for row in vectors)
    assert _view(full).similarities(query) == pytest.approx(expected, abs=bound)


def test_a_query_about_a_paper_finds_its_opening_passage(built_sites):
    """With no word in common, the query closest to a paper's own vector is answered from that paper,
    its opening passage included; without the paper view that opening is not among the results."""
    site = open_folder(built_sites.second)
    engine = site.engine
    for paper, vector in zip(engine.papers, _site_vectors(site), strict=True):
        query = unit(vector)
        opening = paper.first_chunk
        hits = engine.search(NO_SHARED_WORD, query, SearchOptions(k=5))
        assert hits[0].arxiv_id == paper.id
        assert opening in [hit.doc_id for hit in hits]
        plain = engine.search(NO_SHARED_WORD, query, SearchOptions(k=5, paper_weight=0, paper_openings=0))
        lifted = {hit.doc_id: hit.score for hit in hits}
        for hit in plain:  # the prior only adds: every passage of the paper scores higher than before
            if hit.arxiv_id == paper.id and hit.doc_id in lifted:
                assert lifted[hit.doc_id] > hit.score


def test_filters_keep_the_paper_view_inside_them(built_sites):
    site = open_folder(built_sites.second)
    engine = site.engine
    other = engine.papers[1]
    query = unit(_site_vectors(site)[0])
    hits = engine.search(f"{NO_SHARED_WORD} id:{other.id}", query, SearchOptions(k=5))
    assert hits and {hit.arxiv_id for hit in hits} == {other.id}


def test_dense_and_bm25_modes_are_left_as_they_are(built_sites):
    site = open_folder(built_sites.second)
    engine = site.engine
    query = unit(_site_vectors(site)[0])
    for mode in ("dense", "bm25"):
        with_view = engine.search("spin couplings", query, SearchOptions(k=10, mode=mode))
        without = engine.search(
            "spin couplings", query, SearchOptions(k=10, mode=mode, paper_weight=0, paper_openings=0)
        )
        assert [(h.doc_id, h.score) for h in with_view] == [(h.doc_id, h.score) for h in without]


def test_negative_paper_settings_are_refused(built_sites):
    engine = open_folder(built_sites.second).engine
    with pytest.raises(ValueError, match="paper_weight"):
        engine.search("spin", None, SearchOptions(paper_weight=-1))
