"""`readingroom_core.browser`, the module the Web Worker calls, under CPython on a built site.

The same calls run in Pyodide in test_pyodide.py and in chromium in test_site_browser.py.
"""

import gzip
import json
import subprocess
import sys
import zlib
from array import array
from collections import Counter
from pathlib import Path

import pytest
from support.worker_search import search

import readingroom_core
from builder.query_encoder import OnnxQueryEncoder
from readingroom_core.browser import (
    READ_AHEAD_CHUNKS,
    Site,
    gunzipped,
    hit_json,
    open_folder,
    open_site,
    sha256_hex,
)
from readingroom_core.formats.texts import GROUP_CHUNKS
from readingroom_core.options import SearchOptions
from readingroom_core.querysyntax import embedding_text
from readingroom_core.ranges import folder_range_reader, folder_reader
from readingroom_core.tokenizer import WordPieceTokenizer

QUERY = "grouped query attention"


@pytest.fixture(scope="module")
def site(built_sites):
    read = folder_reader(built_sites.second)
    return open_site(read, read("manifest.json").decode("utf-8"))


def float32_bytes(vector) -> bytes:
    """A query vector as the worker hands it over: the encoder's Float32Array."""
    return array("f", vector).tobytes()


def test_search_replies_with_the_engines_hits_in_the_one_json_shape(site):
    reply = search(site, query=QUERY, k=5, mode="bm25")
    hits = site.engine.search(QUERY, None, SearchOptions(k=5, mode="bm25"))
    assert len(hits) == 5
    papers = {paper.id: paper for paper in site.engine.papers}
    assert reply == {
        "hits": [json.loads(json.dumps(hit_json(h, papers[h.arxiv_id]))) for h in hits],
        "weak": False,  # the query's words are in the corpus
        "suggestion": None,
        "embeds": True,  # free text: semantic search would take part
        "missing": [],  # the query names no work the list cites and lacks
    }
    first = reply["hits"][0]
    assert first["authors"] == list(papers[first["arxiv_id"]].authors) and first["year"]
    assert first["ranks"] == {"bm25": 1, "dense": None}


def test_segments_rebuild_the_snippet_and_mark_the_highlights(site):
    hits = search(site, query=QUERY, k=10, mode="bm25")["hits"]
    engine_hits = site.engine.search(QUERY, None, SearchOptions(k=10, mode="bm25"))
    marked_any = False
    for hit, engine_hit in zip(hits, engine_hits, strict=True):
        assert "".join(text for text, _ in hit["segments"]) == hit["snippet"] == engine_hit.snippet
        marked = [text for text, is_marked in hit["segments"] if is_marked]
        assert marked == [engine_hit.snippet[start:end] for start, end in engine_hit.highlights]
        marked_any |= bool(marked)
    assert marked_any


def test_a_vector_handed_over_as_float32_bytes_gives_the_dense_ranking(site, built_sites):
    site.load_semantic()
    vector = OnnxQueryEncoder.from_site(built_sites.second, site.manifest).encode([QUERY])[0]
    reply = search(site, float32_bytes(vector), query=QUERY, k=10, mode="dense")
    expected = site.engine.search(QUERY, vector, SearchOptions(k=10, mode="dense"))
    assert [h["chunk_id"] for h in reply["hits"]] == [h.chunk_id for h in expected]
    assert all(h["ranks"]["dense"] for h in reply["hits"])
    assert search(site, list(vector), query=QUERY, k=10, mode="dense") == reply  # CPython's lists alike


def test_the_ranged_files_named_are_those_searches_read_by_range(built_sites):
    """The worker fetches these whole on a small list: a file left out would still cost round trips."""
    read, read_range = folder_reader(built_sites.second), folder_range_reader(built_sites.second)
    ranged: set[str] = set()
    site = open_site(read, read("manifest.json").decode(), lambda *r: ranged.add(r[0]) or read_range(*r))
    keyword_files = set(json.loads(site.ranged_files()))
    site.load_semantic()
    vector = OnnxQueryEncoder.from_site(built_sites.second, site.manifest).encode([QUERY])[0]
    for query in (QUERY, '"grouped query"', "attention year:2000..2030", "attentoin"):
        search(site, float32_bytes(vector), query=query, k=10, mode="hybrid")
    named = set(json.loads(site.ranged_files()))
    assert ranged and ranged <= named
    assert keyword_files < named and not any("dense" in path for path in keyword_files)
    artifacts = {artifact["path"] for artifact in json.loads(read("manifest.json"))["artifacts"]}
    assert named <= artifacts and not {path + ".gz" for path in named} & artifacts


