"""The ranged index files on small generated lists: checked blocks, impact-ordered postings against
exhaustive BM25, coarse lists with rescoring against an exact int8 scan, damaged files."""

from __future__ import annotations

import gzip
import hashlib
import json
import random

import numpy as np
import pytest

import readingroom_core.readers.postings as termindex
from builder.site.search_files import index_files, plain_name
from builder.writers.dense import assign, cosines, dense_files, grouped
from builder.writers.hnsw import quantize
from builder.writers.postings import TermLayout
from readingroom_core.bm25 import BM25Index, build_postings, sum_scores
from readingroom_core.formats.dense import DenseDirectory, read_dense_directory
from readingroom_core.formats.postings import (
    INLINE_PAGES,
    PAGE_ENTRIES,
    PAGE_SHA_DIGITS,
    page_values,
    read_term_directory,
    read_varints,
    varint,
)
from readingroom_core.ranges import (
    Block,
    BlockReader,
    DamagedData,
    folder_range_reader,
    folder_reader,
    whole_file_ranges,
)
from readingroom_core.readers.dense import DenseLists, code_scorer
from readingroom_core.readers.postings import TermIndex

WORDS = [f"w{n}" for n in range(400)]
DOCS = 1500
DIMS = 384


def generated_texts(seed: int = 7) -> list[str]:
    """Zipf-like word use: a few words in most passages (several pages of postings), most words rare."""
    rng = random.Random(seed)
    weights = [1 / (rank + 1) for rank in range(len(WORDS))]
    return [" ".join(rng.choices(WORDS, weights, k=rng.randint(8, 40))) for _ in range(DOCS)]


def generated_vectors(seed: int = 11) -> np.ndarray:
    """Passages in 30 topics: unit vectors spread around 30 random centres."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(30, DIMS))
    vectors = centres[rng.integers(0, 30, DOCS)] + 0.6 * rng.normal(size=(DOCS, DIMS))
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


class CountingRanges:
    """A folder's ranges, each request recorded."""

    def __init__(self, root):
        self.read_range = folder_range_reader(root)
        self.asked: list[tuple[str, int, int]] = []

    def __call__(self, path: str, start: int, end: int) -> bytes:
        self.asked.append((path, start, end))
        return self.read_range(path, start, end)


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    root = tmp_path_factory.mktemp("ranged")
    texts, vectors = generated_texts(), generated_vectors()
    built = index_files(build_postings(texts), vectors, plain_name)
    for path, data in built.files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)
    return root, built, texts, vectors


def term_index(written, read_range=None) -> TermIndex:
    root, built, *_ = written
    directory = read_term_directory((root / built.roles["postings"]).read_bytes())
    return TermIndex(directory, BlockReader(read_range or folder_range_reader(root)))


def dense_index(written, read_range=None) -> DenseLists:
    root, built, *_ = written
    directory = read_dense_directory((root / built.roles["dense"]).read_bytes())
    return DenseLists(directory, BlockReader(read_range or folder_range_reader(root)))


# --- blocks --------------------------------------------------------------------------------------------


def test_adjacent_blocks_travel_together_and_are_read_once(tmp_path):
    data = bytes(range(256)) * 4
    (tmp_path / "f.bin").write_bytes(data)
    ranges = CountingRanges(tmp_path)
    reader = BlockReader(ranges)
    blocks = [Block("f.bin", a, b, _sha(data[a:b])) for a, b in ((0, 10), (10, 30), (100, 120), (130, 140))]
    assert reader.read(blocks) == [data[b.start : b.end] for b in blocks]
    assert ranges.asked == [("f.bin", 0, 30), ("f.bin", 100, 120), ("f.bin", 130, 140)]
    assert reader.read(blocks[::-1]) == [data[b.start : b.end] for b in blocks[::-1]]  # from memory
    assert reader.requests == 3 and reader.bytes_read == 60
    gapped = BlockReader(CountingRanges(tmp_path))
    gapped.read(blocks, gap=10)
    assert gapped.requests == 2 and gapped.bytes_read == 70  # 120..130 fetched and thrown away


