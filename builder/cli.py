"""`python -m builder …`: build the site and look after the reading list."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from builder import __version__, config
from builder.commands.ask import add_ask_command, run_ask_command
from builder.evaluation.beir import add_beir_command, run_beir_command
from builder.offline import use_offline_environment
from builder.paths import (
    BASE_URL_ENV,
    DEFAULT_CACHE,
    DEFAULT_CORPUS,
    DEFAULT_OUT,
    MIRROR_ENV,
    REFRESH_ENV,
    base_url_from_env,
    mirror_from_env,
    refresh_from_env,
)
from builder.stages import fetch

DESCRIPTION = """\
Reading Room turns the arXiv reading list in corpus/readingroom.toml into a static website with
search that runs entirely in the visitor's browser.

Typical use:
  python -m builder build                      fetch, parse, chunk, index and render into site/
  python -m builder build --mirror DIR         take PDFs from a local arXiv mirror (no network)
  python -m builder add 2005.11401 --tag rag   put a paper on the reading list
  python -m builder stats                      what the last build produced, and what failed
  python -m builder serve                      try the built site at http://127.0.0.1:8000/
"""


def _common_corpus(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--corpus",
        type=Path,
        default=DEFAULT_CORPUS,
        metavar="FILE",
        help=f"the reading list and site settings (default: {DEFAULT_CORPUS})",
    )


def _fetch_args(parser: argparse.ArgumentParser) -> None:
    _common_corpus(parser)
    parser.add_argument(
        "--cache",
        type=Path,
        default=DEFAULT_CACHE,
        metavar="DIR",
        help=f"where PDFs, metadata and parsed text are kept between builds (default: {DEFAULT_CACHE})",
    )
    parser.add_argument(
        "--offline", action="store_true", help="never touch the network: use only the cache (and --mirror)"
    )
    parser.add_argument(
        "--mirror",
        type=Path,
        metavar="DIR",
        help=f"take papers from a local mirror (pdf/<id>.pdf, meta/<id>.json) before asking arXiv; "
        f"default: ${MIRROR_ENV} if set",
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="exit non-zero if any paper failed (default: only if all failed)",
    )
    parser.add_argument(
        "--refresh",
        action="store_true",
        help="ask arXiv for the latest version of every paper the corpus file does not pin, instead of the "
        f"lock file's (default: ${REFRESH_ENV} set to 1)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bars (they go to stderr)")
    parser.add_argument("--arxiv-api", metavar="URL", help=argparse.SUPPRESS)  # tests: a loopback arXiv
    parser.add_argument("--arxiv-delay", type=float, default=3.0, help=argparse.SUPPRESS)


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m builder",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"readingroom {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    build = commands.add_parser(
        "build",
        help="run the whole pipeline and write the site",
        description="Fetch every listed paper, parse its PDF into clean page text, cut it into chunks and "
        "write the site's data. Failures of single papers are reported and the build goes on.",
    )
    _fetch_args(build)
    build.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, metavar="DIR", help=f"output folder (default: {DEFAULT_OUT})"
    )
    build.add_argument(
        "--base-url",
        metavar="PATH",
        help="the path the site is served under, e.g. /my-list/ for a GitHub Pages project site; overrides "
        f"base_url of the corpus file (default: ${BASE_URL_ENV} if set)",
    )

    fetch_cmd = commands.add_parser(
        "fetch",
        help="download (or take from the mirror) every listed paper into the cache",
        description="Fill the cache without building: useful before going offline.",
    )
    _fetch_args(fetch_cmd)

    add = commands.add_parser("add", help="add arXiv ids to the reading list", description="Add papers.")
    _common_corpus(add)
    add.add_argument(
        "ids", nargs="+", metavar="ID", help="arXiv ids, e.g. 2005.11401 or 2005.11401v2 (pins v2)"
    )
    add.add_argument("--tag", action="append", default=[], help="a tag for these papers (repeatable)")
    add.add_argument("--note", default="", help="a note shown with these papers")

    remove = commands.add_parser("remove", help="remove arXiv ids from the reading list")
    _common_corpus(remove)
    remove.add_argument("ids", nargs="+", metavar="ID")

    listing = commands.add_parser("list", help="show the reading list")
    _common_corpus(listing)
    listing.add_argument("--json", action="store_true", help="print JSON instead of a table")

    bib = commands.add_parser(
        "import-bibtex",
        help="add every entry of a .bib file that has an arXiv eprint",
        description="Reads eprint/archivePrefix fields, and arXiv ids in journal/url/note fields.",
    )
    _common_corpus(bib)
    bib.add_argument("file", type=Path, metavar="FILE")
    bib.add_argument("--tag", action="append", default=[], help="a tag for the imported papers (repeatable)")

    query = commands.add_parser(
        "query",
        help="search a built site from the terminal, with the browser's encoder and search core",
        description="Embeds the query with the site's ONNX encoder (onnxruntime) and runs the same search core "
        "the browser runs. Field filters work in the query: year:2020..2023 cat:cs.CL tag:rag id:2005.11401 "
        'author:lewis, and "quoted phrases" must match.',
    )
    query.add_argument("text", metavar="QUERY")
    query.add_argument("--site", type=Path, default=DEFAULT_OUT, metavar="DIR", help="the built site folder")
    query.add_argument("--k", type=int, default=10, help="number of results (default: 10)")
    query.add_argument("--mode", choices=("hybrid", "bm25", "dense"), default="hybrid")
    query.add_argument("--json", action="store_true", help="print the results as JSON")
    add_ranking_arguments(query)

    evaluate = commands.add_parser(
        "eval",
        help="retrieval quality on questions with gold pages: recall, MRR, nDCG at page and paper level",
        description="Runs every question in bm25, dense and hybrid mode over a built site and reports "
        "Recall@1/5/10/20, MRR and nDCG@10 at page level (a chunk counts if it is from a gold paper and its page "
        "span covers a gold page) and at paper level. Questions file: one JSON object per line, "
        '{"id", "query", "relevant": [{"arxiv_id", "pages": [...]}]}; an empty relevant list marks a question '
        "the corpus cannot answer.",
    )
    evaluate.add_argument(
        "--site", type=Path, default=DEFAULT_OUT, metavar="DIR", help="the built site folder"
    )
    evaluate.add_argument("--questions", type=Path, required=True, metavar="FILE")
    evaluate.add_argument("--json", action="store_true", help="print one JSON object")
    add_ranking_arguments(evaluate)

    add_beir_command(commands)

    stats = commands.add_parser(
        "stats", help="papers, pages, chunks, tokens, flagged pages and failures of the last build"
    )
    stats.add_argument("--out", type=Path, default=DEFAULT_OUT, metavar="DIR", help="the built site folder")
    stats.add_argument("--json", action="store_true", help="print one JSON object")
    _serve_args(commands)
    add_ask_command(commands)
    return parser


def _serve_args(commands) -> None:
    serve = commands.add_parser(
        "serve",
        help="serve the built site on 127.0.0.1 under its base_url (to try it in a browser)",
        description="A local static server with the MIME types the browser runtime needs (.wasm, .mjs).",
    )
    serve.add_argument("--site", type=Path, default=DEFAULT_OUT, metavar="DIR", help="the built site folder")
    serve.add_argument("--port", type=int, default=8000, help="port on 127.0.0.1 (default: 8000)")


def cmd_serve(args: argparse.Namespace) -> int:
    from builder.commands.serve import PortError, base_url_of, make_server

    try:
        server = make_server(args.site, args.port)
    except PortError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    host, port = server.server_address[:2]
    print(f"serving {args.site} at http://{host}:{port}{base_url_of(args.site)} (Ctrl-C stops)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def _mirror(args: argparse.Namespace) -> Path | None:
    mirror = args.mirror or mirror_from_env()
    if mirror is not None and not (mirror / "pdf").is_dir():
        raise config.CorpusError(
            f"mirror {mirror} has no pdf/ folder; point --mirror at a folder laid out "
            "like ../shared/arxiv-mirror (pdf/<id>.pdf, meta/<id>.json)"
        )
    return mirror


def _build_options(args: argparse.Namespace, out_dir: Path):
    from builder.pipeline import BuildOptions

    return BuildOptions(
        corpus_path=args.corpus,
        out_dir=out_dir,
        cache_dir=args.cache,
        mirror=_mirror(args),
        offline=args.offline,
        strict=args.strict,
        progress=not args.no_progress,
        arxiv_api=args.arxiv_api,
        arxiv_delay=args.arxiv_delay,
        base_url=_base_url(args),
        refresh=args.refresh or refresh_from_env(),
    )


def _base_url(args: argparse.Namespace) -> str | None:
    given = getattr(args, "base_url", None)
    if given is None:
        given = base_url_from_env()
    return None if given is None else config.normalize_base_url(given)


def cmd_build(args: argparse.Namespace) -> int:
    from builder.pipeline import build

    report, code = build(_build_options(args, args.out))
    for line in report.summary_lines():
        print(line)
    if code and report.papers == 0:
        why = "every paper failed" if report.listed else f"{args.corpus} lists no papers"
        print(f"build failed: {why}; the site in {args.out}/ was left as it was", file=sys.stderr)
    elif code:
        print("build failed: --strict and failures above", file=sys.stderr)
    else:
        print(f"site written to {args.out}/")
    return code


def cmd_fetch(args: argparse.Namespace) -> int:
    from builder.pipeline import fetch_options

    corpus = config.load_corpus(args.corpus)
    result = fetch.fetch_papers(
        corpus.papers,
        fetch_options(_build_options(args, DEFAULT_OUT)),
        locked=config.load_lock(config.lock_path_for(args.corpus)),
        progress=not args.no_progress,
    )
    print(f"{len(result.papers)} of {len(corpus.papers)} papers in the cache")
    for failure in result.failures:
        print(f"  {failure.line()}")
    if corpus.papers and not result.papers:
        return 1
    return 1 if args.strict and result.failures else 0


def _refs(ids: list[str], tags: list[str], note: str = ""):
    from builder.models import PaperRef

    refs = []
    for raw in ids:
        arxiv_id, version = config.split_arxiv_id(raw)
        refs.append(PaperRef(arxiv_id, version, tuple(tags), note))
    return refs


def cmd_add(args: argparse.Namespace) -> int:
    added = config.add_papers(args.corpus, _refs(args.ids, args.tag, args.note))
    listed = sorted(set(config.split_arxiv_id(i)[0] for i in args.ids) - {r.arxiv_id for r in added})
    for ref in added:
        print(f"added {ref.arxiv_id}{ref.version or ''}")
    for arxiv_id in listed:
        print(f"already listed: {arxiv_id}")
    return 0


def cmd_remove(args: argparse.Namespace) -> int:
    removed = config.remove_papers(args.corpus, args.ids)
    for arxiv_id in removed:
        print(f"removed {arxiv_id}")
    missing = sorted(set(config.split_arxiv_id(i)[0] for i in args.ids) - set(removed))
    for arxiv_id in missing:
        print(f"not on the reading list: {arxiv_id}", file=sys.stderr)
    return 1 if missing else 0


def cmd_list(args: argparse.Namespace) -> int:
    corpus = config.load_corpus(args.corpus)
    if args.json:
        rows = [
            {"id": r.arxiv_id, "version": r.version, "tags": list(r.tags), "note": r.note}
            for r in corpus.papers
        ]
        print(json.dumps(rows, indent=1))
        return 0
    for ref in corpus.papers:
        tags = f"  [{', '.join(ref.tags)}]" if ref.tags else ""
        note = f"  {ref.note}" if ref.note else ""
        print(f"{ref.arxiv_id}{ref.version or ''}{tags}{note}")
    print(f"{len(corpus.papers)} papers", file=sys.stderr)
    return 0


def cmd_import_bibtex(args: argparse.Namespace) -> int:
    from builder.commands.bibtex import arxiv_id_of, parse_bibtex

    if not args.file.exists():
        raise config.CorpusError(f"{args.file}: no such BibTeX file")
    entries = parse_bibtex(args.file.read_text(encoding="utf-8", errors="replace"))
    ids, skipped = [], []
    for entry in entries:
        hit = arxiv_id_of(entry)
        if hit:
            ids.append(hit[0] + (hit[1] or ""))
        else:
            skipped.append(entry.key)
    added = config.add_papers(args.corpus, _refs(ids, args.tag)) if ids else []
    print(f"{len(entries)} entries, {len(ids)} with an arXiv id, {len(added)} added to {args.corpus}")
    for key in skipped:
        print(f"  skipped {key}: no arXiv eprint", file=sys.stderr)
    return 0


def cmd_stats(args: argparse.Namespace) -> int:
    from builder.stages.report import read_report

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
    from readingroom_core.engine import FUSIONS, SearchOptions

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


def cmd_query(args: argparse.Namespace) -> int:
    from builder.evaluation.evaluate import query_encoder
    from readingroom_core.browser import open_folder
    from readingroom_core.engine import SearchOptions, embedding_text

    site = open_folder(args.site)
    encoder = None if args.mode == "bm25" else query_encoder(args.site, site.manifest)
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
    from builder.evaluation.evaluate import evaluate, format_table, load_questions, query_encoder
    from readingroom_core.browser import open_folder
    from readingroom_core.engine import SearchOptions

    if not args.questions.exists():
        raise FileNotFoundError(f"{args.questions}: no such questions file")
    site = open_folder(args.site)
    encoder = query_encoder(args.site, site.manifest)
    summary = evaluate(
        site.engine, encoder.encode, load_questions(args.questions), SearchOptions(**ranking_options(args))
    )
    print(json.dumps(summary) if args.json else format_table(summary))
    return 0


COMMANDS = {
    "build": cmd_build,
    "fetch": cmd_fetch,
    "add": cmd_add,
    "remove": cmd_remove,
    "list": cmd_list,
    "import-bibtex": cmd_import_bibtex,
    "stats": cmd_stats,
    "query": cmd_query,
    "eval": cmd_eval,
    "serve": cmd_serve,
    "eval-beir": run_beir_command,
    "ask": run_ask_command,
}


def main(argv: list[str] | None = None) -> int:
    use_offline_environment()
    from builder.evaluation.evaluate import QuestionsFileError
    from readingroom_core.engine import QuerySyntaxError

    args = make_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except (config.CorpusError, FileNotFoundError, QuerySyntaxError, QuestionsFileError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