def test_a_search_is_parsed_once_and_read_ahead_while_its_query_is_embedded(built_sites):
    """worker.js: prepare(request) while the encoder embeds, fetch the text ranges it names, search(id,
    vector)."""
    read = folder_reader(built_sites.second)
    read_range = folder_range_reader(built_sites.second)
    text_reads: list[tuple[int, int]] = []
    texts_file = json.loads(read("manifest.json"))["files"]["texts"]

    def logged_range(path: str, start: int, end: int) -> bytes:
        if path == texts_file:
            text_reads.append((start, end))
        return read_range(path, start, end)

    site = open_site(read, read("manifest.json").decode("utf-8"), logged_range)
    plain = open_site(read, read("manifest.json").decode("utf-8"))
    site.load_semantic()
    plain.load_semantic()
    vector = float32_bytes(OnnxQueryEncoder.from_site(built_sites.second, plain.manifest).encode([QUERY])[0])
    engine = site.engine
    request = {"query": QUERY, "k": 10, "mode": "hybrid"}
    keyword_ranking = engine.prepare(QUERY, SearchOptions(k=10)).bm25 or []
    prepared = json.loads(site.prepare(json.dumps(request)))
    ahead = [tuple(entry) for entry in prepared["read_ahead"]]
    assert text_reads == []  # the keyword side needs no paper text
    # Nothing is kept yet: the heads of the best keyword matches' papers, in rank order.
    paper_of = {doc: i for i, paper in enumerate(engine.papers) for doc in paper.doc_ids}
    papers = {paper_of[doc] for doc, _ in keyword_ranking[:READ_AHEAD_CHUNKS]}
    expected = engine.texts.unread(doc for doc, _ in keyword_ranking[:READ_AHEAD_CHUNKS])
    assert ahead == [(texts_file, block.start, block.end) for block in expected]
    assert len(ahead) == len(papers) >= 1
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(engine, "prepare", lambda *_: pytest.fail("the search was parsed again"))
        reply = json.loads(site.search(prepared["search"], vector))
        # A failed semantic side is answered again, keyword-only, from the same prepared search.
        keyword_only = json.loads(site.search(prepared["search"], None))
    site.discard(prepared["search"])
    assert reply == search(plain, vector, **request)
    assert keyword_only == search(plain, None, **request)
    assert {(start, end) for _, start, end in ahead} <= set(text_reads)  # what the worker fetched ahead
    assert len(text_reads) == len(set(text_reads))  # each head and group read once
    with pytest.raises(KeyError):
        site.search(prepared["search"], vector)  # discarded
    # Two searches under way at once keep apart; dense mode has no keyword ranking to read ahead from.
    other = {**request, "query": "renormalization group"}
    first, second = (json.loads(site.prepare(json.dumps(r))) for r in (request, other))
    assert json.loads(site.search(second["search"])) == search(plain, **other)
    assert json.loads(site.search(first["search"])) == search(plain, **request)
    dense = json.loads(site.prepare(json.dumps({**request, "query": "query expansion", "mode": "dense"})))
    assert dense["read_ahead"] == []