def test_a_full_cache_drops_the_least_recently_used_and_never_a_block_being_read(tmp_path):
    data = bytes(range(256)) * 4
    (tmp_path / "f.bin").write_bytes(data)
    ranges = CountingRanges(tmp_path)
    reader = BlockReader(ranges, cache_bytes=250)
    a, b, c, d = (Block("f.bin", s, s + 100, _sha(data[s : s + 100])) for s in (0, 200, 400, 600))
    assert reader.read([a, b]) == [data[0:100], data[200:300]]
    # `a` is cached and asked for again while `c` comes in: keeping `c` drops the oldest block, `b`
    assert reader.read([c, a]) == [data[400:500], data[0:100]]
    # a read bigger than the cache still returns every block it asked for
    assert reader.read([a, b, c, d]) == [data[s : s + 100] for s in (0, 200, 400, 600)]
    assert ranges.asked == [("f.bin", 0, 100), ("f.bin", 200, 300), ("f.bin", 400, 500)] + [
        ("f.bin", 200, 300),
        ("f.bin", 600, 700),
    ]


def test_a_batch_is_announced_whole_before_any_range_is_read(tmp_path):
    """The worker fetches an announced batch in parallel, then runs the step again (worker.js ranged)."""
    data = bytes(range(256))
    (tmp_path / "f.bin").write_bytes(data)
    fetched: set[tuple[str, int, int]] = set()
    ranges = CountingRanges(tmp_path)

    def announce(batch):
        missing = [r for r in batch if r not in fetched]
        if missing:
            fetched.update(missing)  # what the worker's parallel fetch would bring
            raise RuntimeError(f"{len(missing)} ranges to fetch")

    reader = BlockReader(ranges, announce)
    blocks = [Block("f.bin", a, b, _sha(data[a:b])) for a, b in ((0, 10), (10, 30), (100, 120))]
    with pytest.raises(RuntimeError, match="2 ranges to fetch"):
        reader.read(blocks)
    assert ranges.asked == []  # nothing read before the whole batch is in
    assert reader.read(blocks) == [data[b.start : b.end] for b in blocks]  # the step, run again
    assert ranges.asked == [("f.bin", 0, 30), ("f.bin", 100, 120)] == sorted(fetched)


def test_a_block_that_does_not_match_its_checksum_is_refused_in_one_line(tmp_path):
    (tmp_path / "f.bin").write_bytes(b"0123456789")
    reader = BlockReader(folder_range_reader(tmp_path))
    with pytest.raises(
        DamagedData, match=r"^f\.bin bytes 2-6 do not match their checksum; the site's data is damaged$"
    ):
        reader.read([Block("f.bin", 2, 6, _sha(b"2346"))])
    with pytest.raises(DamagedData, match="got 2 bytes"):
        reader.read([Block("f.bin", 8, 12, _sha(b"89ab"))])  # the file ends early


def test_a_whole_file_reader_is_sliced_and_read_once(tmp_path):
    (tmp_path / "f.bin").write_bytes(b"abcdefghij")
    reads = []

    def read(path):
        reads.append(path)
        return (tmp_path / path).read_bytes()

    ranges = whole_file_ranges(read)
    assert ranges("f.bin", 2, 5) == b"cde" and ranges("f.bin", 7, 10) == b"hij"
    assert reads == ["f.bin"]


def test_a_folder_reader_unpacks_a_file_stored_only_gzipped_and_names_a_damaged_one(tmp_path):
    (tmp_path / "data").mkdir()
    contents = b'{"v": 6, "rows": [1, 2, 3]}' * 50
    (tmp_path / "data" / "plain.json").write_bytes(b"as stored")
    (tmp_path / "data" / "packed.json.gz").write_bytes(gzip.compress(contents, mtime=0))
    (tmp_path / "data" / "broken.json.gz").write_bytes(gzip.compress(contents, mtime=0)[:-40])
    read = folder_reader(tmp_path)
    assert read("data/plain.json") == b"as stored"
    assert read("data/packed.json") == contents  # asked for by its own path, as the worker hands it over
    with pytest.raises(DamagedData, match=r"^data/broken\.json\.gz could not be decompressed; the site's"):
        read("data/broken.json")
    with pytest.raises(FileNotFoundError):
        read("data/missing.json")


# --- keyword side --------------------------------------------------------------------------------------


QUERIES = ["w0 w1 w5", "w3 w17 w250", "w0", "w399 w398 w2", "w12 w13 w14 w15 w16 w0 w1"]


def test_every_posting_read_scores_exactly_as_the_in_memory_index(written):
    _, _, texts, _ = written
    exact = BM25Index(build_postings(texts))
    index = term_index(written)
    for query in QUERIES:
        terms = query.split()
        assert index.search(terms, 50, prefix=0) == exact.search(terms, 50)  # same ids, same floats


