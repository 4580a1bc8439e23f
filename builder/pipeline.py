"""The build, stage by stage: corpus → fetch → parse → chunk → (embed → index → render).

Each stage is a function of plain data; this module only sequences them, keeps per-paper failures
from stopping the rest, and does the disk I/O (caches, outputs, lock file).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

from tqdm import tqdm

from builder import chunk, config, fetch, parse
from builder.models import Chunk, Failure, FetchedPaper, PaperMeta, ParsedPaper
from builder.paths import resolve_model_dir
from builder.report import BuildReport, FlaggedPage, write_report


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
            with ProcessPoolExecutor(max_workers=min(options.jobs, len(jobs))) as pool:
                results = list(tqdm(pool.map(_parse_job, jobs), **bar))
        else:
            results = [_parse_job(job) for job in tqdm(jobs, **bar)]
    parsed = []
    for paper, result in zip(papers, results, strict=True):
        if isinstance(result, Failure):
            report.failures.append(result)
            continue
        parsed.append((paper, result))
        report.flagged_pages.extend(
            FlaggedPage(result.arxiv_id, flag.page, flag.kind, flag.detail) for flag in result.flags
        )
    return parsed


def chunk_papers(
    parsed: list[tuple[FetchedPaper, ParsedPaper]],
    corpus: config.Corpus,
    options: BuildOptions,
    report: BuildReport,
) -> list[IngestedPaper]:
    counter = chunk.TokenCounter(resolve_model_dir(corpus.settings.model))
    ingested = []
    with timed(report, "chunk"):
        for fetched, paper in tqdm(parsed, desc="chunk", unit="paper", disable=not options.progress):
            chunks = chunk.chunk_paper(
                paper, fetched.meta.title, counter, document_prefix=corpus.settings.document_prefix
            )
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


def write_ingest(out_dir: Path, result: Ingest) -> None:
    data = out_dir / "data"
    (data / "chunks").mkdir(parents=True, exist_ok=True)
    papers = [_paper_record(p) for p in result.papers]
    (data / "papers.json").write_text(
        json.dumps(papers, ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
    )
    for paper in result.papers:
        rows = [asdict(c) for c in paper.chunks]
        path = data / "chunks" / f"{paper.meta.arxiv_id.replace('/', '_')}.json"
        path.write_text(json.dumps(rows, ensure_ascii=False) + "\n", encoding="utf-8")


def _paper_record(paper: IngestedPaper) -> dict:
    meta = paper.meta
    return {
        **asdict(meta),
        "abs_url": meta.abs_url,
        "pdf_url": meta.pdf_url,
        "pages": paper.parsed.page_count,
        "sections": [{"title": s.title, "page": s.page, "level": s.level} for s in paper.parsed.sections],
        "tags": list(paper.fetched.ref.tags) if paper.fetched.ref else [],
        "note": paper.fetched.ref.note if paper.fetched.ref else "",
        "pdf_sha256": paper.fetched.pdf_sha256,
    }


def update_lock(options: BuildOptions, papers: list[IngestedPaper]) -> None:
    path = config.lock_path_for(options.corpus_path)
    entries = config.load_lock(path)
    for paper in papers:
        entries[paper.meta.arxiv_id] = fetch.LockEntry(paper.meta.version, paper.fetched.pdf_sha256)
    config.write_lock(path, entries)


def exit_code(report: BuildReport, strict: bool) -> int:
    if report.listed and report.papers == 0:
        return 1
    if strict and report.failures:
        return 1
    return 0


def build(options: BuildOptions) -> tuple[BuildReport, int]:
    corpus = config.load_corpus(options.corpus_path)
    result = ingest(corpus, options)
    options.out_dir.mkdir(parents=True, exist_ok=True)
    write_ingest(options.out_dir, result)
    update_lock(options, result.papers)
    write_report(options.out_dir, result.report)
    return result.report, exit_code(result.report, options.strict)
