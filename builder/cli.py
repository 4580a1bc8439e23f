"""`python -m builder …`: the command line parsed and dispatched; each command's body lives in
`builder/commands/`."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable
from pathlib import Path

from builder import __version__, config, ctrl_c, report
from builder.commands import search
from builder.commands.ask import add_ask_command
from builder.commands.beir import add_beir_command
from builder.commands.suggest import add_suggest_command
from builder.offline import use_offline_environment
from builder.paths import BASE_URL_ENV, DEFAULT_CACHE, DEFAULT_CORPUS, DEFAULT_OUT, MIRROR_ENV, REFRESH_ENV

INTERRUPTED = 128 + 2  # the shell's exit status for a process ended by SIGINT

DESCRIPTION = """\
Reading Room turns the arXiv reading list in corpus/readingroom.toml into a static website with
search that runs entirely in the visitor's browser.

Typical use:
  python -m builder build                      fetch, parse, chunk, index and render into site/
  python -m builder build --mirror DIR         take PDFs from a local arXiv mirror (no network)
  python -m builder build --pdfs DIR --offline build from a folder of PDFs, metadata as they print it
  python -m builder add 2005.11401 --tag rag   put a paper on the reading list
  python -m builder stats                      what the last build produced, and what failed
  python -m builder suggest                    works the list's papers cite most that it lacks
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
        "--offline",
        action="store_true",
        help="never touch the network: use only the cache, --mirror and --pdfs. A paper from --pdfs then "
        "takes its metadata from a <id>.json file beside the PDFs (the mirror's meta/<id>.json format), else "
        "from its PDF: title and authors as printed on page 1, version and date from arXiv's stamp; the "
        "build prints which, per paper",
    )
    parser.add_argument(
        "--mirror",
        type=Path,
        metavar="DIR",
        help=f"take papers from a local mirror (pdf/<id>.pdf, meta/<id>.json) before asking arXiv; "
        f"default: ${MIRROR_ENV} if set",
    )
    parser.add_argument(
        "--pdfs",
        type=Path,
        metavar="DIR",
        help="take PDFs from this folder instead of downloading them: <id>vN.pdf files, or tar archives of "
        "them such as arXiv's bulk data. Their metadata comes from arXiv's API, which a build without "
        "--offline asks; with --offline it comes from the folder (see --offline), and <id>.pdf files "
        "without a version are taken too",
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


def _parse_limit_args(parser: argparse.ArgumentParser) -> None:
    from builder.models import DEFAULT_MEMORY_MB, DEFAULT_SECONDS

    parser.add_argument(
        "--parse-timeout",
        type=_positive(float),
        default=DEFAULT_SECONDS,
        metavar="SECONDS",
        help=f"the most time one paper's parsing may take; a paper over it fails alone (default: {DEFAULT_SECONDS:g})",
    )
    parser.add_argument(
        "--parse-memory",
        type=_positive(int),
        default=DEFAULT_MEMORY_MB,
        metavar="MB",
        help=f"the most memory one paper's parsing may take; a paper over it fails alone (default: {DEFAULT_MEMORY_MB})",
    )


def _ray_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--ray",
        nargs="?",
        const="",
        metavar="ADDRESS",
        help="parse and embed on a Ray cluster (pip install .[ray]): at ADDRESS (host:port or ray://host:port), "
        "else at $RAY_ADDRESS, else on a Ray instance started on this machine",
    )
    parser.add_argument(
        "--ray-workers",
        type=_positive(int),
        metavar="N",
        help="embedding actors on the Ray cluster, each loading the model once (default: one per GPU, "
        "else one single-threaded actor per CPU)",
    )


