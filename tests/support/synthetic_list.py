"""Synthetic reading lists of any size, made of the mirror's real text and vectors, for the scale benchmark.

The real list (the mirror, ingested from a warm build cache: no parsing, no model) is the source. Each
synthetic paper takes a real paper as its base and rewrites its text sentence by sentence: about half
of the sentences (`SHARE_REPLACED`) are swapped for sentences of the same paper or of a donor paper,
so no two synthetic papers repeat a passage while term statistics stay those of real papers. Pages,
sections and the references span keep their places. The real chunker cuts the new text (and fills the
chunk cache as a build would). Vectors cannot come from the encoder without a GPU in reasonable time,
so each chunk gets the real vector of the base chunk at the same place in the paper, plus Gaussian
noise. The noise is sized per base vector by how close its own nearest real neighbour is (two noisy
copies of a vector then sit about as close as it sits to its neighbour, so the spread of
nearest-neighbour cosines stays real), times one factor (`sigma`) calibrated so that the cosine to the
nearest neighbour has the real list's median (`calibrate_sigma`): the dense side is "real vectors,
calibrated perturbation", never the encoder's output for that text, and every figure made from it
says so. Each real paper's first copy keeps its authors; a later copy's first author carries the copy's
number (`copy_authors`), so references link copies at the real list's rate, not once per copy.

`write_list` leaves a build cache and a corpus file; `python -m builder build --offline --cache ...`
then builds the site through the real pipeline with nothing left to parse or embed.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from builder import config, pipeline
from builder.embedding import EmbeddingCache, ModelIdentity, text_key
from builder.models import FetchedPaper, IngestedPaper, PageSpan, PaperMeta, ParsedPaper, Section
from builder.paths import resolve_model_dir
from builder.stages import chunk
from builder.stages.chunk.chunker import sentence_spans
from builder.stages.embed import ABOUT_ID, about_text
from builder.stages.fetch.sources import Cache, cache_paper_dir
from builder.stages.parse import PARSER_VERSION

SHARE_REPLACED = 0.5  # of a synthetic paper's sentences, taken from elsewhere
DONOR_SHARE = 0.4  # of the replacements, taken from the donor paper (the rest from the base paper)
ID_PREFIX = "3001"  # synthetic ids 3001.00001…: a valid arXiv form no real paper has yet


@dataclass(frozen=True)
class Source:
    """The real list: its papers (chunks included), one unit vector per chunk in doc order, and each
    paper's title-and-abstract vector (None without an abstract)."""

    corpus: config.Corpus
    papers: list[IngestedPaper]
    vectors: np.ndarray
    abouts: list[np.ndarray | None]
    identity: ModelIdentity
    cache_dir: Path
    noise: np.ndarray  # per chunk: the noise norm at which copies sit as close as its real neighbour

    def paper_span(self, index: int) -> slice:
        """The rows of papers[index]'s chunks in `vectors` and `noise`."""
        start = sum(len(p.chunks) for p in self.papers[:index])
        return slice(start, start + len(self.papers[index].chunks))


def load_source(corpus_path: Path, mirror: Path | None, cache_dir: Path) -> Source:
    """The mirror's papers and vectors through the real pipeline, all from the (warm) cache."""
    corpus = config.load_corpus(corpus_path)
    options = pipeline.BuildOptions(
        corpus_path, cache_dir / "unused-out", cache_dir, mirror=mirror, offline=True, progress=False
    )
    ingested = pipeline.ingest(corpus, options)
    embedded = pipeline.embed_papers(ingested.papers, corpus, options, ingested.report)
    if ingested.report.embedded_chunks:
        raise SystemExit(f"{cache_dir} is not warm: {ingested.report.embedded_chunks} chunks were embedded")
    cache = EmbeddingCache(cache_dir, embedded.identity)
    abouts = []
    for paper in ingested.papers:
        stored = cache.load(paper.meta.arxiv_id)
        abouts.append(next((v for k, v in stored.items() if k.startswith(f"{ABOUT_ID}:")), None))
    noise = noise_scales(embedded.chunks)
    return Source(corpus, ingested.papers, embedded.chunks, abouts, embedded.identity, cache_dir, noise)


