"""The search engine over a small real site: 5 papers, 40 passages, MiniLM vectors, a usearch file."""

from __future__ import annotations

import ast
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import readingroom_core
from builder.site.search_files import plain_name, search_index_files
from builder.writers.texts import preset_dictionary, texts_file_bytes
from readingroom_core.analysis import analyze
from readingroom_core.bm25 import BM25Index, build_postings
from readingroom_core.engine import SearchEngine
from readingroom_core.filters import Filters
from readingroom_core.formats.chunks import ChunkTable, chunk_table_bytes
from readingroom_core.formats.dense import read_dense_directory
from readingroom_core.formats.manifest import DataFiles
from readingroom_core.formats.papers import PaperRecord, SectionEntry, papers_bytes
from readingroom_core.formats.texts import PaperText, TextChunk
from readingroom_core.options import SearchOptions
from readingroom_core.querysyntax import QuerySyntaxError
from readingroom_core.readers.dense import fine_query

PAPERS = [
    {
        "id": "2001.00101",
        "title": "Retrieval-Augmented Generation for Knowledge-Intensive Tasks",
        "authors": ["Patrick Lewis", "Ethan Perez"],
        "year": 2020,
        "categories": ["cs.CL", "cs.LG"],
        "tags": ["rag"],
        "sections": {
            "1 Introduction": [
                "Large pre-trained language models store factual knowledge in their parameters, but their "
                "ability to access and precisely manipulate that knowledge is still limited.",
                "We explore a general-purpose fine-tuning recipe for retrieval-augmented generation, which "
                "combines pre-trained parametric and non-parametric memory for language generation.",
                "Our models retrieve documents from a dense vector index of Wikipedia and condition the "
                "sequence-to-sequence generator on the retrieved passages.",
            ],
            "2 Methods": [
                "The retriever returns the top-k documents for an input query, and the generator produces "
                "the output token by token while marginalising over the retrieved documents.",
                "We compare two formulations: one conditions on the same retrieved passages for the whole "
                "sequence, the other can use a different passage for each generated token.",
                "Training is end-to-end: we minimise the negative marginal log-likelihood of each target "
                "and fine-tune the query encoder together with the generator.",
            ],
            "3 Results": [
                "On open-domain question answering our approach sets a new state of the art, and it "
                "generates more specific, diverse and factual language than a parametric-only baseline.",
                "Hot-swapping the document index lets us update the knowledge of the model without any "
                "retraining, simply by replacing the Wikipedia dump it reads from.",
            ],
        },
    },
    {
        "id": "2106.00202",
        "title": "Low-Rank Adaptation of Large Language Models",
        "authors": ["Edward Hu", "Yelong Shen"],
        "year": 2021,
        "categories": ["cs.CL"],
        "tags": ["finetuning"],
        "sections": {
            "1 Introduction": [
                "Fine-tuning every weight of a large pre-trained model becomes prohibitively expensive as "
                "models grow to hundreds of billions of weights.",
                "We propose low-rank adaptation, which freezes the pre-trained weights and injects trainable "
                "rank decomposition matrices into each layer of the Transformer architecture.",
                "Compared with full fine-tuning, low-rank adaptation reduces the number of trainable "
                "weights by ten thousand times and the GPU memory requirement by three times.",
            ],
            "4 Method": [
                "For a weight matrix W we constrain its update by a low-rank decomposition W + BA, where B "
                "and A are trained while W stays frozen.",
                "The learned matrices can be merged with the frozen weights at deployment, so inference "
                "latency is the same as for the original network.",
                "We apply the update to the attention projection matrices only and leave the feed-forward "
                "layers untouched, which already recovers most of the quality.",
            ],
            "7 Analysis": [
                "A very small rank such as one or two suffices for the query and value projections, which "
                "suggests the weight update has a very low intrinsic rank.",
                "The low-rank update amplifies directions that were already present in the pre-trained "
                "weights but were not emphasised.",
            ],
        },
    },
    {
        "id": "1904.00303",
        "title": "Dense Passage Retrieval for Open-Domain Question Answering",
        "authors": ["Vladimir Karpukhin", "Barlas Oguz"],
        "year": 2019,
        "categories": ["cs.IR", "cs.CL"],
        "tags": ["rag", "retrieval"],
        "sections": {
            "1 Introduction": [
                "Open-domain question answering relies on efficient passage retrieval to select candidate "
                "contexts, and sparse vector space models such as TF-IDF or BM25 are the de facto method.",
                "We show that retrieval can be practically implemented using dense representations alone, "
                "where embeddings are learned from a small number of questions and passages.",
            ],
            "3 Dense Passage Retriever": [
                "A dual encoder maps every passage to a real-valued vector and builds an index for all "
                "passages that we use for retrieval at query time.",
                "Training uses in-batch negatives: the gold passages of the other questions in a mini-batch "
                "serve as negative examples, which makes training efficient.",
                "We rank passages with low latency using maximum inner product search, although domain "
                "adaptation to new corpora remains an open problem.",
            ],
            "5 Experiments": [
                "Our dense retriever outperforms a strong Lucene BM25 system by nine to nineteen points in "
                "top-20 passage retrieval accuracy.",
                "Exact keyword matches such as rare entity names are still found more reliably by the "
                "sparse term-matching system than by the dense model.",
                "Combining the sparse and dense scores in a hybrid ranking further improves accuracy on "
                "most datasets.",
            ],
        },
    },
    {
        "id": "2210.00404",
        "title": "An Image is Worth 16x16 Words: Transformers for Image Recognition at Scale",
        "authors": ["Alexey Dosovitskiy", "Lucas Beyer"],
        "year": 2022,
        "categories": ["cs.CV"],
        "tags": ["vision"],
        "sections": {
            "1 Introduction": [
                "Self-attention architectures have become the model of choice in natural language "
                "processing, while in computer vision convolutional architectures remain dominant.",
                "When trained on mid-sized datasets without strong regularisation, these models yield "
                "modest accuracies a few points below residual networks of comparable size.",
            ],
            "3 Method": [
                "We split an image into fixed-size patches, linearly embed each of them, add position "
                "embeddings, and feed the resulting sequence of vectors to a standard Transformer encoder.",
                "To perform classification we add an extra learnable classification token to the sequence, "
                "whose final state serves as the image representation.",
                "The model has much less image-specific inductive bias than convolutional networks, since "
                "only the MLP layers are local and translationally equivariant.",
            ],
            "4 Experiments": [
                "Pre-training on the large JFT-300M dataset and transferring to ImageNet reaches 88.55 "
                "percent top-1 accuracy while requiring fewer computational resources.",
                "Attention distance grows with network depth: some heads attend to most of the image "
                "already in the lowest layers.",
                "Scaling the dataset matters more than scaling the architecture once enough pre-training "
                "compute is available.",
            ],
        },
    },
    {
        "id": "2303.00505",
        "title": "Denoising Diffusion Probabilistic Models",
        "authors": ["Jonathan Ho", "Ajay Jain", "Pieter Abbeel"],
        "year": 2023,
        "categories": ["cs.LG", "stat.ML"],
        "tags": ["generative"],
        "sections": {
            "1 Introduction": [
                "We present high quality image synthesis results using diffusion probabilistic models, a "
                "class of latent variable models inspired by nonequilibrium thermodynamics.",
                "A diffusion model is a parameterised Markov chain trained with variational inference to "
                "produce samples matching the data after finite time.",
            ],
            "2 Background": [
                "The forward process gradually adds Gaussian noise to the data according to a variance "
                "schedule until the signal is destroyed.",
                "The reverse process is learned: a neural network predicts the noise that was added at "
                "each step, which gives a simple weighted variational bound.",
            ],
            "4 Experiments": [
                "On unconditional CIFAR10 we obtain an Inception score of 9.46 and a state-of-the-art FID "
                "score of 3.17.",
                "Sample quality on 256x256 LSUN is similar to progressive generative adversarial networks.",
                "Our sampling procedure resembles progressive decoding and can be seen as a generalisation "
                "of autoregressive decoding along a bit ordering.",
            ],
        },
    },
]
TARGET_OF_DENSE_QUERY = "We split an image into fixed-size patches"
DENSE_QUERY = "cutting photographs into little square tiles"


