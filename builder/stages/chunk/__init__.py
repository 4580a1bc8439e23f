"""Chunk stage: every parsed paper cut into passages (`chunker`), kept per parsed PDF so that a rebuild
with nothing new neither loads the tokenizer nor re-counts a paper (counting is most of a warm rebuild).

A cache entry (`<cache>/chunks/<key>.json`) is keyed by what the chunks depend on: the chunker's code,
its settings and the tokenizer (`chunk_fingerprint`), the parser's version, the PDF, the paper's title
(the context line) and the document prefix.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path

from tqdm import tqdm

from builder.models import Chunk, Failure, FetchedPaper, IngestedPaper, ParsedPaper
from builder.scratch import write_text_atomically
from builder.stages.chunk import chunker
from builder.stages.chunk.chunker import ChunkSettings, TokenCounter, chunk_paper
from builder.stages.parse import PARSER_VERSION


def chunk_fingerprint(model_dir: Path, settings: ChunkSettings) -> str:
    """What chunking depends on besides the parsed paper: the code of `chunker` (the one module that
    decides the chunks, so no version number has to be remembered), its settings and the tokenizer that
    counts the word pieces."""
    digest = hashlib.sha256()
    digest.update(Path(chunker.__file__).read_bytes())
    digest.update(repr(settings).encode())
    for name in ("tokenizer.json", "sentence_bert_config.json"):  # word pieces, and the model's limit
        if (model_dir / name).exists():
            digest.update((model_dir / name).read_bytes())
    return digest.hexdigest()


def chunk_papers(
    parsed: list[tuple[FetchedPaper, ParsedPaper]],
    model_dir: Path,
    document_prefix: str,
    cache_dir: Path,
    progress: bool,
) -> tuple[list[IngestedPaper], list[Failure]]:
    """Every paper with its chunks, from the cache where it holds them; a paper without searchable
    text becomes a Failure."""
    settings = ChunkSettings()
    fingerprint = chunk_fingerprint(model_dir, settings)
    counter = None
    ingested, failures = [], []
    for fetched, paper in tqdm(parsed, desc="chunk", unit="paper", disable=not progress):
        parts = (fingerprint, PARSER_VERSION, fetched.pdf_sha256, fetched.meta.title, document_prefix)
        path = cache_dir / "chunks" / f"{hashlib.sha256(chr(0).join(parts).encode()).hexdigest()}.json"
        chunks = _read_chunks(path)
        if chunks is None:
            counter = counter or TokenCounter(model_dir)
            chunks = chunk_paper(
                paper, fetched.meta.title, counter, settings, document_prefix=document_prefix
            )
            _write_chunks(path, chunks)
        if chunks:
            ingested.append(IngestedPaper(fetched, paper, chunks))
        else:
            failures.append(
                Failure(
                    paper.arxiv_id,
                    "chunk",
                    "no searchable text in the PDF (scanned or image-only?)",
                    "provide a PDF with a text layer, or remove the paper from the reading list",
                )
            )
    return ingested, failures


def _read_chunks(path: Path) -> list[Chunk] | None:
    """The cached chunks, or None when absent or unreadable (a damaged entry is simply made again)."""
    try:
        return [Chunk(**row) for row in json.loads(path.read_text(encoding="utf-8"))]
    except (OSError, ValueError, TypeError):
        return None


def _write_chunks(path: Path, chunks: list[Chunk]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomically(path, json.dumps([asdict(c) for c in chunks], ensure_ascii=False))
