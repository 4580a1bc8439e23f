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
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from builder.paths import DEFAULT_OUT

if TYPE_CHECKING:
    from readingroom_core.answers import Evidence
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
(--base-url on 127.0.0.1 or localhost) may need no key, nor --model when it lists its models; its context
window is asked (llama.cpp's /props, vLLM's and LM Studio's model lists, Ollama's /api/show) or given
with --context, and the sources and the answer's room are fitted into it. An answer that reaches
--max-tokens is reported as cut off.

Examples:
  OPENAI_API_KEY=... python -m builder ask "How does LoRA cut trainable parameters?" --model gpt-4o-mini
  python -m builder ask "What is RAG?" --provider openai --base-url http://127.0.0.1:11434/v1 --model llama3.1
  python -m builder ask "What is RAG?" --base-url http://127.0.0.1:8080/v1          # llama-server
  python -m builder ask "What is RAG?" --base-url http://127.0.0.1:8000/v1 --context 2048   # llama-cpp-python
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
    from builder.providers import PROVIDERS
    from readingroom_core.answers import DEFAULT_BUDGET, DEFAULT_MAX_TOKENS

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
    parser.add_argument(
        "--model",
        metavar="NAME",
        help="the model name the provider knows (a local server's first listed model when not given)",
    )
    parser.add_argument(
        "--budget",
        type=int,
        metavar="TOKENS",
        help="most prompt tokens (estimated, within 10%% for Llama-class tokenizers; default: what fits the "
        f"model's context window, else {DEFAULT_BUDGET}); the number of sources follows it",
    )
    parser.add_argument(
        "--context",
        type=int,
        metavar="TOKENS",
        help="the model's context window: sources and the answer are fitted into it (default: what a local "
        "server reports, or the window of a hosted model's family, else none)",
    )
    parser.add_argument(
        "--k", type=int, help="passages retrieved before fitting (default: as many as the budget holds)"
    )
    parser.add_argument(
        "--max-tokens",
        type=int,
        default=DEFAULT_MAX_TOKENS,
        metavar="TOKENS",
        help=f"longest answer in tokens, sent to every provider (default: {DEFAULT_MAX_TOKENS})",
    )
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for the provider")
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object instead of streaming (with --prompt-only: the evidence, as the site's "
        "worker gets it)",
    )
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


@dataclass
class Fit:
    """The prompt budget and answer cap for the model, and the line that says where they came from."""

    budget: int
    max_tokens: int
    note: str = ""


def run_ask_command(args: argparse.Namespace) -> int:
    from builder.providers import DEFAULT_BASE_URLS, is_loopback
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
        if is_loopback(base_url) and args.provider == "openai":
            args.model = args.model or local_model(base_url)
    fit = fit_to_model(args, base_url, ask_server=not args.prompt_only)
    site = open_folder(args.site)
    if args.prompt_only and args.json:
        return print_evidence_json(args, site, fit)
    found = find_evidence(args, site, fit.budget)
    if found is None:
        return 2
    if args.prompt_only:
        print(found.prompt.text)
        return 0
    evidence = found.to_dict()
    if not args.json:
        print_sources(found, fit.note)
    answer, stop_reason = stream(args, base_url, key, found, fit.max_tokens)
    if answer is None:
        return 1
    checked = verify(answer, evidence, CorpusLibrary(site.engine))
    cut = stop_reason == "length"
    if args.json:
        extra = {"stop_reason": stop_reason, "max_tokens": fit.max_tokens, **_sources(evidence)}
        print(json.dumps({"question": args.question, "answer": answer, **checked, **extra}, indent=1))
        return 0
    print("\n")
    if cut:
        print(
            f"cut off at {fit.max_tokens} tokens: the answer reached its cap; ask again with a larger "
            "--max-tokens to continue it\n"
        )
    print(report(checked))
    return 0


def provider_key(args: argparse.Namespace, base_url: str) -> str | None:
    """The API key to send ("" for a loopback server without one); None, with the error printed, when the
    question cannot be asked (no model named for a hosted provider, or no key where one is needed)."""
    from builder.providers import KEY_VARIABLES, is_loopback

    if not args.model and not (is_loopback(base_url) and args.provider == "openai"):
        print("error: --model is required to ask (or use --prompt-only)", file=sys.stderr)
        return None
    key = api_key(args.provider, base_url)
    if key is None:
        variables = " or ".join(KEY_VARIABLES[args.provider])
        print(f"error: no API key: set {variables} in the environment", file=sys.stderr)
    return key


def local_model(base_url: str) -> str:
    """The first model a local server lists; "local" when it lists none (llama.cpp takes any name)."""
    from builder.local_server import model_names

    names = model_names(base_url)
    return names[0] if names else "local"


