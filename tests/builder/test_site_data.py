"""Issue 3's artifacts, read back with independent tools: usearch, a reference BM25, sha256."""

import hashlib
import json
import math
from collections import Counter

import numpy as np
import pytest
from support.builds import ADDED_PAPER, SMALL_PAPERS, run_build, write_corpus
from usearch.index import Index

import builder.writers.texts as papertexts
from builder.embedding import encode, load_model
from builder.stages.chunk.chunker import ChunkSettings, TokenCounter, context_prefix
from builder.writers.hnsw import USEARCH_VERSION, hnsw_path
from builder.writers.papers import paper_table_bytes
from readingroom_core.analysis import analyze
from readingroom_core.browser import open_folder
from readingroom_core.formats.chunks import ChunkTable, chunk_table_bytes, read_chunk_table
from readingroom_core.formats.manifest import manifest_bytes, read_manifest
from readingroom_core.formats.papers import TABLE_FIELDS, PaperVector, papers_bytes, read_papers
from readingroom_core.formats.postings import PAGE_ENTRIES
from readingroom_core.formats.texts import PaperText
from readingroom_core.ranges import folder_reader
from readingroom_core.readers.papers import read_paper_table, read_paper_vectors


@pytest.fixture(scope="module")
def site(built_sites):
    out = built_sites.second
    return out, json.loads((out / "manifest.json").read_text())


def load(site_dir, relative):
    return json.loads(folder_reader(site_dir)(relative))


def test_manifest_lists_every_data_file_with_size_and_checksum(site):
    out, manifest = site
    on_disk = {
        p.relative_to(out).as_posix()
        for folder in ("data", "model")
        for p in (out / folder).rglob("*")
        if p.is_file()
    }
    listed = {a["path"]: a for a in manifest["artifacts"]}
    assert manifest["files"]["texts"] in on_disk  # one ranged file for every paper's text, stored as it is
    stored_gzipped = {path.removesuffix(".gz") for path in listed if path.endswith(".gz")}
    assert {"postings", "chunks", "papers", "encoder", "text_dictionary"} <= {
        role for role, path in manifest["files"].items() if path in stored_gzipped
    }
    assert not stored_gzipped & on_disk  # stored only as their .gz
    assert set(listed) == on_disk | stored_gzipped
    read = folder_reader(out)
    for path, artifact in listed.items():
        data = read(path)
        assert artifact["bytes"] == len(data)
        assert artifact["sha256"] == hashlib.sha256(data).hexdigest()
        # content-hashed names; a file stored gzipped is its own name and ".gz"
        assert listed[path.removesuffix(".gz")]["sha256"][:12] in path
    assert set(manifest["files"].values()) <= set(listed)
    assert manifest["counts"]["papers"] == 4 and manifest["counts"]["failures"] == 0
    assert manifest["counts"]["chunks"] == read_chunk_table(folder_reader(out)(manifest["files"]["chunks"])).n
    assert manifest["model"]["dims"] == 384 and len(manifest["model"]["weights_sha256"]) == 64
    assert manifest["index"]["usearch_version"] == USEARCH_VERSION and manifest["index"]["dtype"] == "i8"
    assert {"pymupdf", "usearch", "sentence-transformers", "onnxruntime"} <= set(manifest["tools"])


def site_chunks(out, manifest):
    papers = load(out, manifest["files"]["papers"])["papers"]
    table = read_chunk_table(folder_reader(out)(manifest["files"]["chunks"]))
    engine = open_folder(out).engine
    rows = []
    for paper in papers:
        for doc_id in range(paper["chunks"][0], sum(paper["chunks"])):
            rows.append((paper, table.section_of(doc_id), engine.chunk(doc_id).text))
    return rows