def _passages() -> list[tuple[int, str, str]]:
    """(paper index, section title, text) of every chunk in doc id order."""
    return [
        (index, title, text)
        for index, paper in enumerate(PAPERS)
        for title, texts in paper["sections"].items()
        for text in texts
    ]


def _write(root: Path, relative: str, data: bytes) -> str:
    (root / relative).parent.mkdir(parents=True, exist_ok=True)
    (root / relative).write_bytes(data)
    return relative


def build_site(root: Path, vectors: np.ndarray) -> DataFiles:
    passages = _passages()
    paper_texts = []
    for index, paper in enumerate(PAPERS):
        texts = [text for paper_index, _, text in passages if paper_index == index]
        chunks, offset = [], 0
        for number, text in enumerate(texts):
            chunks.append(TextChunk(f"{index:08x}{number:08x}", offset, offset + len(text), text))
            offset += len(text) + 1
        paper_texts.append(PaperText(paper["id"], tuple(chunks)))
    dictionary = preset_dictionary([text for _, _, text in passages])
    texts_file, located = texts_file_bytes(paper_texts, dictionary)
    papers, first = [], 0
    for paper, text_file, (head_bytes, text_bytes, head_sha) in zip(
        PAPERS, paper_texts, located, strict=True
    ):
        year = paper["year"]
        papers.append(
            PaperRecord(
                id=paper["id"],
                version="v1",
                title=paper["title"],
                authors=tuple(paper["authors"]),
                published=f"{year}-01-15",
                updated=f"{year}-02-01",
                year=year,
                categories=tuple(paper["categories"]),
                primary_category=paper["categories"][0],
                abs_url=f"https://arxiv.org/abs/{paper['id']}v1",
                pdf_url=f"https://arxiv.org/pdf/{paper['id']}v1",
                tags=tuple(paper["tags"]),
                pages=9,
                sections=tuple(SectionEntry(title, 1, 1) for title in paper["sections"]),
                first_chunk=first,
                chunk_count=len(text_file.chunks),
                text_bytes=(head_bytes, text_bytes),
                text_sha256=head_sha,
            )
        )
        first += len(text_file.chunks)
    table = ChunkTable.from_rows(
        (1 + doc_id % 4, 1 + doc_id % 4 + doc_id % 2, title) for doc_id, (_, title, _) in enumerate(passages)
    )
    index = search_index_files([t for _, _, t in passages], vectors, name=plain_name)
    for path, data in index.files.items():
        _write(root, path, data)
    return DataFiles(
        papers=_write(root, "data/papers.json", papers_bytes(papers)),
        chunks=_write(root, "data/chunks.bin", chunk_table_bytes(table)),
        texts=_write(root, "data/texts.bin", texts_file),
        text_dictionary=_write(root, "data/text-dictionary.bin", dictionary),
        **index.roles,
    )


