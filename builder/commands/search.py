"""`query` and `eval`: a built site searched from the terminal with the browser's encoder and search
core, one query or a questions file, with the ranking settings open to override."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from builder.config import read_text

if TYPE_CHECKING:
    from readingroom_core.browser import Site

RANKING_ARGUMENTS = {  # SearchOptions field -> help
    "fusion": "weighted (min-max normalised scores) or rrf",
    "dense_weight": "weighted fusion's dense share; BM25 gets the rest",
    "candidates": "results per retriever before fusion",
    "per_paper": "most results from one paper (0: no cap)",
    "per_section": "most results from one section of a paper (0: no cap)",
    "per_page": "most results citing one page of a paper (0: no cap)",
    "paper_weight": "paper view: how much a paper's similarity to the query lifts its passages (0: off)",
    "paper_openings": "paper view: opening passages of the most similar papers added to the dense candidates",
}


def add_ranking_arguments(parser: argparse.ArgumentParser) -> None:
    """Overrides of the site's ranking defaults, so other settings can be compared on the same site."""
    from readingroom_core.options import FUSIONS, SearchOptions

    defaults = SearchOptions()
    group = parser.add_argument_group("ranking (defaults: what the site's browser search uses)")
    for name, help_text in RANKING_ARGUMENTS.items():
        default = getattr(defaults, name)
        kind = {"fusion": str, "dense_weight": float, "paper_weight": float}.get(name, int)
        group.add_argument(
            "--" + name.replace("_", "-"),
            type=kind,
            choices=FUSIONS if name == "fusion" else None,
            help=f"{help_text} (default: {default})",
        )


def ranking_options(args: argparse.Namespace) -> dict:
    return {name: getattr(args, name) for name in RANKING_ARGUMENTS if getattr(args, name) is not None}


def open_built_site(site_dir: Path) -> Site:
    """The built site in `site_dir`; a manifest that cannot be read is damage, named as such."""
    from readingroom_core.browser import open_folder
    from readingroom_core.ranges import DamagedData

    try:
        return open_folder(site_dir)
    except (ValueError, KeyError, TypeError) as exc:
        raise DamagedData(f"manifest.json cannot be read ({exc!r})") from exc


def cmd_query(args: argparse.Namespace) -> int:
    from builder.query_encoder import OnnxQueryEncoder
    from readingroom_core.options import SearchOptions
    from readingroom_core.querysyntax import embedding_text

    site = open_built_site(args.site)
    encoder = None if args.mode == "bm25" else OnnxQueryEncoder.from_site(args.site, site.manifest)
    vector = encoder.encode([embedding_text(args.text)])[0] if encoder else None
    options = SearchOptions(k=args.k, mode=args.mode, **ranking_options(args))
    hits = site.engine.search(args.text, vector, options)
    if args.json:
        rows = [{"rank": rank, **site.hit_json(hit)} for rank, hit in enumerate(hits, start=1)]
        print(json.dumps(rows, ensure_ascii=False, indent=1))
        return 0
    for rank, h in enumerate(hits, start=1):
        pages = f"p.{h.page_start}" if h.page_start == h.page_end else f"pp.{h.page_start}-{h.page_end}"
        print(f"{rank:2d}. [arXiv:{h.arxiv_id} {pages}] {h.score:.4f}  {h.title}")
        if h.section:
            print(f"    § {h.section}")
        print(f"    {h.snippet}")
    if not hits:
        print("no results", file=sys.stderr)
    return 0


def cmd_eval(args: argparse.Namespace) -> int:
    from builder.evaluation.evaluate import QuestionsFileError, evaluate, format_table, load_questions
    from builder.query_encoder import OnnxQueryEncoder
    from readingroom_core.options import SearchOptions

    if not args.questions.exists():
        raise FileNotFoundError(f"{args.questions}: no such questions file")
    read_text(args.questions, "questions file", "pass --questions FILE, one JSON question a line")
    try:
        questions = load_questions(args.questions)
    except QuestionsFileError as exc:  # it names the file and the line
        print(f"error: {exc}", file=sys.stderr)
        return 2
    site = open_built_site(args.site)
    encoder = OnnxQueryEncoder.from_site(args.site, site.manifest)
    summary = evaluate(site.engine, encoder.encode, questions, SearchOptions(**ranking_options(args)))
    print(json.dumps(summary) if args.json else format_table(summary))
    return 0
