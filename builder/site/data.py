"""The site's data files, written content-hashed from what the build holds: the papers' texts, the
papers file and what search loads of it (the paper table and vectors), the chunk table, the BM25
postings, the dense lists and the query encoder; and the manifest that names them (saved once render has
added the runtime). The HNSW file goes beside the site (`writers/hnsw.py`). Each family's bytes come from
its writer (`builder/writers/`) through the typed records of `readingroom_core.formats`, which owns the
formats; this module names the files and puts them on disk."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from builder.citation_graph import CitationGraph, graph_bytes, list_graph
from builder.embedding import ModelIdentity
from builder.list_names import paper_names, with_list_names
from builder.models import Chunk, IngestedPaper, Settings
from builder.query_encoder import cached_query_encoder
from builder.report import BuildReport
from builder.site.manifest import make_manifest
from builder.site.search_files import search_index_files
from builder.site.store import stored_gzipped, write_hashed, write_plain
from builder.stages.embed import Embedded
from builder.writers.hnsw import IndexParams
from builder.writers.missing import list_missing, missing_file_bytes
from builder.writers.papers import paper_record, paper_table_bytes, paper_vectors_bytes
from builder.writers.texts import paper_text, preset_dictionary, texts_file_bytes
from builder.writers.wordpieces import word_piece_directory
from readingroom_core.formats.chunks import ChunkTable, chunk_table_bytes
from readingroom_core.formats.manifest import Artifact, Bm25Section, Counts, DataFiles, Manifest
from readingroom_core.formats.papers import PaperRecord, PaperVector, papers_bytes
from readingroom_core.formats.versioned import compact_json

BM25_INDEXED = "context line + chunk text"  # Chunk.indexed_text


@dataclass(frozen=True)
class SiteData:
    """What render needs of the data files, kept in memory: the manifest so far, the paper records and
    the list's citation graph; and how the vectors were quantized, for the HNSW file beside the site."""

    manifest: Manifest
    papers: list[PaperRecord]
    graph: CitationGraph
    index: IndexParams


@dataclass(frozen=True)
class SearchFiles:
    """The files search reads (papers, chunks, postings, dense lists) by role, and how they were made."""

    files: dict[str, Artifact]
    ranged: list[Artifact]  # read by range: listed with their checksums, never gzipped
    index: IndexParams
    bm25: Bm25Section


def write_site_data(
    out_dir: Path,
    papers: list[IngestedPaper],
    embedded: Embedded,
    settings: Settings,
    cache_dir: Path,
    report: BuildReport,
) -> SiteData:
    """Every data file the browser runtime loads, content-hashed, and the manifest that names them."""
    with report.timed("index"):
        texts = write_paper_texts(out_dir, papers, embedded.papers)
        records = with_list_names(texts.records, paper_names(papers, cache_dir))
        artifacts: list[Artifact] = [texts.texts]
        chunks = [chunk for paper in papers for chunk in paper.chunks]
        search = write_search_files(out_dir, records, chunks, embedded.chunks)
    with report.timed("encoder"):
        encoder_files, word_piece_rows, encoder_config = write_query_encoder(
            out_dir, embedded.identity, cache_dir
        )
    with report.timed("graph"):
        graph = list_graph(papers, cache_dir)
        graph_file = write_hashed(out_dir, "data", "graph", ".json", graph_bytes(graph))
        missing = missing_file_bytes(list_missing(papers, cache_dir))  # the works cited and not held
        missing_file = write_hashed(out_dir, "data", "missing", ".json", missing)
    files = {**search.files, **encoder_files, "text_dictionary": texts.dictionary, "missing": missing_file}
    for artifact in files.values():
        if artifact not in search.ranged:  # a ranged file named by a role too stays as it is
            artifacts += stored_gzipped(out_dir, artifact)
    artifacts += [*search.ranged, word_piece_rows]
    files["graph"] = graph_file  # stored as it is: the browser never reads it, the pages are made from it
    artifacts.append(graph_file)
    manifest = make_manifest(
        title=settings.title,
        base_url=settings.base_url,
        model=embedded.identity,
        index=search.index,
        bm25=search.bm25,
        encoder=encoder_config,
        counts=Counts(
            papers=len(papers), pages=report.pages, chunks=len(chunks), failures=len(report.failures)
        ),
        files=DataFiles(texts=texts.texts.path, **{role: artifact.path for role, artifact in files.items()}),
        artifacts=artifacts,
    )
    return SiteData(manifest, records, graph, search.index)


