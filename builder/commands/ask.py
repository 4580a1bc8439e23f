"""`python -m builder ask`: a cited answer from an LLM provider, with every citation checked.

The same evidence selection, prompt and verification as the site's Ask (`readingroom_core.answers`,
`readingroom_core.citations`) under CPython, the query embedded by the site's ONNX encoder as `query`
does, so the whole flow can be tried against any provider or a local server without a browser.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from builder.paths import DEFAULT_OUT

if TYPE_CHECKING:
    from readingroom_core.answers import Evidence, Prompt
    from readingroom_core.browser import Site

DESCRIPTION = """\
Retrieves passages from the built site (hybrid search, one passage per page, spread over papers), fits
them to a prompt token budget, asks the chosen model to answer from them only, streams the answer, and
then checks every citation against the cited page's text.

The model is asked to cite each claim as [arXiv:ID p.N "short verbatim quote"]. A citation is
verified when the paper was a source, the page lies in that source's pages and the quote occurs on the
page (ignoring case, spacing, punctuation, ligatures and hyphenation); otherwise it is reported as
invented, page not found, quote not found or without a quote, and sentences without any citation are
listed as uncited claims.

The API key is read from the environment, never from the command line: READINGROOM_API_KEY, or
OPENAI_API_KEY / ANTHROPIC_API_KEY / GEMINI_API_KEY for the chosen provider. A local server
(--base-url on 127.0.0.1 or localhost) may need no key.

Examples:
  OPENAI_API_KEY=... python -m builder ask "How does LoRA cut trainable parameters?" --model gpt-4o-mini
  python -m builder ask "What is RAG?" --provider openai --base-url http://127.0.0.1:11434/v1 --model llama3.1
  ANTHROPIC_API_KEY=... python -m builder ask "..." --provider anthropic --model claude-sonnet-4-5
  python -m builder ask "What is RAG?" --prompt-only        # print the prompt to paste anywhere