def _positive(kind: type[float] | type[int]):
    def read(text: str) -> float | int:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{text} must be more than 0")
        return value

    return read


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port: pass 1 to 65535, or 0 to pick a free one")
    return port


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m builder",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"readingroom {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    _add_build_commands(commands)
    _add_reading_list_commands(commands)
    _add_search_commands(commands)
    add_beir_command(commands)
    _add_site_commands(commands)
    add_ask_command(commands)
    add_suggest_command(commands)
    return parser


def _add_build_commands(commands) -> None:
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
    _parse_limit_args(build)
    build.add_argument(
        "--embed-device",
        choices=("auto", "cpu", "cuda"),
        default="auto",
        help="where chunks are embedded: cuda runs the model in float16 on a GPU (torch with CUDA), cpu its "
        "fp32 ONNX export; each keeps its own vectors in the cache (they differ in the last digits). auto "
        "(default) takes a GPU where torch sees one, or where the Ray cluster has one",
    )
    _ray_args(build)

    fetch_cmd = commands.add_parser(
        "fetch",
        help="download (or take from the mirror) every listed paper into the cache",
        description="Fill the cache without building: useful before going offline.",
    )
    _fetch_args(fetch_cmd)


def _add_reading_list_commands(commands) -> None:
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


def _add_search_commands(commands) -> None:
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
    search.add_ranking_arguments(query)

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
    search.add_ranking_arguments(evaluate)


def _add_site_commands(commands) -> None:
    """Commands that read a built site's folder: `stats` and `serve`."""
    stats = commands.add_parser(
        "stats", help="papers, pages, chunks, tokens, flagged pages and failures of the last build"
    )
    stats.add_argument("--out", type=Path, default=DEFAULT_OUT, metavar="DIR", help="the built site folder")
    stats.add_argument("--json", action="store_true", help="print one JSON object")
    serve = commands.add_parser(
        "serve",
        help="serve the built site on 127.0.0.1 under its base_url (to try it in a browser)",
        description="A local static server with the MIME types the browser runtime needs (.wasm, .mjs).",
    )
    serve.add_argument("--site", type=Path, default=DEFAULT_OUT, metavar="DIR", help="the built site folder")
    serve.add_argument("--port", type=_port, default=8000, help="port on 127.0.0.1 (default: 8000)")


# Each command's body, imported only when it runs: the build's stages bring pymupdf, arxiv and numpy,
# which `add`, `list` or `ask` never need.
COMMANDS = {
    "build": "builder.commands.build:cmd_build",
    "fetch": "builder.commands.build:cmd_fetch",
    "stats": "builder.commands.build:cmd_stats",
    "add": "builder.commands.reading_list:cmd_add",
    "remove": "builder.commands.reading_list:cmd_remove",
    "list": "builder.commands.reading_list:cmd_list",
    "import-bibtex": "builder.commands.reading_list:cmd_import_bibtex",
    "query": "builder.commands.search:cmd_query",
    "eval": "builder.commands.search:cmd_eval",
    "serve": "builder.commands.serve:cmd_serve",
    "eval-beir": "builder.commands.beir:run_beir_command",
    "ask": "builder.commands.ask:run_ask_command",
    "suggest": "builder.commands.suggest:run_suggest_command",
}


def command_body(command: str) -> Callable[[argparse.Namespace], int]:
    """The function that runs `command` (its module imported now)."""
    module, name = COMMANDS[command].split(":")
    return getattr(importlib.import_module(module), name)


def main(argv: list[str] | None = None) -> int:
    use_offline_environment()
    from readingroom_core.querysyntax import QuerySyntaxError
    from readingroom_core.ranges import DamagedData

    args = make_parser().parse_args(argv)
    ctrl_c.listen()
    try:
        return command_body(args.command)(args)
    except (config.CorpusError, report.ReportError, FileNotFoundError, QuerySyntaxError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except DamagedData as exc:  # a site's file does not hold what its manifest says: only a build mends it
        site = f"the site in {args.site}: " if hasattr(args, "site") else ""
        print(f"error: {site}{exc}; build the site again (`python -m builder build`)", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C: the caches and the site are written atomically, nothing is half done
        print(f"interrupted: {args.command} stopped; what it finished is kept", file=sys.stderr)
        return INTERRUPTED