def test_the_usearch_file_lies_beside_the_site_and_finds_each_chunk_by_its_own_text(site, model_dir):
    out, manifest = site
    assert not list(out.rglob("*.usearch"))  # the site reads the dense lists; visitors never fetch it
    index = Index.restore(str(hnsw_path(out)))  # beside the site: <out>.usearch
    rows = site_chunks(out, manifest)
    assert index.size == len(rows) and index.ndim == 384
    counter = TokenCounter(model_dir)
    sample = list(range(0, len(rows), max(1, len(rows) // 25)))
    texts = []
    for doc in sample:
        paper, section, text = rows[doc]
        texts.append(context_prefix(paper["title"], section, counter, ChunkSettings()) + "\n" + text)
    vectors = encode(load_model(model_dir), texts)
    found = 0
    for doc, vector in zip(sample, vectors, strict=True):
        quantized = np.clip(np.rint(vector * manifest["index"]["scale"]), -127, 127).astype(np.int8)
        matches = index.search(quantized, 3)
        found += int(matches.keys[0]) == doc
    assert found >= len(sample) - 1  # near-duplicate overlapping chunks may swap places once


def test_postings_reproduce_independently_computed_bm25(site, model_dir):
    out, manifest = site
    postings = load(out, manifest["files"]["postings"])
    counter = TokenCounter(model_dir)
    docs = [
        analyze(context_prefix(paper["title"], section, counter, ChunkSettings()) + "\n" + text)
        for paper, section, text in site_chunks(out, manifest)
    ]
    frequencies = [Counter(d) for d in docs]
    avgdl = sum(len(d) for d in docs) / len(docs)
    assert postings["n"] == len(docs) and postings["avgdl"] == pytest.approx(avgdl)
    k1, b = postings["k1"], postings["b"]
    engine = open_folder(out).engine.keyword_index
    for query in ["knowledge distillation of BERT", "passages retrieved for the reader", "triple loss"]:
        terms = list(dict.fromkeys(analyze(query)))
        expected = {}
        for doc, tf in enumerate(frequencies):
            score = 0.0
            for term in terms:
                df = sum(1 for f in frequencies if term in f)
                if tf[term]:
                    idf = math.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
                    score += (
                        idf * tf[term] * (k1 + 1) / (tf[term] + k1 * (1 - b + b * len(docs[doc]) / avgdl))
                    )
            if score:
                expected[doc] = score
        got = dict(engine.search(terms, k=len(docs), prefix=0))
        assert dict(engine.search(terms, k=len(docs), prefix=PAGE_ENTRIES)) == got  # a few docs: all read
        assert got.keys() == expected.keys()
        assert all(abs(got[d] - expected[d]) < 1e-9 for d in got)


def test_two_builds_of_the_same_inputs_are_byte_identical(built_sites, tmp_path, generated_corpus):
    corpus = write_corpus(tmp_path / "first.toml", SMALL_PAPERS)  # as built_sites.first: from a cold cache
    assert run_build(corpus, tmp_path / "out", tmp_path / "fresh-cache", generated_corpus) == 0
    first = json.loads((built_sites.first / "manifest.json").read_text())
    second = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert first["artifacts"] == second["artifacts"]


def test_adding_a_paper_embeds_only_its_chunks(built_sites):
    before = json.loads((built_sites.first / "manifest.json").read_text())
    after = json.loads((built_sites.second / "manifest.json").read_text())
    report = json.loads((built_sites.second / "build-report.json").read_text())
    papers = load(built_sites.second, after["files"]["papers"])["papers"]
    added = next(p for p in papers if p["id"] == ADDED_PAPER)
    assert report["embedded_chunks"] == added["chunks"][1] > 0
    assert after["counts"]["chunks"] == before["counts"]["chunks"] + added["chunks"][1]


def test_typed_records_write_back_the_very_bytes_they_read(site):
    """Each file's owner in formats/ reads it into typed records and writes the same bytes back: the
    records hold every field, in the stored order."""
    out, _ = site
    manifest_data = (out / "manifest.json").read_bytes()
    manifest = read_manifest(manifest_data)
    assert manifest_bytes(manifest) == manifest_data
    papers_data = folder_reader(out)(manifest.files.papers)
    papers = read_papers(papers_data)
    assert papers_bytes(papers) == papers_data
    table_data = folder_reader(out)(manifest.files.chunks)
    assert chunk_table_bytes(read_chunk_table(table_data)) == table_data
    texts = open_folder(out).engine.texts
    read_back = [
        PaperText(
            paper.id,
            tuple(texts.chunk(doc_id) for doc_id in paper.doc_ids),
            texts.head(index).pages,
        )
        for index, paper in enumerate(papers)
    ]
    texts_data = (out / manifest.files.texts).read_bytes()
    dictionary = folder_reader(out)(manifest.files.text_dictionary)
    written, located = papertexts.texts_file_bytes(read_back, dictionary)
    assert written == texts_data
    assert [(paper.text_bytes, paper.text_sha256) for paper in papers] == [
        ((head, whole), sha) for head, whole, sha in located
    ]
    paper_table_data = folder_reader(out)(manifest.files.paper_table)
    assert paper_table_bytes(read_paper_table(paper_table_data)) == paper_table_data


def test_the_chunk_table_stores_each_column_in_the_fewest_bytes_and_refuses_a_damaged_one(site):
    """Each column is the smallest unsigned typed array that holds its values; a table cut short, with a
    column type it cannot hold, or naming a section it does not list is a clear error, not a crash."""
    out, _ = site
    manifest = read_manifest((out / "manifest.json").read_bytes())
    data = folder_reader(out)(manifest.files.chunks)
    table = read_chunk_table(data)
    assert [column.typecode for column in (table.page_start, table.page_span, table.section)] == ["B"] * 3
    assert len(data) < 4 * table.n + 2_000  # a byte a value, the section titles once
    wide = ChunkTable([70_000, 3], [0, 1], [0, 1], ["Intro", "Method"])
    again = read_chunk_table(chunk_table_bytes(wide))
    assert (again.page_start.typecode, list(again.page_start), again.section_of(1)) == (
        "I",
        [70_000, 3],
        "Method",
    )
    header = int.from_bytes(data[:4], "little")
    damaged = {
        "cut short": data[:-1],
        "of another type": data[:4] + data[4 : 4 + header].replace(b'"B"', b'"d"', 1) + data[4 + header :],
        "naming a section": ChunkTable([1], [0], [5], ["Intro"]).to_bytes(),
    }
    for what, bytes_ in damaged.items():
        with pytest.raises(ValueError, match="chunk table") as refused:
            read_chunk_table(bytes_)
        assert "\n" not in str(refused.value), what


def test_search_loads_a_paper_table_a_fraction_of_the_papers_file_and_the_vectors_apart(site):
    """The table keeps what search reads of each paper, with the same values as the papers file; the
    vectors file holds each paper's vector as int8 rows in the same order."""
    out, _ = site
    manifest = read_manifest((out / "manifest.json").read_bytes())
    full_data = folder_reader(out)(manifest.files.papers)
    table_data = folder_reader(out)(manifest.files.paper_table)
    full, table = read_papers(full_data), read_paper_table(table_data)
    assert len(table_data) < len(full_data) / 4  # these papers' abstracts are short; the mirror's: 0.12
    assert read_paper_table(full_data) == table  # the table's fields, read from either file
    keep = set(TABLE_FIELDS)
    for whole, searched in zip(full, table, strict=True):
        assert all(searched.to_json()[field] == whole.to_json()[field] for field in keep)
        assert not searched.abstract and not searched.sections and searched.vector is None
    data = folder_reader(out)(manifest.files.paper_vectors)
    signed, dims = memoryview(data).cast("b"), manifest.model.dims
    rows = [list(signed[at : at + dims]) for at in range(0, len(data), dims)]
    assert rows == [PaperVector.decode(paper.vector or "") for paper in full]
    assert read_paper_vectors(data, len(full)).rows == len(full)
    gzipped = {artifact.path for artifact in manifest.artifacts if artifact.path.endswith(".gz")}
    assert {manifest.files.paper_table + ".gz", manifest.files.papers + ".gz"} <= gzipped
    with pytest.raises(ValueError, match="do not hold 2 equal rows"):
        read_paper_vectors(b"\x01\x02\x03", 2)