class RecordingReader:
    """Disk reader that remembers which files the engine asked for."""

    def __init__(self, root: Path):
        self.root = root
        self.paths: list[str] = []

    def __call__(self, relative: str) -> bytes:
        self.paths.append(relative)
        return (self.root / relative).read_bytes()


@pytest.fixture(scope="module")
def encoder(model_dir):
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(model_dir), device="cpu", local_files_only=True)
    return lambda texts: model.encode(list(texts), normalize_embeddings=True, convert_to_numpy=True)


@pytest.fixture(scope="module")
def site(tmp_path_factory, encoder) -> tuple[Path, DataFiles]:
    root = tmp_path_factory.mktemp("site")
    return root, build_site(root, encoder([text for _, _, text in _passages()]))


@pytest.fixture
def reader(site) -> RecordingReader:
    return RecordingReader(site[0])


@pytest.fixture
def engine(site, reader) -> SearchEngine:
    return SearchEngine(site[1], reader)


_query_vectors: dict[str, list[float]] = {}


def embed(encoder, query: str) -> list[float]:
    """Query vectors are memoised: encoding is the slow part of these tests on a shared machine."""
    if query not in _query_vectors:
        _query_vectors[query] = [float(x) for x in encoder([query])[0]]
    return _query_vectors[query]


def doc_of(text_start: str) -> int:
    return next(doc_id for doc_id, (_, _, text) in enumerate(_passages()) if text.startswith(text_start))