"""

STATUS_MARKS = {
    "verified": "verified",
    "invented": "INVENTED",
    "page_not_found": "PAGE NOT FOUND",
    "quote_not_found": "QUOTE NOT FOUND",
    "no_quote": "NO QUOTE",
    "no_page": "NO PAGE",
    "outside_sources": "OUTSIDE SOURCES",
    "version_not_found": "WRONG VERSION",
}


def add_ask_command(subparsers) -> argparse.ArgumentParser:
    from builder.providers import DEFAULT_MAX_TOKENS, PROVIDERS
    from readingroom_core.answers import CANDIDATES, DEFAULT_BUDGET

    parser = subparsers.add_parser(
        "ask",
        help="answer a question from the site's papers with an LLM, and check every citation",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("question", metavar="QUESTION")
    parser.add_argument("--site", type=Path, default=DEFAULT_OUT, metavar="DIR", help="the built site folder")
    parser.add_argument("--provider", choices=PROVIDERS, default="openai", help="API shape (default: openai)")
    parser.add_argument(
        "--base-url",
        metavar="URL",
        help="the API's base URL (default: the provider's own; OpenAI-compatible servers end in /v1)",
    )
    parser.add_argument("--model", metavar="NAME", help="the model name the provider knows (required to ask)")
    parser.add_argument(
        "--budget",
        type=int,
        default=DEFAULT_BUDGET,
        metavar="TOKENS",
        help=f"most prompt tokens (counted conservatively; default: {DEFAULT_BUDGET})",
    )
    parser.add_argument(
        "--k", type=int, default=CANDIDATES, help=f"passages retrieved before fitting (default: {CANDIDATES})"
    )
    parser.add_argument(
        "--max-tokens",
        type=int,
        default=DEFAULT_MAX_TOKENS,
        help=f"longest answer, for Anthropic (default: {DEFAULT_MAX_TOKENS})",
    )
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for the provider")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of streaming")
    parser.add_argument(
        "--prompt-only",
        action="store_true",
        help="print the prompt with its sources and stop (no key needed)",
    )
    return parser


def api_key(provider: str, base_url: str) -> str | None:
    """The key from the environment; "" for a loopback server without one; None when one is missing."""
    from builder.providers import KEY_VARIABLES, is_loopback

    for variable in KEY_VARIABLES[provider]:
        if os.environ.get(variable):
            return os.environ[variable]
    return "" if is_loopback(base_url) else None


def run_ask_command(args: argparse.Namespace) -> int:
    from builder.providers import DEFAULT_BASE_URLS
    from readingroom_core.answers import verify
    from readingroom_core.browser import open_folder
    from readingroom_core.library import CorpusLibrary

    base_url = args.base_url or DEFAULT_BASE_URLS[args.provider]
    key = ""  # --prompt-only sends nothing anywhere
    if not args.prompt_only:
        checked_key = provider_key(args, base_url)
        if checked_key is None:
            return 2
        key = checked_key
    site = open_folder(args.site)
    found = find_evidence(args, site)
    if found is None:
        return 2
    if args.prompt_only:
        print(found.prompt.text)
        return 0
    evidence = found.to_dict()
    if not args.json:
        print_sources(found)
    answer = stream(args, base_url, key, found.prompt)
    if answer is None:
        return 1
    checked = verify(answer, evidence, CorpusLibrary(site.engine))
    if args.json:
        print(
            json.dumps(
                {"question": args.question, "answer": answer, **checked, **_sources(evidence)}, indent=1
            )
        )
        return 0
    print("\n")
    print(report(checked))
    return 0


def provider_key(args: argparse.Namespace, base_url: str) -> str | None:
    """The API key to send ("" for a loopback server without one); None, with the error printed, when the
    question cannot be asked (no model named, or no key where the provider needs one)."""
    from builder.providers import KEY_VARIABLES

    if not args.model:
        print("error: --model is required to ask (or use --prompt-only)", file=sys.stderr)
        return None
    key = api_key(args.provider, base_url)
    if key is None:
        variables = " or ".join(KEY_VARIABLES[args.provider])
        print(f"error: no API key: set {variables} in the environment", file=sys.stderr)
    return key


def find_evidence(args: argparse.Namespace, site: Site) -> Evidence | None:
    """The passages the answer may cite, fitted to the prompt budget; None, with the error printed, when
    the search or the fitting rejects the question (a bad query, or a question too long for the budget)."""
    from builder.query_encoder import OnnxQueryEncoder
    from readingroom_core.answers import PromptTooLong, retrieval_query, select_evidence
    from readingroom_core.querysyntax import embedding_text

    encoder = OnnxQueryEncoder.from_site(args.site, site.manifest)
    vector = encoder.encode([embedding_text(retrieval_query(args.question))])[0]
    try:
        return select_evidence(site.engine, args.question, vector, budget=args.budget, k=args.k)
    except (PromptTooLong, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return None


def print_sources(found: Evidence) -> None:
    print(f"{len(found.sources)} sources, {found.prompt_tokens} of {found.budget} prompt tokens:")
    for source in found.sources:
        section = f" \u2014 {source.section}" if source.section else ""
        print(f"  [{source.n}] arXiv:{source.arxiv_id} {source.label}  {source.title}{section}")
    print(flush=True)


def stream(args: argparse.Namespace, base_url: str, key: str, prompt: Prompt) -> str | None:
    """The provider's answer, streamed to the terminal as it comes unless --json; None, with the error
    printed, when the provider fails."""
    from builder.providers import ProviderError, build_request, stream_answer

    request = build_request(args.provider, base_url, args.model, prompt, key, args.max_tokens)
    pieces: list[str] = []

    def waiting(seconds: float) -> None:
        print(
            f"rate limited; waiting {seconds:g} s as the provider asks, then trying once more",
            file=sys.stderr,
        )

    try:
        for piece in stream_answer(request, args.model, key, timeout=args.timeout, on_wait=waiting):
            pieces.append(piece)
            if not args.json:
                sys.stdout.write(piece)
                sys.stdout.flush()
    except ProviderError as exc:
        if pieces and not args.json:
            print()
        print(f"error: {exc}", file=sys.stderr)
        return None
    return "".join(pieces)


def _sources(evidence: dict) -> dict:
    return {
        "sources": evidence["sources"],
        "prompt_tokens": evidence["prompt_tokens"],
        "budget": evidence["budget"],
    }


def report(checked: dict) -> str:
    """The verification summary, then one line per citation and per uncited claim."""
    lines = [checked["summary"]]
    for citation in checked["citations"]:
        pages = f"p.{citation['page']}" if citation["page"] else "(no page)"
        if citation["page_end"] != citation["page"]:
            pages = f"pp.{citation['page']}-{citation['page_end']}"
        source = f" (source {citation['source']})" if citation["source"] else ""
        reason = f": {citation['reason']}" if citation["reason"] else ""
        lines.append(
            f"  {STATUS_MARKS[citation['status']]:16s} [arXiv:{citation['arxiv_id']} {pages}]{source} "
            f"\u201c{citation['quote']}\u201d{reason}"
        )
    if checked["uncited"]:
        lines.append(f"{len(checked['uncited'])} claim(s) without a citation:")
        lines += [f"  UNCITED          {claim['text']}" for claim in checked["uncited"]]
    return "\n".join(lines)
