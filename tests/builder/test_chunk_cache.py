"""Chunks are cached per parsed PDF and chunker fingerprint, so a rebuild with nothing new re-counts
no paper: what the cache holds is what the site shows, and a damaged entry is made again."""

import json
import shutil

from support.builds import ADDED_PAPER, SMALL_PAPERS, write_corpus

from builder import config
from builder.pipeline import BuildOptions, ingest
from readingroom_core.browser import open_folder


def cached_chunk_files(cache):
    return sorted((cache / "chunks").glob("*.json"))


def test_the_cache_holds_the_chunks_the_site_shows(built_sites):
    files = cached_chunk_files(built_sites.cache)
    assert len(files) == len((*SMALL_PAPERS, ADDED_PAPER))  # one entry a paper: the rebuild reused them
    cached = {row["chunk_id"]: row["text"] for path in files for row in json.loads(path.read_text())}
    engine = open_folder(built_sites.second).engine
    shown = {chunk.id: chunk.text for chunk in (engine.chunk(doc_id) for doc_id in range(engine.n_chunks))}
    assert shown == cached


def test_a_rebuild_reads_its_chunks_from_the_cache_and_remakes_a_damaged_entry(
    built_sites, generated_corpus, tmp_path
):
    cache = tmp_path / "cache"
    shutil.copytree(built_sites.cache, cache)
    listed = write_corpus(tmp_path / "corpus.toml", SMALL_PAPERS)
    options = BuildOptions(
        corpus_path=listed,
        out_dir=tmp_path / "site",
        cache_dir=cache,
        progress=False,
        jobs=1,
        arxiv_api=generated_corpus.server.api_url,
        arxiv_delay=0,
    )
    corpus = config.load_corpus(listed)
    first = ingest(corpus, options).papers[0]
    entry = next(
        path
        for path in cached_chunk_files(cache)
        if json.loads(path.read_text())[0]["chunk_id"] == first.chunks[0].chunk_id
    )

    rows = json.loads(entry.read_text())
    rows[0]["text"] = "marked by the test"
    entry.write_text(json.dumps(rows))
    assert ingest(corpus, options).papers[0].chunks[0].text == "marked by the test"

    entry.write_text("{not json")
    remade = ingest(corpus, options).papers[0].chunks
    assert remade == first.chunks
    assert json.loads(entry.read_text())[0]["text"] == first.chunks[0].text