# --- retrieval ---------------------------------------------------------------------------------------


def test_keyword_search_works_before_the_vectors_are_loaded(engine, reader):
    hits = engine.search("in-batch negatives", None, SearchOptions(k=3))
    assert hits[0].text.startswith("Training uses in-batch negatives")
    assert hits[0].arxiv_id == "1904.00303"
    assert hits[0].ranks == {"bm25": 1, "dense": None}
    assert not engine.vectors_loaded
    assert not any(path.startswith("data/dense") for path in reader.paths)


def test_hit_fields_come_from_the_site_files(engine):
    (hit,) = engine.search("hot-swapping", None, SearchOptions(k=1))
    doc_id = doc_of("Hot-swapping")
    assert hit.doc_id == doc_id
    assert hit.chunk_id == f"{0:08x}{7:08x}"
    assert (hit.title, hit.section) == (PAPERS[0]["title"], "3 Results")
    assert (hit.page_start, hit.page_end) == (1 + doc_id % 4, 1 + doc_id % 4 + doc_id % 2)
    assert hit.snippet == hit.text  # short passages are shown whole
    assert [hit.snippet[s:e] for s, e in hit.highlights] == ["Hot-swapping"]


def test_dense_query_without_shared_keywords_finds_its_passage(engine, encoder):
    target = doc_of(TARGET_OF_DENSE_QUERY)
    keyword_hits = engine.search(
        DENSE_QUERY, None, SearchOptions(k=40, per_paper=0, per_section=0, per_page=0)
    )
    assert target not in [hit.doc_id for hit in keyword_hits]
    hits = engine.search(DENSE_QUERY, embed(encoder, DENSE_QUERY), SearchOptions(k=3, mode="dense"))
    assert hits[0].doc_id == target
    assert hits[0].ranks == {"bm25": None, "dense": 1}
    hybrid = engine.search(DENSE_QUERY, embed(encoder, DENSE_QUERY), SearchOptions(k=5))
    assert target in [hit.doc_id for hit in hybrid]


def test_phrase_must_occur_and_only_candidate_texts_are_read(site, engine):
    options = SearchOptions(k=20, per_paper=0, per_section=0, per_page=0)
    loose = engine.search("low rank adaptation", None, options)
    assert doc_of("We rank passages with low latency") in [hit.doc_id for hit in loose]
    text_ranges: list[tuple[int, int]] = []

    def read_range(path: str, start: int, end: int) -> bytes:
        if path == site[1].texts:
            text_ranges.append((start, end))
        return (site[0] / path).read_bytes()[start:end]

    phrase_engine = SearchEngine(site[1], RecordingReader(site[0]), read_range)
    hits = phrase_engine.search('"low-rank adaptation"', None, options)
    assert sorted(hit.doc_id for hit in hits) == [doc_of("We propose low-rank"), doc_of("Compared with full")]
    # Texts of chunks holding all three terms were checked: their papers' heads and one group each were
    # read, nothing of another paper's text.
    starts = [0]
    for paper in phrase_engine.papers:
        starts.append(starts[-1] + paper.text_bytes[1])
    papers_read = {
        phrase_engine.papers[next(i for i in range(len(starts) - 1) if starts[i] <= start < starts[i + 1])].id
        for start, _ in text_ranges
    }
    assert papers_read == {"2106.00202", "1904.00303"}
    assert len(text_ranges) == 4


def test_phrase_restricts_dense_results_too(engine, encoder):
    query = '"in-batch negatives" training'
    hits = engine.search(query, embed(encoder, query), SearchOptions(k=10, mode="dense"))
    assert [hit.doc_id for hit in hits] == [doc_of("Training uses in-batch negatives")]


