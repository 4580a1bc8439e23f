"""The papers' records (`readingroom_core.formats.papers`) from what the build holds of each paper, and
what search loads of them: the paper table and the papers' vectors (`readingroom_core.readers.papers`)."""

from __future__ import annotations

import base64
from collections.abc import Iterable, Sequence

from builder.models import PaperMeta, PaperRef, ParsedPaper
from builder.titles import title_case
from readingroom_core.formats.papers import TABLE_FIELDS, PaperRecord, SectionEntry
from readingroom_core.formats.versioned import FORMAT_VERSION, compact_json
from readingroom_core.navigation import short_names


def paper_record(
    meta: PaperMeta,
    first_chunk: int,
    chunk_count: int,
    text_bytes: tuple[int, int],
    *,
    ref: PaperRef | None = None,
    parsed: ParsedPaper | None = None,
    vector: str | None = None,
    text_sha256: str = "",
) -> PaperRecord:
    """The papers file's record of one paper: arXiv's metadata, the reading list's tags and note, its
    pages and headings, its chunks' doc ids, where its text lies and its head's checksum, its vector."""
    return PaperRecord(
        id=meta.arxiv_id,
        title=title_case(meta.title, meta.abstract),
        first_chunk=first_chunk,
        chunk_count=chunk_count,
        text_bytes=text_bytes,
        authors=tuple(meta.authors),
        year=meta.year,
        categories=tuple(meta.categories),
        tags=tuple(ref.tags) if ref else (),
        version=meta.version,
        abstract=meta.abstract,
        published=meta.published,
        updated=meta.updated,
        first_version=meta.first_version,
        primary_category=meta.primary_category,
        abs_url=meta.abs_url,
        pdf_url=meta.pdf_url,
        note=ref.note if ref else "",
        pages=parsed.page_count if parsed else 0,
        sections=tuple(SectionEntry(s.title, s.page, s.level) for s in parsed.sections) if parsed else (),
        vector=vector,
        short_names=short_names(meta.title, meta.abstract),
        text_sha256=text_sha256,
    )


def paper_table_bytes(records: Iterable[PaperRecord]) -> bytes:
    rows = []
    for record in records:
        full = record.to_json()
        rows.append({field: full[field] for field in TABLE_FIELDS})
    return compact_json({"v": FORMAT_VERSION, "papers": rows})


def paper_vectors_bytes(records: Sequence[PaperRecord]) -> bytes | None:
    """Every paper's vector as int8 rows in record order; None where a paper has none (no paper view)."""
    if not records or any(record.vector is None for record in records):
        return None
    rows = [base64.b64decode(record.vector or "") for record in records]
    if len({len(row) for row in rows}) != 1:
        raise ValueError("the papers' vectors differ in length")
    return b"".join(rows)