def test_a_bounded_prefix_reads_the_heaviest_postings_first(written):
    index = term_index(written)
    assert index.doc_freq("w0") > 3 * PAGE_ENTRIES  # several pages
    # one term: its best documents are its first postings, so any prefix >= k ranks exactly
    assert index.search(["w0"], 20, prefix=PAGE_ENTRIES) == index.search(["w0"], 20, prefix=0)
    # several terms: a document that a term's unread tail holds loses that term's (small) weight
    overlaps = []
    for prefix in (PAGE_ENTRIES, 2 * PAGE_ENTRIES, 4 * PAGE_ENTRIES):
        found = 0
        for query in QUERIES:
            bounded = {doc for doc, _ in index.search(query.split(), 10, prefix=prefix)}
            found += len(bounded & {doc for doc, _ in index.search(query.split(), 10, prefix=0)})
        overlaps.append(found / (10 * len(QUERIES)))
    assert overlaps == sorted(overlaps) and overlaps[0] >= 0.7 and overlaps[-1] >= 0.9


def test_a_query_reads_its_dictionary_block_and_only_the_pages_it_needs(written):
    ranges = CountingRanges(written[0])
    index = term_index(written, ranges)
    index.search(["w0"], 10, prefix=PAGE_ENTRIES)
    pages = [asked for asked in ranges.asked if "postings-pages" in asked[0]]
    _df, start, _rank, sizes, *_ = index._entries["w0"]
    assert len(ranges.asked) == 2 and pages == [("data/postings-pages.bin", start, start + sizes[0])]
    assert sizes[0] < 4 * PAGE_ENTRIES  # one page of w0 (varints), not its thousand postings


def test_decoded_postings_of_past_queries_are_forgotten_past_a_bound_and_results_never_change(written):
    """A long visit must not grow the worker's memory: only the terms of recent queries stay decoded, and
    one query keeps all of its own (its step never loses what it just read)."""
    kept, unbounded = term_index(written), term_index(written)
    kept._postings.limit, kept._blocks_read.limit = 2 * PAGE_ENTRIES, 1
    unbounded._postings.limit = unbounded._blocks_read.limit = 1 << 40
    assert len(unbounded.directory.blocks) > 2
    for query in QUERIES * 2:
        terms = query.split()
        for prefix, rescore in ((PAGE_ENTRIES, 100), (0, 0)):
            assert kept.search(terms, 10, prefix=prefix, rescore=rescore) == unbounded.search(
                terms, 10, prefix=prefix, rescore=rescore
            )
        assert set(terms) <= set(kept._postings) and set(terms) <= set(kept._entries)
        kept.read_postings(terms)  # as a phrase reads them: every posting, then term by term
        assert [kept.doc_ids(term) for term in terms] == [unbounded.doc_ids(term) for term in terms]
        assert kept.terms_near(terms[0], 1, 4) == unbounded.terms_near(terms[0], 1, 4)
    kept.search(QUERIES[0].split(), 10)  # spelling read every block of its letter: the next query forgets
    assert len(kept._postings) < len(unbounded._postings) and len(kept._entries) < len(unbounded._entries)
    assert kept._postings.weight < unbounded._postings.weight


def test_dictionary_lookups_for_phrases_and_spelling(written):
    _, _, texts, _ = written
    index = term_index(written)
    holding = [doc for doc, text in enumerate(texts) if "w250" in text.split()]
    assert index.doc_ids("w250") == holding and index.doc_freq("w250") == len(holding)
    assert index.doc_ids("nowhere") == [] and index.doc_freq("nowhere") == 0
    assert index.terms_near("w25x", 4, 4) == sorted(w for w in WORDS if len(w) == 4 and w != "w25x")

    def holders(*terms: str) -> list[int]:
        return [doc for doc, text in enumerate(texts) if set(terms) <= set(text.split())]

    common = next(word for word in WORDS if 0 < len(holders(word, "w250")) < len(holding))
    assert index.doc_freq(common) > 10 * len(holding)  # the rare word's few documents are tested against it
    fresh, scores = term_index(written), dict(BM25Index(build_postings(texts)).search(["w250"], len(texts)))
    assert [doc for doc, _ in fresh.rank_holders([common, "w250"], ["w250"])] == sorted(
        holders(common, "w250"), key=lambda doc: -scores[doc]
    )
    assert len(fresh._postings) == 0  # pages read raw and decoded page by page, none kept whole
    assert index.rank_holders(["w250", "nowhere"], ["w250"]) == []