def test_a_phrase_reads_only_the_nearest_lists_where_a_filter_reads_on(site, encoder):
    """A quoted phrase's chunks hold the query's own words, so the dense side reads the lists it reads for
    the bare query and ranks what they hold; a filter's chunks may lie anywhere, so it reads on until it
    has found enough (at 10,000 papers, reading on for a phrase read the whole lists file, 57 MB)."""
    lists_file = read_dense_directory((site[0] / site[1].dense).read_bytes()).lists_file
    query = "low-rank adaptation of frozen weights"
    vector = embed(encoder, query)
    # Two rows scanned: the nearest list alone; too few of its chunks pass the phrase or the filter.
    options = SearchOptions(k=5, mode="dense", candidates=5, scan=2, per_paper=0, per_section=0, per_page=0)

    def lists_read(text: str) -> tuple[int, list]:
        ranges: list[tuple[int, int]] = []

        def read_range(path: str, start: int, end: int) -> bytes:
            if path == lists_file:
                ranges.append((start, end))
            return (site[0] / path).read_bytes()[start:end]

        hits = SearchEngine(site[1], RecordingReader(site[0]), read_range).search(text, vector, options)
        return sum(end - start for start, end in ranges), hits

    bare, _ = lists_read(query)
    phrase, phrase_hits = lists_read(f'"low-rank" {query}')
    filtered, filtered_hits = lists_read(f"{query} id:2303.00505")
    assert phrase == bare and 0 < len(phrase_hits) < 5
    assert filtered > bare and len(filtered_hits) == 5
    assert {hit.arxiv_id for hit in filtered_hits} == {"2303.00505"}


@pytest.mark.parametrize("mode", ["bm25", "dense", "hybrid"])
def test_filters_apply_during_retrieval_not_after_the_cut(engine, encoder, mode):
    # Only 2 candidates per retriever, all from the LoRA paper: a filter applied after the cut would
    # leave nothing, one applied while retrieving finds the best matches among the allowed papers.
    query = "low-rank update of frozen weights"
    options = SearchOptions(k=2, mode=mode, candidates=2, per_paper=0, per_section=0, per_page=0)
    unfiltered = engine.search(query, embed(encoder, query), options)
    assert {hit.arxiv_id for hit in unfiltered} == {"2106.00202"}
    hits = engine.search(f"{query} tag:rag", embed(encoder, query), options)
    assert len(hits) == 2
    assert {hit.arxiv_id for hit in hits} <= {"2001.00101", "1904.00303"}


@pytest.mark.parametrize(
    ("query_filter", "options_filter", "papers"),
    [
        ("cat:cs.IR", Filters(), {"1904.00303"}),
        ("cat:cs", Filters(), {"2001.00101", "2106.00202", "1904.00303", "2210.00404", "2303.00505"}),
        ("cat:stat.ml", Filters(), {"2303.00505"}),
        ("tag:RAG", Filters(), {"2001.00101", "1904.00303"}),
        ("author:abbeel", Filters(), {"2303.00505"}),
        ("id:2106.00202v3", Filters(), {"2106.00202"}),
        ("year:2020..2021", Filters(), {"2001.00101", "2106.00202"}),
        ("year:>=2021", Filters(categories=("cs.CL",)), {"2106.00202"}),
        ("tag:rag", Filters(year_max=2019), {"1904.00303"}),
    ],
)
def test_each_filter_selects_its_papers(engine, encoder, query_filter, options_filter, papers):
    options = SearchOptions(k=40, per_paper=0, per_section=0, per_page=0, filters=options_filter)
    query = "model training data"
    hits = engine.search(f"{query} {query_filter}", embed(encoder, query), options)
    assert {hit.arxiv_id for hit in hits} == papers


def test_a_filtered_dense_search_reads_on_to_the_exhaustive_scans_best(site, encoder):
    query = "a dual encoder for passage retrieval"
    vector = embed(encoder, query)
    options = SearchOptions(k=5, mode="dense", per_paper=0, per_section=0, per_page=0, candidates=5)
    unfiltered = SearchEngine(site[1], RecordingReader(site[0])).search(query, vector, options)
    assert not {hit.arxiv_id for hit in unfiltered} & {"2210.00404", "2303.00505"}  # the filter must bite
    filtered = f"year:2022..2023 {query}"
    # From the nearest list alone (2 rows scanned), doubled until 5 allowed chunks are found.
    widened = SearchEngine(site[1], RecordingReader(site[0])).search(
        filtered, vector, replace(options, scan=2)
    )
    exhaustive = SearchEngine(site[1], RecordingReader(site[0])).search(
        filtered, vector, replace(options, scan=0, rescore=0)
    )
    assert len(exhaustive) == 5 and {hit.arxiv_id for hit in exhaustive} <= {"2210.00404", "2303.00505"}
    assert [hit.doc_id for hit in widened] == [hit.doc_id for hit in exhaustive]
    assert [hit.score for hit in widened] == pytest.approx([hit.score for hit in exhaustive], abs=1e-12)


