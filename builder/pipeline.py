"""The build, stage by stage: corpus → fetch → parse → chunk → (embed → index → render).

Each stage is a function of plain data; this module only sequences them, keeps per-paper failures
from stopping the rest, and does the disk I/O (caches, outputs, lock file).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

import numpy as np
from tqdm import tqdm

from builder import config
from builder.models import Chunk, Failure, FetchedPaper, LockEntry, PaperMeta, ParsedPaper
from builder.paths import resolve_model_dir
from builder.sitedir import staged_site
from builder.stages import chunk, embed, encoder, fetch, index, manifest, parse, store
from builder.stages.chunk import ChunkSettings
from builder.stages.render import render_pages
from builder.stages.report import BuildReport, FlaggedPage, write_report
from builder.workers import die_with_parent
from readingroom_core import bm25 as postings
from readingroom_core import sitedata


@dataclass(frozen=True)
class BuildOptions:
    corpus_path: Path
    out_dir: Path
    cache_dir: Path
    mirror: Path | None = None
    offline: bool = False
    strict: bool = False
    progress: bool = True
    jobs: int = max(1, os.cpu_count() or 1)
    arxiv_api: str | None = None  # arXiv API URL format; tests point it at a loopback server
    arxiv_delay: float = 3.0
    base_url: str | None = None  # overrides the corpus file's (the publishing workflow's Pages path)
    refresh: bool = False  # ask arXiv for the latest version of papers the corpus file does not pin


@dataclass
class IngestedPaper:
    """A paper that made it through ingestion: what arXiv says, its text, and its chunks."""

    fetched: FetchedPaper
    parsed: ParsedPaper
    chunks: list[Chunk] = field(default_factory=list)

    @property
    def meta(self) -> PaperMeta:
        return self.fetched.meta


@dataclass
class Ingest:
    papers: list[IngestedPaper]
    report: BuildReport


@contextmanager
def timed(report: BuildReport, stage: str) -> Iterator[None]:
    started = time.perf_counter()
    yield
    report.seconds[stage] = round(report.seconds.get(stage, 0.0) + time.perf_counter() - started, 3)


def fetch_options(options: BuildOptions) -> fetch.FetchOptions:
    extra = {"api_url": options.arxiv_api} if options.arxiv_api else {}
    return fetch.FetchOptions(
        cache_dir=options.cache_dir,
        mirror=options.mirror,
        offline=options.offline,
        delay_seconds=options.arxiv_delay,
        corpus_file=options.corpus_path,
        refresh=options.refresh,
        **extra,
    )


def fetch_corpus(corpus: config.Corpus, options: BuildOptions, report: BuildReport) -> list[FetchedPaper]:
    lock_path = config.lock_path_for(options.corpus_path)
    with timed(report, "fetch"):
        result = fetch.fetch_papers(
            corpus.papers,
            fetch_options(options),
            locked=config.load_lock(lock_path),
            progress=options.progress,
        )
    report.failures.extend(result.failures)
    refs = {ref.arxiv_id: ref for ref in corpus.papers}
    for paper in result.papers:
        paper.ref = refs.get(paper.meta.arxiv_id)
    return result.papers


def parse_cached(paper: FetchedPaper, cache_dir: Path) -> ParsedPaper:
    """Parsing is the slow step of a rebuild, so results are kept per PDF checksum and parser version."""
    path = cache_dir / "parsed" / parse.PARSER_VERSION / f"{paper.pdf_sha256}.json"
    if path.exists():
        return ParsedPaper.from_json(json.loads(path.read_text(encoding="utf-8")))
    parsed = parse.parse_pdf(Path(paper.pdf_path), paper.meta.arxiv_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(parsed.to_json(), ensure_ascii=False), encoding="utf-8")
    tmp.replace(path)
    return parsed


def _parse_job(args: tuple[FetchedPaper, Path]) -> ParsedPaper | Failure:
    paper, cache_dir = args
    arxiv_id = paper.meta.arxiv_id
    try:
        return parse_cached(paper, cache_dir)
    except parse.DamagedPDF as exc:
        if paper.source != "mirror":
            return Failure(arxiv_id, "parse", exc.reason, exc.hint)
        name = Path(paper.pdf_path).name  # the researcher's own folder: never ask them to delete from it
        hint = f"put a good copy of pdf/{name} into the mirror, or remove the paper from the reading list"
        return Failure(arxiv_id, "parse", exc.reason, hint)
    except parse.ParseError as exc:
        return Failure(arxiv_id, "parse", exc.reason, exc.hint)
    except Exception as exc:  # a PDF that breaks the parser must not break the build
        return Failure(
            arxiv_id,
            "parse",
            f"{Path(paper.pdf_path).name} could not be parsed ({type(exc).__name__}: {exc})",
            "report this PDF as a parser bug; the rest of the build went on",
        )


def parse_papers(
    papers: list[FetchedPaper], options: BuildOptions, report: BuildReport
) -> list[tuple[FetchedPaper, ParsedPaper]]:
    jobs = [(paper, options.cache_dir) for paper in papers]
    bar = dict(desc="parse", unit="paper", total=len(jobs), disable=not options.progress)
    with timed(report, "parse"):
        if options.jobs > 1 and len(jobs) > 1:
            with ProcessPoolExecutor(
                max_workers=min(options.jobs, len(jobs)),
                initializer=die_with_parent,
                initargs=(os.getpid(),),
            ) as pool:
                results = list(tqdm(pool.map(_parse_job, jobs), **bar))
        else:
            results = [_parse_job(job) for job in tqdm(jobs, **bar)]
    parsed = []
    for paper, result in zip(papers, results, strict=True):
        if isinstance(result, Failure):
            report.failures.append(result)
            continue
        parsed.append((paper, result))
        if result.unmapped_glyphs:
            report.unmapped_glyphs[result.arxiv_id] = result.unmapped_glyphs
        report.flagged_pages.extend(
            FlaggedPage(result.arxiv_id, flag.page, flag.kind, flag.detail) for flag in result.flags
        )
    return parsed


def chunk_fingerprint(model_dir: Path, settings: ChunkSettings) -> str:
    """What chunking depends on besides the parsed paper: the chunker's own code (so no version number
    has to be remembered), its settings and the tokenizer that counts the word pieces."""
    digest = hashlib.sha256()
    digest.update(Path(chunk.__file__).read_bytes())
    digest.update(repr(settings).encode())
    for name in ("tokenizer.json", "sentence_bert_config.json"):  # word pieces, and the model's limit
        if (model_dir / name).exists():
            digest.update((model_dir / name).read_bytes())
    return digest.hexdigest()


def chunk_papers(
    parsed: list[tuple[FetchedPaper, ParsedPaper]],
    corpus: config.Corpus,
    options: BuildOptions,
    report: BuildReport,
) -> list[IngestedPaper]:
    """Chunks are kept per parsed PDF, title and chunker fingerprint: a rebuild with nothing new neither
    loads the tokenizer nor re-counts a paper (on the 112-paper list that was 18 s of a 36 s rebuild)."""
    model_dir = resolve_model_dir(corpus.settings.model)
    settings = ChunkSettings()
    fingerprint = chunk_fingerprint(model_dir, settings)
    counter = None
    ingested = []
    with timed(report, "chunk"):
        for fetched, paper in tqdm(parsed, desc="chunk", unit="paper", disable=not options.progress):
            key = hashlib.sha256(
                "\0".join(
                    (
                        fingerprint,
                        parse.PARSER_VERSION,
                        fetched.pdf_sha256,
                        fetched.meta.title,
                        corpus.settings.document_prefix,
                    )
                ).encode()
            ).hexdigest()
            path = options.cache_dir / "chunks" / f"{key}.json"
            chunks = _read_chunks(path)
            if chunks is None:
                counter = counter or chunk.TokenCounter(model_dir)
                chunks = chunk.chunk_paper(
                    paper,
                    fetched.meta.title,
                    counter,
                    settings,
                    document_prefix=corpus.settings.document_prefix,
                )
                _write_chunks(path, chunks)
            if not chunks:
                report.failures.append(
                    Failure(
                        paper.arxiv_id,
                        "chunk",
                        "no searchable text in the PDF (scanned or image-only?)",
                        "provide a PDF with a text layer, or remove the paper from the reading list",
                    )
                )
                continue
            ingested.append(IngestedPaper(fetched, paper, chunks))
    return ingested


def _read_chunks(path: Path) -> list[Chunk] | None:
    """The cached chunks, or None when absent or unreadable (a damaged entry is simply made again)."""
    try:
        return [Chunk(**row) for row in json.loads(path.read_text(encoding="utf-8"))]
    except (OSError, ValueError, TypeError):
        return None


def _write_chunks(path: Path, chunks: list[Chunk]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps([asdict(c) for c in chunks], ensure_ascii=False), encoding="utf-8")
    tmp.replace(path)


def ingest(corpus: config.Corpus, options: BuildOptions) -> Ingest:
    report = BuildReport(listed=len(corpus.papers))
    fetched = fetch_corpus(corpus, options, report)
    parsed = parse_papers(fetched, options, report)
    papers = chunk_papers(parsed, corpus, options, report)
    report.papers = len(papers)
    report.pages = sum(p.parsed.page_count for p in papers)
    report.chunks = sum(len(p.chunks) for p in papers)
    report.tokens = sum(c.n_tokens for p in papers for c in p.chunks)
    return Ingest(papers, report)


@dataclass
class Embedded:
    """The build's vectors: one float32 unit row per chunk in doc-id order, and one per paper (its paper
    view: what the whole paper is about, from its abstract and its chunks)."""

    identity: embed.ModelIdentity
    chunks: np.ndarray
    papers: np.ndarray


def embed_chunks(
    papers: list[IngestedPaper], corpus: config.Corpus, options: BuildOptions, report: BuildReport
) -> Embedded:
    """Chunk and paper vectors; only texts new to the cache meet the model (which starts, and passes its
    sanity check, only then). A paper's title and abstract are embedded with its chunks."""
    model_dir = resolve_model_dir(corpus.settings.model)
    with timed(report, "embed"):
        identity = embed.identify(
            corpus.settings.model,
            model_dir,
            corpus.settings.query_prefix,
            corpus.settings.document_prefix,
        )
        model = embed.DocumentEncoder(model_dir, identity, document_encoder_path(options.cache_dir, identity))
        abouts = [embed.about_text(p.meta.title, p.meta.abstract) for p in papers]
        jobs = [
            (
                p.meta.arxiv_id,
                [c.chunk_id for c in p.chunks] + ([embed.ABOUT_ID] if about else []),
                [
                    identity.document_prefix + text
                    for text in [c.indexed_text for c in p.chunks] + ([about] if about else [])
                ],
            )
            for p, about in zip(papers, abouts, strict=True)
        ]
        per_paper, stats = embed.embed_papers(
            model, embed.EmbeddingCache(options.cache_dir, identity), jobs, progress=options.progress
        )
    report.embedded_chunks = stats.embedded
    chunk_rows = [rows[: len(p.chunks)] for p, rows in zip(papers, per_paper, strict=True)]
    paper_rows = [
        embed.paper_vector(rows, rows[len(p.chunks)] if about else None)
        for p, rows, about in zip(papers, per_paper, abouts, strict=True)
    ]
    dims = identity.dims
    return Embedded(
        identity,
        np.concatenate(chunk_rows) if chunk_rows else np.zeros((0, dims), np.float32),
        np.stack(paper_rows) if paper_rows else np.zeros((0, dims), np.float32),
    )