@dataclass(frozen=True)
class WrittenTexts:
    """The papers' records, each naming where its text lies in the texts file, and the files."""

    records: list[PaperRecord]
    texts: Artifact  # read by range
    dictionary: Artifact


def write_paper_texts(out_dir: Path, papers: list[IngestedPaper], vectors: np.ndarray) -> WrittenTexts:
    """The texts file (`writers/texts.py`) and its preset dictionary, and each paper's record
    naming its part of that file; `vectors`: the papers' float vectors (the paper view), stored in the
    records."""
    texts = [paper_text(paper.meta.arxiv_id, paper.chunks, paper.parsed) for paper in papers]
    dictionary = preset_dictionary([chunk.text for text in texts for chunk in text.chunks])
    data, located = texts_file_bytes(texts, dictionary)
    records, first = [], 0
    for paper, vector, (head_bytes, text_bytes, head_sha) in zip(papers, vectors, located, strict=True):
        records.append(
            paper_record(
                paper.meta,
                first,
                len(paper.chunks),
                (head_bytes, text_bytes),
                ref=paper.fetched.ref,
                parsed=paper.parsed,
                vector=PaperVector.encode(vector.tolist()),
                text_sha256=head_sha,
            )
        )
        first += len(paper.chunks)
    return WrittenTexts(
        records,
        write_hashed(out_dir, "data", "texts", ".bin", data),
        write_hashed(out_dir, "data", "text-dictionary", ".bin", dictionary),
    )


def write_search_files(
    out_dir: Path, records: list[PaperRecord], chunks: list[Chunk], vectors: np.ndarray
) -> SearchFiles:
    """The papers file, the chunk table and the index files (doc id = chunk position): the ranged ones
    are listed as artifacts of their own (stored as they are), the rest by role."""
    table = ChunkTable.from_rows((c.page_start, c.page_end, c.section) for c in chunks)
    files = {
        "papers": write_hashed(out_dir, "data", "papers", ".json", papers_bytes(records)),
        "paper_table": write_hashed(out_dir, "data", "paper-table", ".json", paper_table_bytes(records)),
        "chunks": write_hashed(out_dir, "data", "chunks", ".bin", chunk_table_bytes(table)),
    }
    paper_vectors = paper_vectors_bytes(records)
    if paper_vectors is not None:
        files["paper_vectors"] = write_hashed(out_dir, "data", "paper-vectors", ".bin", paper_vectors)
    index = search_index_files([c.indexed_text for c in chunks], vectors)
    written = {path: write_plain(out_dir, path, data) for path, data in index.files.items()}
    files.update({role: written[path] for role, path in index.roles.items()})
    ranged = [written[path] for path in sorted(index.ranged)]
    return SearchFiles(files, ranged, index.params, Bm25Section(index.k1, index.b, BM25_INDEXED))


def write_query_encoder(
    out_dir: Path, identity: ModelIdentity, cache_dir: Path
) -> tuple[dict[str, Artifact], Artifact, dict]:
    """The query encoder's files by role (`encoder`, `word_pieces`, `vocab`, `char_classes`) from its
    cached export, the word-piece rows file the `word_pieces` directory names (read by range), and the
    config as the manifest's `encoder` section (without the export's own file names)."""
    exported = cached_query_encoder(Path(identity.path), identity.weights_sha256, cache_dir)
    config = json.loads(exported.config.read_text(encoding="utf-8"))
    table = exported.word_pieces.read_bytes()
    rows = write_hashed(out_dir, "model", "word-pieces", ".bin", table)
    directory = word_piece_directory(rows.path, table, config["dims"])
    files = {
        role: write_hashed(out_dir, "model", path.stem.replace("_", "-"), path.suffix, path.read_bytes())
        for role, path in (
            ("encoder", exported.onnx),
            ("vocab", exported.vocab),
            ("char_classes", exported.char_classes),
        )
    }
    files["word_pieces"] = write_hashed(
        out_dir, "model", "word-piece-directory", ".json", compact_json(directory.to_json())
    )
    exported_names = ("onnx", "word_pieces", "vocab", "char_classes")
    return files, rows, {key: value for key, value in config.items() if key not in exported_names}