def test_exhaustive_options_lift_every_bound_of_the_ranged_indexes(site, engine, encoder):
    """Bounds tight enough to lose passages, lifted by `exhaustive()`: what it finds is brute force's over
    the same stored rows and texts. The scale bench measures the bounds' loss against it; a bound it
    left in place (a renamed knob did once) would make that loss look small."""
    query = "low-rank adaptation of frozen weights for passage retrieval"
    vector = embed(encoder, query)
    bounded = SearchOptions(
        k=5, candidates=5, per_paper=0, per_section=0, per_page=0, postings_prefix=1, scan=1, rescore=1
    )
    rows = np.array(engine.load_vectors().every_row(), dtype=np.float64)
    cosines = rows @ np.array(fine_query(vector), dtype=np.float64) / np.linalg.norm(rows, axis=1)
    truths = {
        "dense": sorted(range(len(rows)), key=lambda doc: (-cosines[doc], doc))[:5],
        "bm25": [
            doc
            for doc, _ in BM25Index(build_postings([text for _, _, text in _passages()])).search(
                analyze(query), 5
            )
        ],
    }
    for mode, truth in truths.items():
        lifted = engine.search(query, vector, replace(bounded.exhaustive(), mode=mode))
        assert [hit.doc_id for hit in lifted] == truth, mode
        tight = engine.search(query, vector, replace(bounded, mode=mode))
        assert [hit.doc_id for hit in tight] != truth, f"{mode}: the bounds must bite for the test to tell"


def test_modes(engine, encoder):
    query = "dense vectors for passage retrieval"
    vector = embed(encoder, query)
    bm25 = engine.search(query, vector, SearchOptions(mode="bm25"))
    assert all(hit.ranks["dense"] is None and hit.ranks["bm25"] for hit in bm25)
    assert not engine.vectors_loaded
    hybrid_without_vector = engine.search(query, None, SearchOptions(mode="hybrid"))
    assert hybrid_without_vector == bm25
    dense = engine.search(query, vector, SearchOptions(mode="dense"))
    assert all(hit.ranks["bm25"] is None and hit.ranks["dense"] for hit in dense)
    hybrid = engine.search(query, vector, SearchOptions(mode="hybrid"))
    assert any(hit.ranks["bm25"] and hit.ranks["dense"] for hit in hybrid)
    rrf = engine.search(query, vector, SearchOptions(mode="hybrid", fusion="rrf"))
    assert rrf[0].score == pytest.approx(sum(1 / (60 + r) for r in rrf[0].ranks.values() if r))
    with pytest.raises(ValueError, match="needs a query vector"):
        engine.search(query, None, SearchOptions(mode="dense"))
    with pytest.raises(ValueError, match="mode must be"):
        engine.search(query, None, SearchOptions(mode="semantic"))


def test_diversity_caps_apply_to_results(engine):
    hits = engine.search("low-rank weights update", None, SearchOptions(k=10, per_paper=2, per_section=1))
    papers = [hit.arxiv_id for hit in hits]
    assert all(papers.count(p) <= 2 for p in papers)
    sections = [(hit.arxiv_id, hit.section) for hit in hits]
    assert len(sections) == len(set(sections))
    uncapped = engine.search("low-rank weights update", None, SearchOptions(k=10, per_paper=0, per_section=0))
    assert [hit.arxiv_id for hit in uncapped].count("2106.00202") > 2


def test_one_chunk_per_page_by_default(engine):
    query = "low-rank weights update"
    hits = engine.search(query, None, SearchOptions(k=20, per_paper=0, per_section=0))
    cited = [(hit.arxiv_id, page) for hit in hits for page in range(hit.page_start, hit.page_end + 1)]
    assert len(cited) == len(set(cited))
    every_chunk = engine.search(query, None, SearchOptions(k=20, per_paper=0, per_section=0, per_page=0))
    pages = [(hit.arxiv_id, page) for hit in every_chunk for page in range(hit.page_start, hit.page_end + 1)]
    assert len(pages) > len(set(pages))  # the query does match several chunks of one page