def fit_to_model(args: argparse.Namespace, base_url: str, ask_server: bool = True) -> Fit:
    """The budget and answer cap that fit the model's context window: --context, else what a loopback
    server reports (when `ask_server`), else the window of a hosted model's family; without any,
    --budget (or the default) and --max-tokens as given. The arithmetic is the browser's
    (`answers.request_budget`)."""
    from builder.local_server import context_window
    from builder.providers import is_loopback
    from readingroom_core.answers import request_budget
    from readingroom_core.windows import family_window

    context, said = args.context, "--context"
    local = is_loopback(base_url)
    if context is None and local and args.provider == "openai" and ask_server:
        window = context_window(base_url, args.model or "")
        if window is not None:
            context, said = window.tokens, f"the server's {window.source}"
    family = family_window(args.model or "") if not local else None
    if context is None and family is not None:
        context, said = family[1], f"the {family[0]} family"
    budget, room = request_budget({"budget": args.budget, "max_tokens": args.max_tokens, "context": context})
    if not context:
        return Fit(budget, room)
    note = f"context window {context} tokens ({said}): up to {budget} for the prompt, {room} for the answer"
    return Fit(budget, room, note)


def print_evidence_json(args: argparse.Namespace, site: Site, fit: Fit) -> int:
    """--prompt-only --json: the evidence object the site's worker gets for the question
    (`Site.ask_evidence`), printed; 2, with the error printed, when the question is rejected."""
    from builder.query_encoder import OnnxQueryEncoder
    from readingroom_core.answers import retrieval_query
    from readingroom_core.querysyntax import embedding_text

    encoder = OnnxQueryEncoder.from_site(args.site, site.manifest)
    vector = [float(x) for x in encoder.encode([embedding_text(retrieval_query(args.question))])[0]]
    request = {"question": args.question, "history": [], "budget": fit.budget, "max_tokens": fit.max_tokens}
    if args.k:
        request["k"] = args.k
    found = json.loads(site.ask_evidence(json.dumps(request), vector))
    if "error" in found:
        print(f"error: {found['error']}", file=sys.stderr)
        return 2
    print(json.dumps(found, indent=1))
    return 0


def find_evidence(args: argparse.Namespace, site: Site, budget: int) -> Evidence | None:
    """The passages the answer may cite, fitted to the prompt budget; None, with the error printed, when
    the search or the fitting rejects the question (a bad query, or a question too long for the budget)."""
    from builder.query_encoder import OnnxQueryEncoder
    from readingroom_core.answers import PromptTooLong, retrieval_query, select_evidence
    from readingroom_core.querysyntax import embedding_text

    encoder = OnnxQueryEncoder.from_site(args.site, site.manifest)
    vector = encoder.encode([embedding_text(retrieval_query(args.question))])[0]
    try:
        return select_evidence(site.engine, args.question, vector, budget=budget, k=args.k)
    except (PromptTooLong, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return None


def print_sources(found: Evidence, note: str = "") -> None:
    if note:
        print(note)
    print(f"{len(found.sources)} sources, {found.prompt_tokens} of {found.budget} prompt tokens:")
    for source in found.sources:
        section = f" \u2014 {source.section}" if source.section else ""
        print(f"  [{source.n}] arXiv:{source.arxiv_id} {source.label}  {source.title}{section}")
    print(flush=True)


def stream(
    args: argparse.Namespace, base_url: str, key: str, found: Evidence, max_tokens: int
) -> tuple[str | None, str]:
    """The provider's answer, streamed to the terminal as it comes unless --json, and why the model
    stopped ("length" at the cap); None, with the error printed, when the provider fails."""
    from builder.providers import ProviderError, build_request, stream_answer
    from readingroom_core.tokens import smaller_window

    request = build_request(args.provider, base_url, args.model, found.prompt, key, max_tokens)
    pieces: list[str] = []
    stopped: list[str] = []

    def waiting(seconds: float) -> None:
        print(
            f"rate limited; waiting {seconds:g} s as the provider asks, then trying once more",
            file=sys.stderr,
        )

    if not args.json:
        print(f"waiting for the model ({found.prompt_tokens} tokens sent)\u2026", file=sys.stderr, flush=True)
    try:
        answer = stream_answer(
            request, args.model, key, timeout=args.timeout, on_wait=waiting, on_finish=stopped.append
        )
        for piece in answer:
            pieces.append(piece)
            if not args.json:
                sys.stdout.write(piece)
                sys.stdout.flush()
    except ProviderError as exc:
        if pieces and not args.json:
            print()
        print(f"error: {exc}", file=sys.stderr)
        if exc.kind in ("empty", "context_too_long"):
            window = smaller_window(found.prompt_tokens, max_tokens)
            print(
                f"retry with a smaller budget, fitted to a {window}-token window (llama.cpp's default is 2048): "
                f"--context {window}",
                file=sys.stderr,
            )
        return None, ""
    return "".join(pieces), (stopped[-1] if stopped else "")


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