def document_encoder_path(cache_dir: Path, identity: embed.ModelIdentity) -> Path:
    """The chunk encoder's export depends only on the model and the engine: one per model identity."""
    engine = identity.engine.replace("/", "-")
    return cache_dir / "encoder" / f"{identity.weights_sha256[:20]}-documents-{engine}" / "model.onnx"


def export_encoder(model_dir: Path, identity: embed.ModelIdentity, cache_dir: Path) -> encoder.EncoderFiles:
    """The ONNX export takes a while and depends only on the model and the quantisation, so it is cached per
    model identity and quantisation (a new format re-exports instead of reusing the old file)."""
    quantization = hashlib.sha256(json.dumps(encoder.QUANTIZATION, sort_keys=True).encode()).hexdigest()[:8]
    folder = (
        cache_dir
        / "encoder"
        / f"{identity.weights_sha256[:20]}-{encoder.CONFIG_FORMAT.replace('/', '-')}-{quantization}"
    )
    files = encoder.EncoderFiles(
        onnx=folder / "query_encoder.onnx",
        vocab=folder / "vocab.txt",
        char_classes=folder / "char_classes.json",
        config=folder / "config.json",
    )
    if not all(path.exists() for path in (files.onnx, files.vocab, files.char_classes, files.config)):
        scratch = folder.with_name(folder.name + ".partial")
        shutil.rmtree(scratch, ignore_errors=True)
        encoder.export_query_encoder(model_dir, scratch)
        shutil.rmtree(folder, ignore_errors=True)
        scratch.replace(folder)
    return files