def test_results_are_deterministic(site, encoder):
    query = "retrieval augmented language generation"
    vector = embed(encoder, query)
    runs = [
        SearchEngine(site[1], RecordingReader(site[0])).search(query, vector, SearchOptions())
        for _ in range(2)
    ]
    assert runs[0] == runs[1]
    assert len(runs[0]) == 10


@pytest.mark.parametrize("mode", ["hybrid", "bm25", "dense"])
def test_a_query_of_filters_alone_lists_the_papers_passages(engine, mode):
    """Issue 12, item 1: "Search in this paper" sends id:… alone; it must list that paper's sections."""
    hits = engine.search("id:2001.00101", None, SearchOptions(mode=mode))
    assert [hit.section for hit in hits] == ["1 Introduction", "2 Methods", "3 Results"]
    assert {hit.arxiv_id for hit in hits} == {"2001.00101"}
    assert [hit.doc_id for hit in hits] == sorted(hit.doc_id for hit in hits)  # reading order
    assert all(hit.snippet and hit.highlights == [] for hit in hits)


def test_filters_alone_over_several_papers_give_each_paper_a_turn(engine):
    hits = engine.search("cat:cs.CL", None, SearchOptions(k=3))
    assert [hit.arxiv_id for hit in hits] == ["2106.00202", "2001.00101", "1904.00303"]  # newest first
    assert all(hit.section.startswith("1 ") for hit in hits)  # each paper's opening passage
    assert {hit.arxiv_id for hit in engine.search("author:hu", None, SearchOptions())} == {"2106.00202"}
    assert {hit.arxiv_id for hit in engine.search("year:2023", None, SearchOptions())} == {"2303.00505"}
    assert engine.search("year:1990", None, SearchOptions()) == []


def test_a_unique_tag_prefix_stands_for_its_tag(engine, encoder):
    query = "model training data"
    options = SearchOptions(k=40, per_paper=0, per_section=0, per_page=0)
    assert {hit.arxiv_id for hit in engine.search(f"{query} tag:retr", embed(encoder, query), options)} == {
        "1904.00303"
    }
    assert {hit.arxiv_id for hit in engine.search("tag:gen", None, options)} == {"2303.00505"}
    assert {hit.arxiv_id for hit in engine.search("tag:rag", None, options)} == {"2001.00101", "1904.00303"}
    with pytest.raises(QuerySyntaxError, match="tag:r matches several tags; the tags are rag, retrieval"):
        engine.search("tag:r", None, options)
    with pytest.raises(QuerySyntaxError, match="tag:cooking is not a tag of this corpus"):
        engine.search("cooking tag:cooking", None, options)


def test_per_query_time(engine, encoder):
    """Not a benchmark: a guard that a hybrid query stays far from anything a visitor would notice."""
    vector = embed(encoder, "attention layers in transformers")
    engine.search("warm up", vector, SearchOptions())
    started = time.perf_counter()
    for _ in range(20):
        engine.search("attention layers in transformers", vector, SearchOptions())
    assert (time.perf_counter() - started) / 20 < 0.05


# --- the core stays portable -------------------------------------------------------------------------


def test_core_imports_only_the_standard_library():
    package_dir = Path(readingroom_core.__file__).parent
    outside = set()
    for module in sorted(package_dir.rglob("*.py")):
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in sys.stdlib_module_names and top not in ("__future__", "readingroom_core"):
                    outside.add(f"{module.name}: {name}")
    assert not outside
    assert {"engine.py", "querysyntax.py", "fusion.py", "snippets.py"} <= {
        m.name for m in package_dir.glob("*.py")
    }


def test_did_you_mean_offers_the_corpus_own_words(engine):
    """Issue 12: typos get help from the corpus's vocabulary, field filters left as typed."""
    assert engine.suggest("low-rank adaptaion of weigths") == "low-rank adaptation of weights"
    assert engine.suggest("Retreival tag:rag") == "Retrieval tag:rag"
    assert engine.suggest("low-rank adaptation") is None  # every word is in the corpus
    assert engine.suggest("zzqx") is None  # nothing close: no suggestion rather than a wild guess