def test_with_its_papers_heads_kept_a_search_reads_ahead_its_groups(built_sites):
    read = folder_reader(built_sites.second)
    site = open_site(read, read("manifest.json").decode("utf-8"), folder_range_reader(built_sites.second))
    engine = site.engine
    paper_of = {doc: i for i, paper in enumerate(engine.papers) for doc in paper.doc_ids}
    request = {"query": QUERY, "k": 10, "mode": "bm25"}
    best = [doc for doc, _ in (engine.prepare(QUERY, SearchOptions(k=10)).bm25 or [])[:READ_AHEAD_CHUNKS]]
    for doc in best:
        engine.texts.head(paper_of[doc])
    ahead = json.loads(site.prepare(json.dumps(request)))["read_ahead"]
    groups = {
        (paper_of[doc], (doc - engine.papers[paper_of[doc]].first_chunk) // GROUP_CHUNKS) for doc in best
    }
    assert len(ahead) == len(groups) >= 2  # a range for each group of those chunks, no head
    engine.texts.read(best)
    assert json.loads(site.prepare(json.dumps(request)))["read_ahead"] == []  # all of it kept now


def test_a_reply_reads_the_texts_it_shows_in_two_batches(built_sites):
    """The worker fetches a step's announced ranges in parallel and runs the step again: one round trip
    for the heads of all the papers a reply shows, one for their groups of chunks, not one each."""
    read = folder_reader(built_sites.second)
    read_range = folder_range_reader(built_sites.second)
    texts_file = json.loads(read("manifest.json"))["files"]["texts"]
    events: list[tuple[str, object]] = []

    def announce(ranges_json: str) -> None:
        texts = [tuple(entry) for entry in json.loads(ranges_json) if entry[0] == texts_file]
        if texts:
            events.append(("announced", texts))

    def logged_range(path: str, start: int, end: int) -> bytes:
        if path == texts_file:
            events.append(("read", (path, start, end)))
        return read_range(path, start, end)

    for request in (
        {"query": QUERY, "k": 10, "mode": "bm25"},
        {"query": "year:2023", "k": 5, "mode": "bm25"},
    ):
        site = open_site(read, read("manifest.json").decode("utf-8"), logged_range, announce)
        events.clear()
        reply = json.loads(site.search(json.loads(site.prepare(json.dumps(request)))["search"]))
        assert reply["hits"]
        heads = events[0][1]
        assert isinstance(heads, list)
        groups = events[1 + len(heads)][1]
        assert isinstance(groups, list)
        # Each batch named whole before any of it is read, and each range read once.
        kinds = [kind for kind, _ in events]
        assert kinds == ["announced", *["read"] * len(heads), "announced", *["read"] * len(groups)]
        assert [value for kind, value in events if kind == "read"] == sorted(heads) + sorted(groups)
        papers = {hit["arxiv_id"] for hit in reply["hits"]}
        assert len(heads) == len(papers)
        assert len(papers) <= len(groups) <= len(reply["hits"])
        events.clear()
        site.search(json.loads(site.prepare(json.dumps(request)))["search"])
        assert events == []  # read already: nothing to name, nothing to read again


class StepStopped(Exception):
    """What the worker's announce throws when a step named files it has not fetched yet."""


def test_a_step_reading_more_texts_than_the_core_keeps_still_settles(built_sites):
    """The worker hands Python a fetched range once (ranged_reads.js: `readRange` lets it go) and runs a
    step again until it has every range the step named. Text heads and groups past the core's bounds are
    forgotten once a step is done, never within it: a step that forgot what it had read would name it
    again round after round and never settle."""
    read, read_range = folder_reader(built_sites.second), folder_range_reader(built_sites.second)
    manifest = read("manifest.json").decode("utf-8")
    texts_file = json.loads(manifest)["files"]["texts"]
    fetched: dict[tuple, bytes] = {}
    rounds = 0

    def announce(batch_json: str) -> None:
        named = [tuple(entry) for entry in json.loads(batch_json) if entry[0] == texts_file]
        missing = [entry for entry in named if entry not in fetched]
        fetched.update((entry, read_range(*entry)) for entry in missing)
        if missing:
            raise StepStopped(missing)

    def read_once(path: str, start: int, end: int) -> bytes:
        if path != texts_file:
            return read_range(path, start, end)
        assert (path, start, end) in fetched, f"{path} {start}-{end} was read without being named first"
        return fetched.pop((path, start, end))

    def run(step):
        nonlocal rounds
        rounds = 0
        while rounds < 32:  # RANGE_ROUNDS
            rounds += 1
            try:
                return step()
            except StepStopped:
                continue
        pytest.fail("the step never settled")

    def ask(site: Site, request: dict) -> dict:
        prepared = json.loads(run(lambda: site.prepare(json.dumps(request))))
        return json.loads(run(lambda: site.search(prepared["search"])))

    plain = open_site(read, manifest, read_range)
    requests = [{"query": QUERY, "k": 10, "mode": "bm25"}, {"query": "model", "k": 10, "mode": "bm25"}]
    site = open_site(read, manifest, read_once, announce=announce)
    texts = site.engine.texts
    texts._heads.limit = texts._groups.limit = 1
    for request in requests:
        reply = ask(site, request)
        assert reply == search(plain, **request) and rounds == 3  # two round trips: heads, then groups
        assert len({hit["arxiv_id"] for hit in reply["hits"]}) > 1
        assert len(texts._heads) == len(texts._groups) == 1


def test_a_step_run_again_after_a_fetch_finds_what_the_run_before_computed(built_sites):
    """The worker runs a step from its start again after each batch it fetches (ranged_reads.js). A run
    finds the dense scan, the papers' similarities and the named paper of the run before it (`lru.LastResult`; the keyword sums:
    test_ranges): each is computed once however often the step stops (at 10,000 papers the runs that
    stopped took more CPU than the one that finished)."""
    read, read_range = folder_reader(built_sites.second), folder_range_reader(built_sites.second)
    manifest = read("manifest.json").decode("utf-8")
    fetched: set[tuple] = set()

    def announce(batch_json: str) -> None:
        missing = [tuple(entry) for entry in json.loads(batch_json) if tuple(entry) not in fetched]
        fetched.update(missing)
        if missing:
            raise StepStopped(missing)

    runs: Counter[str] = Counter()

    def run(name, step):
        for _ in range(32):  # RANGE_ROUNDS
            runs[name] += 1
            try:
                return step()
            except StepStopped:
                continue
        pytest.fail(f"{name} never settled")

    computed: Counter[str] = Counter()

    def counting(name, compute):
        def counted(*args, **kwargs):
            computed[name] += 1
            return compute(*args, **kwargs)

        return counted

    site, plain = (
        open_site(read, manifest, read_range, announce=announce),
        open_site(read, manifest, read_range),
    )
    run("start", site.load_semantic)
    engine, dense = site.engine, site.engine.load_vectors()
    dense._scan = counting("dense scan", dense._scan)
    engine._finder._find = counting("named paper", engine._finder._find)
    engine._paper_view._similarities = counting("paper view", engine._paper_view._similarities)
    vector = OnnxQueryEncoder.from_site(built_sites.second, site.manifest).encode([QUERY])[0]
    options = SearchOptions(k=10)
    prepared = run("prepare", lambda: engine.prepare(QUERY, options))
    hits = run("finish", lambda: engine.finish(prepared, vector))
    assert runs["prepare"] >= 2 and runs["finish"] >= 3  # dictionary, pages; lists, rows, texts
    assert computed == {"dense scan": 1, "paper view": 1, "named paper": 1}
    assert hits == plain.engine.search(QUERY, vector, options)


def test_the_dense_side_read_while_the_keyword_side_reads_leaves_search_none_of_its_reads(built_sites):
    """worker.js runs Site.dense_ahead as soon as the vector is in, its fetch rounds taking turns with
    prepare's; search then finds the dense ranking and the papers' similarities computed and reads only
    texts, and answers as a search without it does."""
    read, read_range = folder_reader(built_sites.second), folder_range_reader(built_sites.second)
    manifest = read("manifest.json").decode("utf-8")
    fetched: set[tuple] = set()

    def announce(batch_json: str) -> None:
        missing = [tuple(entry) for entry in json.loads(batch_json) if tuple(entry) not in fetched]
        fetched.update(missing)
        if missing:
            raise StepStopped(missing)

    site, plain = open_site(read, manifest, read_range, announce), open_site(read, manifest, read_range)
    site.load_semantic()  # read whole, as the worker does before any query
    plain.load_semantic()
    dense = site.engine.load_vectors()
    computed: Counter[str] = Counter()

    def count_calls(name, owner, method):
        compute = getattr(owner, method)

        def counted(*args, **kwargs):
            computed[name] += 1
            return compute(*args, **kwargs)

        setattr(owner, method, counted)

    count_calls("dense scan", dense, "_scan")
    count_calls("paper view", site.engine._paper_view, "_similarities")
    vector = float32_bytes(OnnxQueryEncoder.from_site(built_sites.second, site.manifest).encode([QUERY])[0])
    request = json.dumps({"query": QUERY, "k": 10, "mode": "hybrid"})

    def attempts(step):
        """A step as the worker runs it: again after each batch it announced comes in."""
        while True:
            try:
                yield ("done", step())
                return
            except StepStopped:
                yield ("stopped", None)

    steps = {
        "prepare": attempts(lambda: site.prepare(request)),
        "ahead": attempts(lambda: site.dense_ahead(request, vector)),
    }
    settled: dict[str, object] = {}
    while steps:  # one attempt each in turn, as their fetches come in
        for name, step in list(steps.items()):
            state, value = next(step)
            if state == "done":
                settled[name] = value
                del steps[name]
    dense_files = {dense.directory.lists_file, dense.directory.rows_file}
    read_ahead = {path for path, _, _ in fetched} & dense_files
    assert read_ahead == dense_files
    fetched_before_search = set(fetched)
    prepared = json.loads(settled["prepare"])
    reply = next(
        value for state, value in attempts(lambda: site.search(prepared["search"], vector)) if state == "done"
    )
    site.discard(prepared["search"])
    assert {path for path, _, _ in fetched - fetched_before_search} <= {site.manifest.files.texts}
    assert computed == {"dense scan": 1, "paper view": 1}
    assert json.loads(reply) == search(plain, vector, query=QUERY, k=10, mode="hybrid")
    # What has no dense side to read ahead neither reads nor scans (with another query's vector), and a
    # request prepare rejects is prepare's to answer.
    other = float32_bytes(
        OnnxQueryEncoder.from_site(built_sites.second, site.manifest).encode(["renormalization group"])[0]
    )
    fetched.clear()
    for nothing_ahead in (
        {"query": '"grouped query" attention', "k": 10, "mode": "hybrid"},  # the phrase check comes first
        {"query": "renormalization group", "k": 10, "mode": "bm25"},
        {"query": "year:abc attention", "k": 5},
        {"query": "year:2020", "k": 5, "mode": "hybrid"},  # filters alone: no ranking at all
    ):
        assert site.dense_ahead(json.dumps(nothing_ahead), other) is None
    site.dense_ahead(json.dumps({"query": "renormalization group", "k": 10, "mode": "hybrid"}), None)
    assert fetched == set() and computed == {"dense scan": 1, "paper view": 1}


def test_a_quoted_phrase_of_many_words_needs_few_fetch_rounds(built_sites):
    """The browser gives a step 32 fetch rounds (ranged_reads.js RANGE_ROUNDS), one per batch the core
    announces. A phrase's words are read in one batch and the texts it checks in batches that double: read
    a word at a time and a text at a time, a quoted title of 10,000 papers needed 30 rounds and failed."""
    read, read_range = folder_reader(built_sites.second), folder_range_reader(built_sites.second)
    manifest = read("manifest.json").decode("utf-8")
    words = open_site(read, manifest, read_range).engine.chunk(0).text.split()
    phrase = " ".join(words[len(words) // 2 : len(words) // 2 + 10])
    rounds: list[str] = []
    site = open_site(read, manifest, read_range, announce=rounds.append)  # a fresh site: nothing read yet
    reply = search(site, query=f'"{phrase}"', k=10, mode="bm25")
    assert reply["hits"] and reply["hits"][0]["doc_id"] == 0, phrase
    assert len(rounds) <= 6, [json.loads(batch) for batch in rounds]  # 3 rounds; 11 when read word by word


def test_a_misspelt_word_reads_the_texts_that_spell_its_corrections_in_two_batches(built_sites):
    """Spelling reads a few passages of each near word to spell it out; read one by one, each cost two
    round trips (its paper's head, then its group), and a prepare at 1,000 papers took over 40 rounds."""
    read, read_range = folder_reader(built_sites.second), folder_range_reader(built_sites.second)
    manifest = read("manifest.json").decode("utf-8")
    texts_file = json.loads(manifest)["files"]["texts"]
    batches: list[list] = []

    def announce(ranges_json: str) -> None:
        named = [entry for entry in json.loads(ranges_json) if entry[0] == texts_file]
        if named:
            batches.append(named)

    site = open_site(read, manifest, read_range, announce=announce)
    assert site.engine.suggest("varational latice tranformer") == "variational lattice transformer"
    heads, groups = batches
    assert len(heads) > 1 and len(groups) >= len(heads)  # several papers' passages, two batches in all


def test_facet_filters_from_the_page_restrict_results(site):
    tagged = {paper.id for paper in site.engine.papers if "t1" in paper.tags}
    assert tagged and tagged != {paper.id for paper in site.engine.papers}
    hits = search(site, query="model", k=20, mode="bm25", filters={"tags": ["t1"]})["hits"]
    assert hits and {h["arxiv_id"] for h in hits} <= tagged


def test_a_filter_only_list_says_semantic_search_would_change_nothing(site):
    """The page offers no semantic update for a list that has no text to embed."""
    listed = search(site, query="tag:t1", k=20, mode="hybrid")
    assert listed["hits"] and listed["embeds"] is False
    assert search(site, query="tag:t1 model", k=20, mode="hybrid")["embeds"] is True


def test_queries_the_engine_rejects_come_back_as_errors(site):
    rejected = json.loads(site.prepare(json.dumps({"query": "year:abc attention", "k": 5})))
    assert set(rejected) == {"error"} and "year:abc is not a year filter" in rejected["error"]  # at once
    assert "needs a query vector" in search(site, query=QUERY, k=5, mode="dense")["error"]


def test_query_ids_leave_out_field_filters(built_sites):
    site = open_folder(built_sites.second)
    with pytest.raises(RuntimeError, match="load_semantic"):
        site.encode_ids(QUERY)
    site.load_semantic()
    files = site.manifest.files
    tokenizer = WordPieceTokenizer.from_data(
        folder_reader(built_sites.second)(files.vocab).decode("utf-8"),
        json.loads(folder_reader(built_sites.second)(files.char_classes).decode("utf-8")),
    )
    query = f"year:2020..2024 {QUERY} cat:cs.CL"
    assert embedding_text(query) == QUERY
    assert site.encode_ids(query) == tokenizer.encode(QUERY)
    assert site.encode_ids("year:2021") == []


def test_opening_a_folder_without_a_site_says_what_to_do(tmp_path):
    with pytest.raises(FileNotFoundError, match="build the site first"):
        open_folder(tmp_path)


def test_a_manifest_of_another_format_is_refused(built_sites, tmp_path):
    manifest = json.loads((built_sites.second / "manifest.json").read_text(encoding="utf-8"))
    manifest["format_version"] = 99
    (tmp_path / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(ValueError, match="format 99"):
        open_folder(tmp_path)


def test_importing_the_boundary_imports_the_whole_core():
    """The build snapshots Python right after `import readingroom_core.browser` (python_snapshot.mjs); a
    restored interpreter has no core files on disk, so every module must already be in memory."""
    package = Path(readingroom_core.__file__).parent
    modules = {
        ".".join(("readingroom_core", *path.relative_to(package).with_suffix("").parts)).removesuffix(
            ".__init__"
        )
        for path in package.rglob("*.py")
    }
    code = "import sys, readingroom_core.browser; print(' '.join(sorted(sys.modules)))"
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=package.parent
    ).stdout.split()
    assert modules - set(loaded) == set()


def test_a_listed_file_read_synchronously_is_gunzipped_from_its_copy(built_sites):
    manifest = json.loads((built_sites.second / "manifest.json").read_text())
    path = manifest["files"]["text_dictionary"]
    plain = gunzipped((built_sites.second / (path + ".gz")).read_bytes())
    assert {"path": path, "bytes": len(plain), "sha256": sha256_hex(plain)} in manifest["artifacts"]
    assert gunzipped(plain) == plain  # a host that decoded the copy on its way
    broken = bytearray(gzip.compress(plain))
    broken[len(broken) // 2] ^= 0xFF
    with pytest.raises(zlib.error):  # the worker reports the copy as damaged
        gunzipped(bytes(broken))
