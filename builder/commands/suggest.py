"""`python -m builder suggest`: the works the list's papers cite most that are not on the list.

Offline: the papers come from the cache or the mirror (never arXiv), their reference lists from the
parse cache (a paper not parsed yet is parsed now), and the works from `builder.missing_works`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from builder.paths import DEFAULT_CACHE, DEFAULT_CORPUS, DEFAULT_OUT, mirror_from_env

DESCRIPTION = """\
Lists the works that papers of the reading list cite and that are not on it, most cited first, with
how many papers of the list cite each. A work's arXiv id is shown where one of the reference entries
prints it, so it can be added as it is:

  python -m builder suggest --min 3
  python -m builder add 1910.10683 --tag suggested

Works without an id are shown by the reference entry as one paper prints it. Nothing is downloaded:
papers come from the cache (or --mirror), and their reference lists from the parsed PDFs.
"""


def add_suggest_command(subparsers) -> argparse.ArgumentParser:
    parser = subparsers.add_parser(
        "suggest",
        help="works the list's papers cite most that are not on the list (offline, from their references)",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--corpus",
        type=Path,
        default=DEFAULT_CORPUS,
        metavar="FILE",
        help=f"the reading list (default: {DEFAULT_CORPUS})",
    )
    parser.add_argument(
        "--cache",
        type=Path,
        default=DEFAULT_CACHE,
        metavar="DIR",
        help=f"the build cache (default: {DEFAULT_CACHE})",
    )
    parser.add_argument(
        "--mirror", type=Path, metavar="DIR", help="a local mirror (pdf/<id>.pdf, meta/<id>.json)"
    )
    parser.add_argument(
        "--min",
        type=_at_least_one,
        default=2,
        metavar="N",
        help="only works cited by at least N papers (default: 2)",
    )
    parser.add_argument(
        "--top", type=_at_least_one, default=30, metavar="K", help="show at most K works (default: 30)"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    return parser


def _at_least_one(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text} must be 1 or more")
    return value


def run_suggest_command(args: argparse.Namespace) -> int:
    from builder import config
    from builder.citation_graph import list_papers
    from builder.citation_match import ReferenceMatcher
    from builder.missing_works import missing_works
    from builder.pipeline import BuildOptions, fetch_corpus, parse_papers
    from builder.references import cached_references
    from builder.report import BuildReport

    options = BuildOptions(
        corpus_path=args.corpus,
        out_dir=DEFAULT_OUT,
        cache_dir=args.cache,
        mirror=args.mirror or mirror_from_env(),
        offline=True,
        progress=False,
    )
    corpus = config.load_corpus(args.corpus)
    report = BuildReport(listed=len(corpus.papers))
    parsed = parse_papers(fetch_corpus(corpus, options, report), options, report)
    for failure in report.failures:
        print(f"skipped: {failure.line()}", file=sys.stderr)
    references = [cached_references(fetched, paper, args.cache) for fetched, paper in parsed]
    matcher = ReferenceMatcher(list_papers([fetched.meta for fetched, _ in parsed]))
    works = missing_works(references, matcher, args.min)[: args.top]
    if args.json:
        print(json.dumps({"papers": len(parsed), "min": args.min, "works": [w.to_json() for w in works]}))
        return 0
    print(
        f"{len(works)} works cited by at least {args.min} of the {len(parsed)} papers read, not on the list:"
    )
    for work in works:
        name = f"arXiv:{work.arxiv_id}" if work.arxiv_id else "no arXiv id"
        shown = f"{work.title} ({name})" if work.arxiv_id else work.reference
        print(f"{len(work.cited_by):4d}  {shown[:160]}")
    if any(work.arxiv_id for work in works):
        print("add one with: python -m builder add ID", file=sys.stderr)
    return 0
