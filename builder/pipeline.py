"""The build, stage by stage: corpus → fetch → parse → chunk → embed → site data (index, postings,
encoder) → render → manifest, report and lock file.

This module only sequences the stages: each stage owns its cache, a bad paper becomes a `Failure` in the
report and the rest of the build goes on, and the report records every stage's wall time.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from builder import config
from builder.ctrl_c import stop_if_heard
from builder.embedding import DOCUMENT_ENGINE, choose_engine, identify, nvidia_gpu_here
from builder.models import (
    DEFAULT_LIMITS,
    Failure,
    FetchedPaper,
    IngestedPaper,
    LockEntry,
    ParsedPaper,
    ParseLimits,
)
from builder.paths import resolve_model_dir
from builder.report import BuildReport, FlaggedPage, write_report
from builder.site.data import write_site_data
from builder.site.manifest import write_manifest
from builder.site.pages import render
from builder.site.staging import staged_site
from builder.stages import chunk, embed, fetch, parse
from builder.writers.hnsw import write_hnsw_file

if TYPE_CHECKING:
    from builder.distributed import Cluster


@dataclass(frozen=True)
class BuildOptions:
    corpus_path: Path
    out_dir: Path
    cache_dir: Path
    mirror: Path | None = None
    pdf_folder: Path | None = None  # PDFs, loose or in tar archives, taken instead of downloaded
    offline: bool = False
    strict: bool = False
    progress: bool = True
    jobs: int = max(1, os.cpu_count() or 1)
    arxiv_api: str | None = None  # arXiv API URL format; tests point it at a loopback server
    arxiv_delay: float = 3.0
    base_url: str | None = None  # overrides the corpus file's (the publishing workflow's Pages path)
    refresh: bool = False  # ask arXiv for the latest version of papers the corpus file does not pin
    parse_limits: ParseLimits = DEFAULT_LIMITS  # time and memory for one paper's parsing
    ray: str | None = None  # parse and embed on Ray: "" = RAY_ADDRESS or a local instance, else its address
    ray_workers: int | None = None  # embedding actors (default: one per GPU, else one per CPU)
    embed_device: str = "auto"  # embedding.DEVICES: the GPU engine where there is a GPU, unless "cpu"


@dataclass
class Ingest:
    papers: list[IngestedPaper]
    report: BuildReport


def fetch_options(options: BuildOptions) -> fetch.FetchOptions:
    fetching = fetch.FetchOptions(
        cache_dir=options.cache_dir,
        mirror=options.mirror,
        offline=options.offline,
        delay_seconds=options.arxiv_delay,
        corpus_file=options.corpus_path,
        refresh=options.refresh,
        pdf_folder=options.pdf_folder,
        check_limits=options.parse_limits,
    )
    if options.arxiv_api:  # otherwise arXiv's own API (FetchOptions' default)
        fetching = replace(fetching, api_url=options.arxiv_api)
    return fetching


def fetch_corpus(corpus: config.Corpus, options: BuildOptions, report: BuildReport) -> list[FetchedPaper]:
    lock_path = config.lock_path_for(options.corpus_path)
    with report.timed("fetch"):
        result = fetch.fetch_papers(
            corpus.papers,
            fetch_options(options),
            locked=config.load_lock(lock_path),
            progress=options.progress,
        )
    report.failures.extend(result.failures)
    report.sources.update(result.sources)
    refs = {ref.arxiv_id: ref for ref in corpus.papers}
    for paper in result.papers:
        paper.ref = refs.get(paper.meta.arxiv_id)
    return result.papers


def parse_papers(
    papers: list[FetchedPaper], options: BuildOptions, report: BuildReport, cluster: Cluster | None = None
) -> list[tuple[FetchedPaper, ParsedPaper]]:
    with report.timed("parse"):
        if cluster is not None:
            results = cluster.parse(papers, options.cache_dir, options.parse_limits)
        else:
            results = parse.parse_papers(
                papers, options.cache_dir, options.jobs, options.progress, options.parse_limits
            )
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


def chunk_papers(
    parsed: list[tuple[FetchedPaper, ParsedPaper]],
    corpus: config.Corpus,
    options: BuildOptions,
    report: BuildReport,
) -> list[IngestedPaper]:
    model_dir = resolve_model_dir(corpus.settings.model)
    with report.timed("chunk"):
        papers, failures = chunk.chunk_papers(
            parsed, model_dir, corpus.settings.document_prefix, options.cache_dir, options.progress
        )
    report.failures.extend(failures)
    return papers


def ingest(corpus: config.Corpus, options: BuildOptions, cluster: Cluster | None = None) -> Ingest:
    report = BuildReport(listed=len(corpus.papers))
    fetched = fetch_corpus(corpus, options, report)
    stop_if_heard()
    parsed = parse_papers(fetched, options, report, cluster)
    stop_if_heard()
    papers = chunk_papers(parsed, corpus, options, report)
    stop_if_heard()
    report.papers = len(papers)
    report.pages = sum(p.parsed.page_count for p in papers)
    report.chunks = sum(len(p.chunks) for p in papers)
    report.tokens = sum(c.n_tokens for p in papers for c in p.chunks)
    return Ingest(papers, report)


def embed_papers(
    papers: list[IngestedPaper],
    corpus: config.Corpus,
    options: BuildOptions,
    report: BuildReport,
    cluster: Cluster | None = None,
    engine: str = DOCUMENT_ENGINE,
) -> embed.Embedded:
    """On a cluster, the new vectors are made there and put in the cache; the stage then finds them.
    `engine` was chosen before the build began (choose_engine), so a GPU asked for and missing
    stops it before any paper is fetched."""
    settings = corpus.settings
    model_dir = resolve_model_dir(settings.model)
    with report.timed("embed"):
        identity = identify(
            settings.model, model_dir, settings.query_prefix, settings.document_prefix, engine
        )
        on_cluster = cluster.embed(papers, identity, model_dir, options.cache_dir) if cluster else 0
        embedded, stats = embed.embed_ingested(
            papers, identity, model_dir, options.cache_dir, options.progress
        )
    report.embedded_chunks = on_cluster + stats.embedded
    return embedded


def gpu_to_embed_on(options: BuildOptions, cluster: Cluster | None) -> bool:
    """Whether the embedding can run on a GPU: the cluster's workers' where there is a cluster, else
    this machine's (not looked for when the CPU was asked for)."""
    if cluster is not None:
        return cluster.plan.gpus_per_actor > 0
    return options.embed_device != "cpu" and nvidia_gpu_here()