@dataclass
class SiteData:
    """What the data files hold, kept in memory for render: the manifest (written once, after render
    adds the runtime), the papers file's records and the int8 rows of the vector file, by doc id."""

    manifest: dict
    papers: list[dict]
    rows: np.ndarray


def write_site_data(
    out_dir: Path,
    papers: list[IngestedPaper],
    embedded: Embedded,
    corpus: config.Corpus,
    options: BuildOptions,
    report: BuildReport,
) -> SiteData:
    """Every data file the browser runtime loads, content-hashed, and the manifest that names them."""
    identity, vectors = embedded.identity, embedded.chunks
    artifacts: list[store.Artifact] = []
    records, chunks, first = [], [], 0
    with timed(report, "index"):
        for paper, paper_vector in zip(papers, embedded.papers, strict=True):
            text = store.write_hashed(
                out_dir,
                "data/text",
                store.safe_stem(paper.meta.arxiv_id),
                ".json",
                sitedata.paper_text_bytes(
                    paper.meta.arxiv_id,
                    first,
                    store.text_rows(paper.chunks),
                    store.page_rows(paper.parsed.pages),
                ),
            )
            artifacts += store.with_gzip(out_dir, text)
            records.append(
                store.paper_record(
                    paper.meta,
                    {**_paper_extra(paper), "vector": sitedata.paper_vector_text(paper_vector.tolist())},
                    first,
                    len(paper.chunks),
                    text.path,
                )
            )
            chunks += paper.chunks
            first += len(paper.chunks)
        files = {
            "papers": store.write_hashed(out_dir, "data", "papers", ".json", sitedata.papers_bytes(records)),
            "chunks": store.write_hashed(
                out_dir, "data", "chunks", ".json", sitedata.chunk_table_bytes(store.table_rows(chunks))
            ),
        }
        bm25 = postings.build_postings([c.indexed_text for c in chunks])
        files["postings"] = store.write_hashed(
            out_dir, "data", "postings", ".json", postings.postings_bytes(bm25)
        )
        with tempfile.TemporaryDirectory(prefix="readingroom-index-") as scratch:
            index_path = Path(scratch) / "vectors.usearch"
            params = index.write_index(index_path, np.arange(len(chunks), dtype=np.uint64), vectors)
            files["vectors"] = store.write_hashed(
                out_dir, "data", "vectors", ".usearch", index_path.read_bytes()
            )
    with timed(report, "encoder"):
        exported = export_encoder(Path(identity.path), identity, options.cache_dir)
        encoder_config = json.loads(exported.config.read_text(encoding="utf-8"))
        for role, path in (
            ("encoder", exported.onnx),
            ("vocab", exported.vocab),
            ("char_classes", exported.char_classes),
        ):
            files[role] = store.write_hashed(
                out_dir, "model", path.stem.replace("_", "-"), path.suffix, path.read_bytes()
            )
    for artifact in files.values():
        artifacts += store.with_gzip(out_dir, artifact)
    manifest_data = manifest.make_manifest(
        title=corpus.settings.title,
        base_url=corpus.settings.base_url,
        model=identity,
        index=asdict(params),
        bm25={"k1": bm25["k1"], "b": bm25["b"], "indexed": "context line + chunk text"},
        encoder={k: v for k, v in encoder_config.items() if k not in ("onnx", "vocab", "char_classes")},
        counts={
            "papers": len(papers),
            "pages": report.pages,
            "chunks": len(chunks),
            "failures": len(report.failures),
        },
        files={role: artifact.path for role, artifact in files.items()},
        artifacts=artifacts,
    )
    return SiteData(manifest_data, records, index.quantize(vectors, params.scale))