def test_the_holders_of_a_phrase_rank_as_a_search_over_every_posting_that_allows_only_them(written):
    """A quoted phrase ranks the documents holding all its words by every posting of the query's words
    (`rank_holders`): the same scores, bit for bit, in the same order, as a search allowing only them."""
    _, _, texts, _ = written
    index = term_index(written)
    ranked = 0
    for query in QUERIES:
        terms = [*query.split(), "nowhere"]
        holding = query.split()[:2]
        for allowed in (None, lambda doc: doc % 3 != 0):
            docs = {
                doc
                for doc, text in enumerate(texts)
                if set(holding) <= set(text.split()) and (allowed is None or allowed(doc))
            }
            found = term_index(written).rank_holders(holding, terms, allowed)
            assert found == index.search(terms, len(docs), docs.__contains__, prefix=0)
            ranked += len(found)
    assert ranked > 0


def test_damaged_postings_are_refused(written, tmp_path):
    root, built, *_ = written
    (tmp_path / "data").mkdir()
    for path, data in built.files.items():
        damaged = bytes(reversed(data)) if "postings-pages" in path else data
        (tmp_path / path).write_bytes(damaged)
    index = term_index((tmp_path, built), folder_range_reader(tmp_path))
    with pytest.raises(DamagedData, match="postings-pages.bin bytes"):
        index.search(["w0", "w1"], 10)