@contextmanager
def cluster_for(options: BuildOptions) -> Iterator[Cluster | None]:
    """The Ray cluster the build runs on, or None: without --ray nothing of Ray is imported."""
    if options.ray is None:
        yield None
        return
    from builder.distributed import ray_cluster

    with ray_cluster(options.ray, options.ray_workers, options.progress) as cluster:
        yield cluster


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
    spelled: dict[str, str] = {}
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
    """The site is written beside `out_dir` and swapped in whole (builder/site/staging.py); a build that
    indexed no paper leaves the old site as it was."""
    corpus = load_corpus(options)
    with cluster_for(options) as cluster:
        engine = choose_engine(options.embed_device, gpu_to_embed_on(options, cluster))
        result = ingest(corpus, options, cluster)
        embedded = (
            embed_papers(result.papers, corpus, options, result.report, cluster, engine)
            if result.papers
            else None
        )
    stop_if_heard()
    if embedded is not None:
        report = result.report
        with staged_site(options.out_dir) as staging:
            site = write_site_data(
                staging, result.papers, embedded, corpus.settings, options.cache_dir, report
            )
            with report.timed("render"):
                manifest = render(
                    staging,
                    site.manifest,
                    corpus.settings,
                    published(report, options),
                    site.papers,
                    site.graph,
                )
            write_manifest(staging, manifest)
            write_report(staging, published(report, options))
        write_hnsw_file(options.out_dir, embedded.chunks, site.index)  # once the site it belongs to is in
        update_lock(options, result.papers)
    return result.report, exit_code(result.report, options.strict)
