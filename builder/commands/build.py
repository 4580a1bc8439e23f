"""`build`, `fetch` and `stats`: the site from the reading list, the cache filled without building,
and what the last build produced."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from builder import config
from builder.paths import DEFAULT_OUT, base_url_from_env, mirror_from_env, refresh_from_env
from builder.report import read_report
from builder.stages import fetch

if TYPE_CHECKING:
    from builder.models import ParseLimits
    from builder.pipeline import BuildOptions


def _mirror(args: argparse.Namespace) -> Path | None:
    mirror = args.mirror or mirror_from_env()
    if mirror is not None and not (mirror / "pdf").is_dir():
        raise config.CorpusError(
            f"mirror {mirror} has no pdf/ folder; point --mirror at a folder laid out "
            "like ../shared/arxiv-mirror (pdf/<id>.pdf, meta/<id>.json)"
        )
    return mirror


def _pdf_folder(args: argparse.Namespace) -> Path | None:
    folder = getattr(args, "pdfs", None)
    if folder is not None and not folder.is_dir():
        raise config.CorpusError(
            f"--pdfs {folder} is not a folder (of <id>vN.pdf files or tar archives of them)"
        )
    return folder


def build_options(args: argparse.Namespace, out_dir: Path) -> BuildOptions:
    from builder.pipeline import BuildOptions

    return BuildOptions(
        corpus_path=args.corpus,
        out_dir=out_dir,
        cache_dir=args.cache,
        mirror=_mirror(args),
        pdf_folder=_pdf_folder(args),
        offline=args.offline,
        strict=args.strict,
        progress=not args.no_progress,
        arxiv_api=args.arxiv_api,
        arxiv_delay=args.arxiv_delay,
        base_url=_base_url(args),
        refresh=args.refresh or refresh_from_env(),
        parse_limits=_parse_limits(args),
        ray=getattr(args, "ray", None),
        ray_workers=getattr(args, "ray_workers", None),
        embed_device=getattr(args, "embed_device", "auto"),
    )


def _parse_limits(args: argparse.Namespace) -> ParseLimits:
    """The build command's limits; `fetch`, which parses nothing, has the defaults."""
    from builder.models import DEFAULT_LIMITS, ParseLimits

    if not hasattr(args, "parse_timeout"):
        return DEFAULT_LIMITS
    return ParseLimits(seconds=args.parse_timeout, memory_mb=args.parse_memory)


def _base_url(args: argparse.Namespace) -> str | None:
    given = getattr(args, "base_url", None)
    if given is None:
        given = base_url_from_env()
    return None if given is None else config.normalize_base_url(given)


def cmd_build(args: argparse.Namespace) -> int:
    from builder.embedding import EmbedDeviceError
    from builder.pipeline import build
    from builder.writers.hnsw import hnsw_path

    options = build_options(args, args.out)
    stopping: tuple[type[Exception], ...] = (EmbedDeviceError,)
    if options.ray is not None:
        from builder.distributed import ClusterError

        stopping += (ClusterError,)
    try:
        report, code = build(options)
    except stopping as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for line in report.summary_lines():
        print(line)
    if code and report.papers == 0:
        why = "every paper failed" if report.listed else f"{args.corpus} lists no papers"
        print(f"build failed: {why}; the site in {args.out}/ was left as it was", file=sys.stderr)
    elif code:
        print("build failed: --strict and failures above", file=sys.stderr)
    else:
        print(f"site written to {args.out}/")
        print(f"HNSW file for other tools (not published): {hnsw_path(args.out)}")
    return code


def cmd_fetch(args: argparse.Namespace) -> int:
    from builder.pipeline import fetch_options

    corpus = config.load_corpus(args.corpus)
    result = fetch.fetch_papers(
        corpus.papers,
        fetch_options(build_options(args, DEFAULT_OUT)),
        locked=config.load_lock(config.lock_path_for(args.corpus)),
        progress=not args.no_progress,
    )
    print(f"{len(result.papers)} of {len(corpus.papers)} papers in the cache")
    for failure in result.failures:
        print(f"  {failure.line()}")
    for said in result.sources.values():
        print(f"  [pdfs] {said}")
    if corpus.papers and not result.papers:
        return 1
    return 1 if args.strict and result.failures else 0


def cmd_stats(args: argparse.Namespace) -> int:
    report = read_report(args.out)
    if args.json:
        data = report.to_json()
        data["flagged_pages"] = [
            {"arxiv_id": p.arxiv_id, "page": p.page, "kind": p.kind} for p in report.flagged_pages
        ]
        print(json.dumps(data, ensure_ascii=False))
    else:
        print("\n".join(report.summary_lines()))
    return 0