def _paper_extra(paper: IngestedPaper) -> dict:
    ref = paper.fetched.ref
    return {
        "tags": list(ref.tags) if ref else [],
        "note": ref.note if ref else "",
        "pages": paper.parsed.page_count,
        "sections": [{"title": s.title, "page": s.page, "level": s.level} for s in paper.parsed.sections],
    }


def update_lock(options: BuildOptions, papers: list[IngestedPaper]) -> None:
    path = config.lock_path_for(options.corpus_path)
    entries = config.load_lock(path)
    for paper in papers:
        entries[paper.meta.arxiv_id] = LockEntry(paper.meta.version, paper.fetched.pdf_sha256)
    config.write_lock(path, entries)


def exit_code(report: BuildReport, strict: bool) -> int:
    if report.papers == 0:
        return 1
    if strict and report.failures:
        return 1
    return 0


def published(report: BuildReport, options: BuildOptions) -> BuildReport:
    """The report as the site shows it: the build machine's folders by role ("<mirror>/pdf/x.pdf"),
    never its absolute paths; the terminal keeps the full ones."""
    places = {
        options.cache_dir: "<cache>",
        options.corpus_path.parent: "<corpus folder>",
        Path.cwd(): ".",
        Path.home(): "~",
    }
    if options.mirror is not None:
        places[options.mirror] = "<mirror>"
    spelled = {}
    for path, label in places.items():
        for form in (path.absolute(), path.resolve()):
            spelled.setdefault(str(form).rstrip("/"), label)

    def hide(text: str) -> str:
        for path in sorted(spelled, key=len, reverse=True):
            if path:
                text = text.replace(path, spelled[path])
        return text

    return replace(
        report,
        failures=[replace(f, reason=hide(f.reason), hint=hide(f.hint)) for f in report.failures],
        flagged_pages=[replace(p, detail=hide(p.detail)) for p in report.flagged_pages],
    )


def load_corpus(options: BuildOptions) -> config.Corpus:
    corpus = config.load_corpus(options.corpus_path)
    if options.base_url is None:
        return corpus
    return replace(corpus, settings=replace(corpus.settings, base_url=options.base_url))


def build(options: BuildOptions) -> tuple[BuildReport, int]:
    """The site is written beside `out_dir` and swapped in whole (builder/sitedir.py); a build that
    indexed no paper leaves the old site as it was."""
    corpus = load_corpus(options)
    result = ingest(corpus, options)
    if result.papers:
        embedded = embed_chunks(result.papers, corpus, options, result.report)
        with staged_site(options.out_dir) as staging:
            site = write_site_data(staging, result.papers, embedded, corpus, options, result.report)
            with timed(
                result.report, "render"
            ):  # HTML pages and the browser runtime (builder/stages/render.py)
                render_pages(
                    staging,
                    site.manifest,
                    corpus.settings,
                    published(result.report, options),
                    site.papers,
                    site.rows,
                )
            manifest.write_manifest(staging, site.manifest)
            write_report(staging, published(result.report, options))
        update_lock(options, result.papers)
    return result.report, exit_code(result.report, options.strict)