def test_a_page_is_stored_deflated_and_one_that_will_not_unpack_is_damaged_data(written):
    index = term_index(written)
    index.read_entries(["w0"])
    _df, start, _rank, sizes, *_ = index._entries["w0"]
    root, built, *_ = written
    stored = built.files["data/postings-pages.bin"][start : start + sizes[0]]
    values = page_values(stored, "w0's first page")
    assert len(values) == 3 * PAGE_ENTRIES and len(stored) < len(b"".join(varint(v) for v in values))
    with pytest.raises(
        DamagedData, match=r"^w0's first page could not be unpacked; the site's data is damaged"
    ):
        page_values(stored[: len(stored) // 2], "w0's first page")


@pytest.mark.parametrize(
    "values",
    [[0, 1, 127, 5, 300, 2, 2**35, 9, *range(200)], [300 + i * 1000 for i in range(50)], [128], []],
    ids=["mostly one byte", "mostly longer", "one longer", "none"],
)
def test_varints_read_back_as_written_whether_few_or_many_take_more_than_a_byte(values):
    data = b"".join(varint(value) for value in values)
    assert read_varints(data) == values
    if data:
        with pytest.raises(ValueError, match="ends inside a number"):
            read_varints(data + varint(300)[:1])


def forward_layout(
    root, min_df: int, read_range=None, inline_pages: int = INLINE_PAGES, texts: list[str] | None = None
) -> TermIndex:
    """The keyword files of the generated passages (or `texts`) with every term in more than `min_df` of
    them in the forward file (and `inline_pages` page checksums per dictionary entry), and a reader."""
    layout = TermLayout(build_postings(texts or generated_texts()), min_df=min_df, inline_pages=inline_pages)
    files = {
        "data/terms.json": layout.terms_bytes,
        "data/pages.bin": layout.pages_bytes,
        "data/postings-forward.bin": layout.forward_bytes,
        "data/postings-forward-index.bin": layout.forward_index_bytes,
    }
    (root / "data").mkdir(exist_ok=True)
    for path, data in files.items():
        (root / path).write_bytes(data)
    directory = read_term_directory(layout.directory_bytes(*files))
    return TermIndex(directory, BlockReader(read_range or folder_range_reader(root)))


def test_a_document_longer_than_16_bits_of_terms_scores_as_in_memory(tmp_path):
    """Kept postings hold document lengths in 16 bits while they fit; one longer document widens them."""
    texts = [*generated_texts()[:50], " ".join(["w1", "w2"] * 40_000)]
    index = forward_layout(tmp_path, min_df=1 << 20, texts=texts)
    exact = BM25Index(build_postings(texts))
    for terms in (["w1"], ["w1", "w2", "w3"], ["w5"]):
        assert index.search(terms, 20, prefix=0) == exact.search(terms, 20)
    assert index._postings["w1"][2].typecode == "I" and index._postings["w5"][2].typecode == "H"


def test_a_search_run_again_after_each_fetch_sums_its_candidates_once(tmp_path, monkeypatch):
    """The browser stops a step at each batch not fetched yet and runs it again from the start
    (ranged_reads.js): the run after the forward groups' fetch finds the sums of the run before."""
    exact_index = forward_layout(tmp_path, PAGE_ENTRIES)
    fetched: set[tuple[str, int, int]] = set()

    def announce(ranges) -> None:
        missing = [tuple(entry) for entry in ranges if tuple(entry) not in fetched]
        fetched.update(missing)
        if missing:
            raise LookupError(missing)

    index = TermIndex(exact_index.directory, BlockReader(folder_range_reader(tmp_path), announce))
    sums = 0

    def counted(*args, **kwargs):
        nonlocal sums
        sums += 1
        return sum_scores(*args, **kwargs)

    monkeypatch.setattr(termindex, "sum_scores", counted)
    for query in ["w0 w1 w5", "w12 w13 w14 w15 w16 w0 w1"]:
        sums, runs, found = 0, 0, None
        while found is None:
            runs += 1
            try:
                found = index.search(query.split(), 10, prefix=PAGE_ENTRIES)
            except LookupError:
                continue
        assert runs >= 3 and sums == 1, query  # dictionary, pages (and forward index), forward groups
        assert found == exact_index.search(query.split(), 10, prefix=PAGE_ENTRIES)


def test_rescoring_gives_the_best_candidates_their_exact_scores(tmp_path):
    exact = BM25Index(build_postings(generated_texts()))
    index = forward_layout(tmp_path, PAGE_ENTRIES)
    found = unrescored = 0
    for query in QUERIES:
        terms = query.split()
        truth = exact.search(terms, DOCS)
        scores, best = dict(truth), {doc for doc, _ in truth[:10]}
        rescored = index.search(terms, 10, prefix=PAGE_ENTRIES)
        assert all(score == scores[doc] for doc, score in rescored)  # bit for bit, tails included
        found += len(best & {doc for doc, _ in rescored})
        unrescored += len(best & {doc for doc, _ in index.search(terms, 10, prefix=PAGE_ENTRIES, rescore=0)})
    assert found >= 49 and unrescored <= 40  # of 50: a page per term misses a fifth of the top 10s


def test_a_single_term_query_reads_no_forward_group(tmp_path):
    ranges = CountingRanges(tmp_path)
    index = forward_layout(tmp_path, PAGE_ENTRIES, ranges)
    index.search(["w0"], 10, prefix=PAGE_ENTRIES)  # its own prefix holds every candidate's weight
    assert not any("forward" in path for path, *_ in ranges.asked)
    index.search(["w0", "w1"], 10, prefix=PAGE_ENTRIES)
    forward = [path for path, *_ in ranges.asked if "forward" in path]
    assert forward.count("data/postings-forward-index.bin") == 1 and "data/postings-forward.bin" in forward
    asked = len(ranges.asked)
    index.search(["w1", "w0"], 10, prefix=PAGE_ENTRIES)
    assert len(ranges.asked) == asked  # checked groups are kept


@pytest.mark.parametrize("damaged", ["postings-forward.bin", "postings-forward-index.bin"])
def test_a_damaged_forward_file_is_refused(tmp_path, damaged):
    index = forward_layout(tmp_path, PAGE_ENTRIES)
    data = bytearray((tmp_path / "data" / damaged).read_bytes())
    data[len(data) // 2] ^= 0xFF
    (tmp_path / "data" / damaged).write_bytes(bytes(data))
    with pytest.raises(DamagedData, match=damaged):
        index.search(["w0", "w1", "w5"], 10, prefix=PAGE_ENTRIES)


def test_an_entry_holds_the_checksums_a_default_read_needs_and_a_deep_read_fetches_the_rest(tmp_path):
    ranges = CountingRanges(tmp_path)
    index = forward_layout(tmp_path, PAGE_ENTRIES, ranges, inline_pages=1)
    exact = BM25Index(build_postings(generated_texts()))
    index.search(["w0", "w1"], 10, prefix=PAGE_ENTRIES)
    pages = [(start, end) for path, start, end in ranges.asked if path == "data/pages.bin"]
    df, start, _rank, sizes, shas = index._entries["w0"]
    assert len(sizes) == 1 and len(shas) == 2 * PAGE_SHA_DIGITS // 2  # the first page's, the rest's records'
    assert df > 3 * PAGE_ENTRIES and len(pages) == 2  # one page each, no records beyond the entry's
    assert (start, start + sizes[0]) in pages
    holding = [doc for doc, text in enumerate(generated_texts()) if "w0" in text.split()]
    assert index.doc_ids("w0") == holding  # every page: the rest of the checksums first
    assert (start - 20 * (-(-df // PAGE_ENTRIES) - 1), start) in [(s, e) for _, s, e in ranges.asked]
    for query in QUERIES:
        assert index.search(query.split(), 50, prefix=0) == exact.search(query.split(), 50)


def test_damaged_checksums_of_a_terms_deeper_pages_are_refused(tmp_path):
    index = forward_layout(tmp_path, PAGE_ENTRIES, inline_pages=1)
    assert index.search(["w0"], 10, prefix=PAGE_ENTRIES)
    start = index._entries["w0"][1]
    data = bytearray((tmp_path / "data" / "pages.bin").read_bytes())
    data[start - 1] ^= 0xFF  # the last record of w0's deeper pages
    (tmp_path / "data" / "pages.bin").write_bytes(bytes(data))
    damaged = TermIndex(index.directory, BlockReader(folder_range_reader(tmp_path)))
    assert damaged.search(["w0"], 10, prefix=PAGE_ENTRIES) == index.search(["w0"], 10, prefix=PAGE_ENTRIES)
    with pytest.raises(DamagedData, match="pages.bin bytes"):
        damaged.doc_ids("w0")


# --- dense side ----------------------------------------------------------------------------------------


def exact_int8(written, vector: np.ndarray, k: int) -> list[int]:
    _, built, _, vectors = written
    rows = quantize(vectors, built.params.scale).astype(np.float64)
    cosines = rows @ vector / np.linalg.norm(rows, axis=1) / np.linalg.norm(vector)
    return sorted(range(len(rows)), key=lambda doc: (-cosines[doc], doc))[:k]


def queries_near(written, count: int = 20) -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    vectors = written[3]
    return [vectors[i] + 0.5 * rng.normal(size=DIMS) / np.sqrt(DIMS) for i in rng.integers(0, DOCS, count)]


def test_every_list_and_row_read_is_the_exact_int8_scan(written):
    index = dense_index(written)
    for query in queries_near(written, 5):
        found = index.search(query.tolist(), 10, scan=0, rescore=0)
        assert [doc for doc, _ in found] == exact_int8(written, query, 10)


def test_codes_and_rescoring_keep_recall_and_read_a_fraction_of_the_rows(written):
    root, built, *_ = written
    recalls = []
    index = dense_index(written)
    for query in queries_near(written):
        bounded = index.search(query.tolist(), 10, scan=400, rescore=50)
        recalls.append(len({doc for doc, _ in bounded} & set(exact_int8(written, query, 10))) / 10)
    assert np.mean(recalls) >= 0.9
    fresh = dense_index(written)
    fresh.search(queries_near(written)[0].tolist(), 10, scan=400, rescore=50)
    rows_file = (
        (root / read_dense_directory((root / built.roles["dense"]).read_bytes()).rows_file).stat().st_size
    )
    assert fresh._reader.bytes_read < 0.25 * rows_file


def test_every_row_a_search_reads_from_its_lists_is_rescored(written):
    """Rows lying between two rescored ones arrive in the same request: their exact scores are used, not
    thrown away, so the top 10 is the exact one over every row read (of the lists read) and no row
    outside them."""
    root, *_ = written
    read = folder_range_reader(root)
    for query in queries_near(written, 10):
        ranges: list[tuple[str, int, int]] = []

        def read_range(path: str, start: int, end: int, ranges: list = ranges) -> bytes:
            ranges.append((path, start, end))
            return read(path, start, end)

        index = dense_index(written, read_range)
        found = index.search(query.tolist(), 10, scan=400, rescore=20)
        d = index.directory
        read_lists = [
            entry
            for entry in d.lists
            if any(p == d.lists_file and s <= entry.start and entry.end <= e for p, s, e in ranges)
        ]
        slots_read = {
            slot for p, s, e in ranges if p == d.rows_file for slot in range(s // d.dims, e // d.dims)
        }
        doc_at = {}
        for entry in read_lists:
            region = (root / d.lists_file).read_bytes()[entry.start : entry.start + 4 * entry.count]
            doc_at.update(
                zip(
                    range(entry.first_slot, entry.first_slot + entry.count),
                    np.frombuffer(region, "<u4"),
                    strict=True,
                )
            )
        scored = {int(doc_at[slot]) for slot in slots_read if slot in doc_at}
        assert len(scored) > 20  # more rows read than rescored: the rows between them
        best = [doc for doc in exact_int8(written, query, DOCS) if doc in scored][:10]
        assert {doc for doc, _ in found} == set(best)


def test_decoded_lists_of_past_queries_are_forgotten_past_a_bound_and_results_never_change(written):
    kept, unbounded = dense_index(written), dense_index(written)
    kept._lists.limit = 4
    for query in queries_near(written, 8):
        assert kept.search(query.tolist(), 10, scan=400, rescore=50) == unbounded.search(
            query.tolist(), 10, scan=400, rescore=50
        )
    assert len(kept._lists) < len(unbounded._lists)


def test_lists_are_kept_decoded_and_not_as_blocks_too(written):
    """The block cache holds the rows a search rescored, not the lists it decoded (held twice, they took
    28 MB of a 64 MB cache after the scale bench's questions at 10,000 papers)."""
    index = dense_index(written)
    index._lists.limit = 2
    index.search(queries_near(written)[0].tolist(), 10, scan=400, rescore=50)
    cached = {block.path for block in index._reader._cache}
    assert cached == {index.directory.rows_file}
    assert len(index._lists) == 2  # trimmed once the search is done


def test_a_codes_product_is_the_querys_with_its_row_of_plus_and_minus_ones():
    rng = np.random.default_rng(9)
    fine = rng.integers(-32767, 32768, DIMS)
    bits = rng.random(DIMS) > 0.5
    code = int.from_bytes(np.packbits(bits, bitorder="little").tobytes(), "little")
    step = -(-(int(fine.max()) - int(fine.min())) // 63)  # six bit planes
    held = (fine - fine.min()) // step + fine.min() // step  # the query as the planes hold it
    signs = np.where(bits, 1, -1)
    assert code_scorer(fine.tolist())(code) == step * int(held @ signs)
    assert abs(code_scorer(fine.tolist())(code) - int(fine @ signs)) <= step * DIMS


def test_residual_codes_find_the_exact_top_10_among_few_candidates(written):
    """Every row scanned, 30 of 1,500 rescored: ranked by the list mean's product plus the residual code's
    times its weight (and the optimism, which costs these Gaussian clusters 0.005), the exact top 10 are
    among them (0.94; ranked by the rows' own signs, 0.89)."""
    index = dense_index(written)
    recalls = [
        len(
            {doc for doc, _ in index.search(query.tolist(), 10, scan=0, rescore=30)}
            & set(exact_int8(written, query, 10))
        )
        / 10
        for query in queries_near(written)
    ]
    assert np.mean(recalls) >= 0.93


@pytest.mark.parametrize("dims", [384, 1536])
def test_rows_meet_lists_in_exact_arithmetic_so_every_cpu_builds_the_same_files(dims):
    """The build's products of int8 rows and centroids are the integers themselves, whatever BLAS kernel
    sums them (at 1,536 dimensions float32 sums would round past 2^24), and a row as near two lists as
    can be goes to the lower one: on float vectors a kernel's rounding chose, so another CPU built
    other lists."""
    rng = np.random.default_rng(3)
    centroids = rng.integers(-63, 64, size=(40, dims)).astype(np.int8)
    centroids[20:] = -centroids[:20, ::-1]  # the same norm as another centroid, in another direction
    rows = np.vstack([centroids[:20] + centroids[20:], np.full((1, dims), 127, np.int8)]).astype(np.int8)
    squares = np.square(centroids, dtype=np.int64).sum(axis=1)
    products = rows.astype(np.int64) @ centroids.astype(np.int64).T  # numpy's integer product: no BLAS
    expected = products.astype(np.float32) * (1 / np.sqrt(squares)).astype(np.float32)
    assert np.array_equal(cosines(rows, centroids), expected)
    assert np.array_equal(assign(rows[:20], centroids), np.arange(20))  # each row ties i and i + 20


def test_a_lists_rows_are_grouped_by_sub_cluster_so_a_querys_nearest_rows_lie_in_few_runs():
    rng = np.random.default_rng(5)
    centres = rng.normal(size=(6, DIMS))
    topic = rng.integers(0, 6, 300)  # one list's rows, in doc id order: six sub-topics interleaved
    vectors = centres[topic] + 0.8 * rng.normal(size=(300, DIMS))
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    order = grouped(np.rint(unit * 127 / np.abs(unit).max()).astype(np.int8))
    assert sorted(order) == list(range(300))
    assert np.count_nonzero(np.diff(topic[order])) <= 10  # in doc id order: ~250 changes of sub-topic
    assert np.count_nonzero(np.diff(topic)) > 200


def test_a_filter_scans_more_lists_until_enough_passages_are_allowed(written):
    index = dense_index(written)
    allowed = set(range(0, DOCS, 97))  # 16 passages scattered over the lists
    found = index.search(
        queries_near(written)[0].tolist(), 10, scan=80, rescore=20, allowed=allowed.__contains__
    )
    assert len(found) == 10 and {doc for doc, _ in found} <= allowed


def test_a_filter_of_few_passages_reads_the_lists_that_hold_them(written):
    """Fewer passages allowed than wanted: widening read every list; the lists holding them give the same
    ranking from fewer bytes (at 10,000 papers, "Search in this paper" read the whole 57 MB lists file)."""
    root, built, *_ = written
    lists_file = read_dense_directory((root / built.roles["dense"]).read_bytes()).lists_file
    allowed = list(range(0, DOCS, 97))  # 16 passages scattered over the lists
    query = queries_near(written)[0].tolist()

    def search(listed: list[int] | None) -> tuple[list, int]:
        read = folder_range_reader(root)
        list_bytes = []

        def read_range(path: str, start: int, end: int) -> bytes:
            list_bytes.append(end - start if path == lists_file else 0)
            return read(path, start, end)

        index = dense_index(written, read_range)
        assert index.reads_holders(len(allowed), 20)
        found = index.search(
            query, 20, scan=80, rescore=200, allowed=set(allowed).__contains__, allowed_docs=listed
        )
        return found, sum(list_bytes)

    widened, widened_bytes = search(None)
    held, held_bytes = search(allowed)
    assert len(held) == len(allowed) and held == widened
    assert held_bytes < len((root / lists_file).read_bytes()) <= widened_bytes  # widening read every list


def test_a_site_built_before_the_list_of_file_widens_as_it_did(written):
    root, built, *_ = written
    data = json.loads((root / built.roles["dense"]).read_bytes())
    del data["list_of_file"], data["list_of_blocks"]
    index = DenseLists(DenseDirectory.from_json(data), BlockReader(folder_range_reader(root)))
    allowed = list(range(0, DOCS, 97))
    assert not index.reads_holders(len(allowed), 20)
    found = index.search(
        queries_near(written)[0].tolist(),
        20,
        scan=80,
        allowed=set(allowed).__contains__,
        allowed_docs=allowed,
    )
    assert sorted(doc_id for doc_id, _ in found) == allowed


def test_the_list_of_file_names_each_passage_s_list_across_its_blocks():
    rng = np.random.default_rng(5)
    vectors = rng.normal(size=(9000, 16)).astype(np.float32)
    made = dense_files(np.clip(np.rint(vectors * 30), -127, 127).astype(np.int8))
    stored = {"lists": made.lists, "rows": made.rows, "list-of": made.list_of}
    directory = made.directory("lists", "rows", "list-of")
    index = DenseLists(directory, BlockReader(lambda path, start, end: stored[path][start:end]))
    holder = {}
    for number, entry in enumerate(directory.lists):
        for doc_id in np.frombuffer(made.lists[entry.start : entry.start + 4 * entry.count], dtype="<u4"):
            holder[int(doc_id)] = number
    for doc_id in (0, 4095, 4096, 8191, 8192, 8999):  # the list-of file's three blocks, at their edges
        assert index.lists_holding([doc_id]) == [holder[doc_id]]
    assert index.lists_holding(range(9000)) == list(range(len(directory.lists)))


def test_a_damaged_list_of_file_is_refused(written, tmp_path):
    _, built, *_ = written
    (tmp_path / "data").mkdir()
    for path, data in built.files.items():
        (tmp_path / path).write_bytes(bytes(reversed(data)) if "dense-list-of" in path else data)
    index = dense_index((tmp_path, built), folder_range_reader(tmp_path))
    allowed = list(range(0, DOCS, 97))
    with pytest.raises(DamagedData, match="dense-list-of.bin bytes .* do not match their checksum"):
        index.search(
            queries_near(written)[0].tolist(),
            20,
            scan=80,
            allowed=set(allowed).__contains__,
            allowed_docs=allowed,
        )


def test_every_row_is_its_passages_quantized_vector(written):
    _, built, _, vectors = written
    rows = np.array(dense_index(written).every_row(), dtype=np.int8)
    assert np.array_equal(rows, quantize(vectors, built.params.scale))


@pytest.mark.parametrize("damaged_file", ["dense-rows", "dense-lists"])
def test_damaged_dense_files_are_refused(written, tmp_path, damaged_file):
    _, built, *_ = written
    (tmp_path / "data").mkdir()
    for path, data in built.files.items():
        (tmp_path / path).write_bytes(bytes(reversed(data)) if damaged_file in path else data)
    index = dense_index((tmp_path, built), folder_range_reader(tmp_path))
    with pytest.raises(DamagedData, match=f"{damaged_file}.bin bytes .* do not match their checksum"):
        index.search(queries_near(written)[0].tolist(), 10, scan=0)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