# ------------------------------------------------------------------------------------ nearest neighbours


def nearest_cosines(queries: np.ndarray, pool: np.ndarray, query_rows: np.ndarray) -> np.ndarray:
    """Each query's cosine to its nearest neighbour in `pool` (unit rows), itself (pool row
    query_rows[i]) left out."""
    best = np.empty(len(queries), np.float32)
    for start in range(0, len(queries), 256):
        scores = queries[start : start + 256] @ pool.T
        scores[np.arange(len(scores)), query_rows[start : start + 256]] = -2.0
        best[start : start + 256] = scores.max(axis=1)
    return best


def cosine_summary(cosines: np.ndarray) -> dict[str, float]:
    quantiles = np.quantile(cosines, [0.1, 0.5, 0.9])
    return {f"p{q}": round(float(v), 4) for q, v in zip((10, 50, 90), quantiles, strict=True)}


def perturbed(vectors: np.ndarray, sigma: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Unit rows of vectors + N(0, sigma²/dims) noise per component (noise of norm ≈ sigma, per row)."""
    scale = np.asarray(sigma, np.float32).reshape(-1, 1) / vectors.shape[1] ** 0.5
    noisy = vectors + rng.standard_normal(vectors.shape, dtype=np.float32) * scale
    return (noisy / np.linalg.norm(noisy, axis=1, keepdims=True)).astype(np.float32)


def noise_scales(vectors: np.ndarray) -> np.ndarray:
    """Per vector, the noise norm s at which two noisy copies have the cosine (1 / (1 + s²)) that the
    vector has to its nearest real neighbour."""
    if len(vectors) < 2:
        return np.full(len(vectors), 0.5, np.float32)
    nearest = np.clip(nearest_cosines(vectors, vectors, np.arange(len(vectors))), 0.05, 0.999)
    return np.sqrt(1 / nearest - 1).astype(np.float32)


def real_nearest(vectors: np.ndarray, sample: int, rng: np.random.Generator) -> np.ndarray:
    rows = rng.choice(len(vectors), min(sample, len(vectors)), replace=False)
    return nearest_cosines(vectors[rows], vectors, rows)


def calibrate_sigma(
    vectors: np.ndarray, noise: np.ndarray, copies: int, rng: np.random.Generator, sample: int = 600
) -> float:
    """The factor on `noise` at which `copies` perturbed copies of every real vector have the real
    list's median cosine to the nearest neighbour (bisection; more copies need more noise)."""
    target = float(np.median(real_nearest(vectors, sample, rng)))
    low, high = 0.0, 4.0
    for _ in range(9):
        sigma = (low + high) / 2
        pool = perturbed(np.repeat(vectors, copies, axis=0), np.repeat(noise, copies) * sigma, rng)
        rows = rng.choice(len(pool), min(sample, len(pool)), replace=False)
        median = float(np.median(nearest_cosines(pool[rows], pool, rows)))
        low, high = (sigma, high) if median > target else (low, sigma)
    return (low + high) / 2


# ------------------------------------------------------------------------------------------- the text


def sentences_of(paper: ParsedPaper) -> list[str]:
    return [paper.text[a:b] for a, b in sentence_spans(paper.text, 0, len(paper.text))]


def boundaries_of(paper: ParsedPaper) -> list[int]:
    """Offsets that must keep their place: pages, headings, the references."""
    marks = {0, len(paper.text)}
    marks.update(offset for page in paper.pages for offset in (page.start, page.end))
    marks.update(section.start for section in paper.sections)
    marks.update(paper.references_span or ())
    return sorted(mark for mark in marks if 0 <= mark <= len(paper.text))


def rewrite_segment(text: str, pool: list[str], rng: random.Random) -> str:
    """`text` with SHARE_REPLACED of its sentences swapped for sentences from `pool`."""
    pieces, cursor = [], 0
    for a, b in sentence_spans(text, 0, len(text)):
        pieces.append(text[cursor:a])
        pieces.append(rng.choice(pool) if pool and rng.random() < SHARE_REPLACED else text[a:b])
        cursor = b
    pieces.append(text[cursor:])
    return "".join(pieces)


def recombined(base: ParsedPaper, pools: tuple[list[str], list[str]], new_id: str, rng: random.Random):
    """The base paper's text rewritten (`rewrite_segment`) between its boundaries, which move with it."""
    own, donor = pools
    marks = boundaries_of(base)
    moved, parts, length = {marks[0]: 0}, [], 0
    for a, b in zip(marks, marks[1:], strict=False):
        pool = donor if rng.random() < DONOR_SHARE else own
        parts.append(rewrite_segment(base.text[a:b], pool, rng))
        length += len(parts[-1])
        moved[b] = length
    span = base.references_span
    return replace(
        base,
        arxiv_id=new_id,
        text="".join(parts),
        pages=[PageSpan(p.page, moved[p.start], moved[p.end]) for p in base.pages],
        sections=[Section(s.title, moved[s.start], s.page, s.level) for s in base.sections],
        references_span=(moved[span[0]], moved[span[1]]) if span else None,
        flags=[],
        unmapped_glyphs=0,
    )


# ------------------------------------------------------------------------------------------ the list


@dataclass(frozen=True)
class SyntheticPaper:
    fetched: FetchedPaper
    parsed: ParsedPaper
    base: int  # index of the real paper it rewrites
    tags: list[str]


def copy_authors(authors: list[str], number: int, originals: int) -> list[str]:
    """The base paper's authors; past the first round of copies, the first author's name ends in the copy's
    number, so that a reference to the real paper names its first copy, not every copy (matching by first
    author and year linked each reference to all 90 copies at 10,000 papers: 276,864 in-list citations,
    against 4.4 per paper in the mirror)."""
    if number <= originals or not authors:
        return list(authors)
    return [f"{authors[0]} {number}", *authors[1:]]


def synthetic_id(number: int) -> str:
    return f"{ID_PREFIX}.{number:05d}"


def fake_pdf(folder: Path, meta: PaperMeta) -> FetchedPaper:
    """The cache entry fetch finds for the paper: a stand-in PDF (its checksum keys the parse cache,
    which already holds the text; nothing ever opens it) and its metadata."""
    folder.mkdir(parents=True, exist_ok=True)
    data = f"%PDF-1.4\n% synthetic stand-in for {meta.arxiv_id}: its text is in the parse cache\n".encode()
    (folder / "paper.pdf").write_bytes(data)
    Cache.complete(folder, meta)
    return FetchedPaper(meta, str(folder / "paper.pdf"), hashlib.sha256(data).hexdigest(), "cache")


def make_papers(source: Source, count: int, cache_dir: Path, seed: int) -> list[SyntheticPaper]:
    """`count` papers rewritten from the source's, each base used in turn, and their fetch and parse
    cache entries."""
    rng = random.Random(seed)
    pools = [sentences_of(p.parsed) for p in source.papers]
    tags = {ref.arxiv_id: list(ref.tags) for ref in source.corpus.papers}
    made = []
    for number in range(1, count + 1):
        base = (number - 1) % len(source.papers)
        donor = rng.choice([i for i in range(len(source.papers)) if i != base] or [base])
        real = source.papers[base]
        new_id = synthetic_id(number)
        title, authors = f"{real.meta.title} ({number})", copy_authors(real.meta.authors, number, len(pools))
        meta = replace(real.meta, arxiv_id=new_id, version="v1", title=title, authors=authors)
        fetched = fake_pdf(cache_paper_dir(cache_dir, new_id, "v1"), meta)
        parsed = recombined(real.parsed, (pools[base], pools[donor]), new_id, rng)
        parse_cache = cache_dir / "parsed" / PARSER_VERSION / f"{fetched.pdf_sha256}.json"
        parse_cache.parent.mkdir(parents=True, exist_ok=True)
        parse_cache.write_text(json.dumps(parsed.to_json(), ensure_ascii=False), encoding="utf-8")
        made.append(SyntheticPaper(fetched, parsed, base, tags.get(real.meta.arxiv_id, [])))
    return made


def base_rows(real: IngestedPaper, new: IngestedPaper) -> np.ndarray:
    """For each new chunk, the base chunk (its index in the real paper) at the same relative place."""
    starts = np.array([c.char_start for c in real.chunks]) / max(len(real.parsed.text), 1)
    places = np.array([c.char_start for c in new.chunks]) / max(len(new.parsed.text), 1)
    return np.abs(places[:, None] - starts[None, :]).argmin(axis=1)


def store_vectors(
    source: Source, papers: list[SyntheticPaper], ingested: list[IngestedPaper], cache_dir: Path, sigma: float
) -> np.ndarray:
    """Perturbed real vectors in the embedding cache, under the keys the embed stage looks up; returns
    the chunk vectors in doc order (what exhaustive search is measured against)."""
    rng = np.random.default_rng(len(papers))
    cache = EmbeddingCache(cache_dir, source.identity)
    prefix = source.identity.document_prefix
    by_id = {p.fetched.meta.arxiv_id: p for p in papers}
    all_rows = []
    for new in ingested:
        synthetic = by_id[new.meta.arxiv_id]
        span = source.paper_span(synthetic.base)
        bases = base_rows(source.papers[synthetic.base], new)
        rows = perturbed(source.vectors[span][bases], source.noise[span][bases] * sigma, rng)
        all_rows.append(rows)
        keys = [text_key(c.chunk_id, prefix + c.indexed_text) for c in new.chunks]
        about, about_vector = about_text(new.meta.title, new.meta.abstract), source.abouts[synthetic.base]
        if about and about_vector is not None:
            keys.append(text_key(ABOUT_ID, prefix + about))
            typical = float(np.median(source.noise)) * sigma
            rows = np.vstack([rows, perturbed(about_vector[None, :], np.array([typical]), rng)])
        cache.store(new.meta.arxiv_id, keys, rows)
    return np.concatenate(all_rows)


def corpus_text(source: Source, papers: list[SyntheticPaper]) -> str:
    settings = source.corpus.settings
    lines = [
        "[site]",
        f"title = {json.dumps(f'Synthetic reading list: {len(papers)} papers rewritten from the mirror')}",
        'base_url = "/"',
        f"model = {json.dumps(settings.model)}",
    ]
    if settings.query_prefix or settings.document_prefix:
        lines += [f"query_prefix = {json.dumps(settings.query_prefix)}"]
        lines += [f"document_prefix = {json.dumps(settings.document_prefix)}"]
    for paper in papers:
        lines += ["", "[[paper]]", f"id = {json.dumps(paper.fetched.meta.arxiv_id)}"]
        lines += [f"tags = {json.dumps(paper.tags)}"]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class SyntheticList:
    corpus: Path
    cache: Path
    chunks: int
    chunk_ids: list[str]  # in doc order
    vectors: np.ndarray  # unit float32 rows, doc order
    sigma: float  # the factor on Source.noise


def write_list(source: Source, count: int, folder: Path, sigma: float, seed: int = 0) -> SyntheticList:
    """A corpus file and a build cache for `count` synthetic papers under `folder`; the cache shares the
    source cache's encoder export (linked, not copied)."""
    cache = folder / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    if not (cache / "encoder").exists():
        (cache / "encoder").symlink_to(source.cache_dir / "encoder", target_is_directory=True)
    papers = make_papers(source, count, cache, seed)
    model_dir = resolve_model_dir(source.corpus.settings.model)
    ingested, failures = chunk.chunk_papers(
        [(p.fetched, p.parsed) for p in papers],
        model_dir,
        source.corpus.settings.document_prefix,
        cache,
        progress=False,
    )
    if failures:
        raise SystemExit(f"{len(failures)} synthetic papers did not chunk: {failures[0].line()}")
    vectors = store_vectors(source, papers, ingested, cache, sigma)
    corpus = folder / "corpus.toml"
    corpus.write_text(corpus_text(source, papers), encoding="utf-8")
    chunk_ids = [c.chunk_id for paper in ingested for c in paper.chunks]
    return SyntheticList(corpus, cache, len(chunk_ids), chunk_ids, vectors, sigma)
