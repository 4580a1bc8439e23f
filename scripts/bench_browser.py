"""Time the built site in Debian chromium: first keyword and semantic result, cold and from the HTTP cache.

    python scripts/bench_browser.py --site site [--questions ../shared/eval/dev-questions.jsonl] [--startup-only]

The site is served on 127.0.0.1 by `builder.commands.serve` (no compression: bytes are what a host without
gzip sends). A fresh profile is cold; the second page load in it uses the (disk) HTTP cache.
`cold_throttled` is a cold load in another fresh profile over an emulated slow line (Chromium's network
emulation through the DevTools protocol: 20 Mbit/s down, 5 Mbit/s up, 40 ms latency).
`--startup-only` measures the page loads alone (no parity, latency or Ask timings).
Times are from navigation start (the page's performance clock): "keyword" is when the first result of
the ?q= query is in the DOM, "semantic" when a hybrid search with the query vector has returned, asked
as soon as semantic search is ready. Query latency is timed in the page around readingRoom.search
("total"), and split in the worker into the wait for the query vector ("embed"), during which the core
prepares the search and reads paper texts ahead ("ahead"), and the search core's time after it
("search"):
"hybrid" asks each question for the first time (the encoder worker runs), "hybrid_again" asks them
all once more (their vectors come from the worker's cache, as for "More results" or a filter change).
`ask_to_sources_shown_warm` times Ask mode (no key) from submitting a question to its source cards.
`parity_with_cli` compares the browser's top 10 for each question with the CLI's (`python -m builder
query`: the same core and ONNX encoder under CPython); `startup_steps_ms` says when the worker
finished each start-up step (the index files fetched whole once searches pause, last:
`bytes_with_index_read_whole` counts it), and `python_start` whether Python was restored from the build's snapshot
("snapshot") or booted ("boot").
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path
from urllib.parse import quote, urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # tests/support: the harness
from measurements import add_record_option, begin
from support.chromium import CHROMIUM, CHROMIUM_ARGS, TOP_CHUNK_IDS, wait_for

from builder.commands.serve import serve_in_thread
from builder.evaluation.evaluate import top_chunk_ids
from builder.paths import DEV_QUESTIONS
from readingroom_core.options import SearchOptions

TIMEOUT_MS = 120_000
SLOW_LINE = {  # Network.emulateNetworkConditions: bytes per second, ms
    "offline": False,
    "downloadThroughput": 20e6 / 8,
    "uploadThroughput": 5e6 / 8,
    "latency": 40,
}
PARITY_K = 10
FIRST_QUERY = "How many predicted queries does doc2query append"
# Before timing: the first text files, postings and the JIT; none of them is a question timed later.
WARM_UP = ["attention heads", "dense passage retrieval benchmarks", "parameter-efficient fine-tuning"]
# Records when the first result shows, on the page's own clock (0 = navigation start).
FIRST_HIT_PROBE = """
new MutationObserver((_, observer) => {
  if (document.querySelector('#results .hit')) {
    window.firstHitMs = performance.now();
    observer.disconnect();
  }
}).observe(document, {childList: true, subtree: true});
"""
SEMANTIC_TIMING = """async (query) => {
  await window.readingRoom.semanticReady;
  const readyMs = performance.now();
  const hits = await window.readingRoom.search(query, {k: 10});
  return {ready_ms: readyMs, first_result_ms: performance.now(), hits: hits.length};
}"""
LATENCY = """async ([queries, mode]) => {
  const times = {total: [], embed: [], search: [], ahead: []};
  for (const query of queries) {
    const started = performance.now();
    await window.readingRoom.search(query, {k: 10, mode});
    times.total.push(performance.now() - started);
    const worker = window.readingRoom.status().last_search;
    times.embed.push(worker.embed_ms);
    times.search.push(worker.search_ms);
    if (worker.ahead_ms !== undefined) times.ahead.push(worker.ahead_ms);
  }
  return times;
}"""


def kind_of(url: str) -> str:
    path = urlsplit(url).path
    for marker, kind in (
        ("/runtime/pyodide-", "pyodide"),
        ("/runtime/python-snapshot", "python snapshot"),
        ("/runtime/ort", "onnxruntime-web"),
        ("/model/", "model"),
        ("/data/text", "passage text"),  # the texts file and its dictionary
        ("/data/", "index data"),
        (".whl", "core wheel"),
        ("/runtime/", "site js/css"),
    ):
        if marker in path:
            return kind
    return "pages + manifest"


class Transfers:
    """Bytes received per kind of file (headers + body as sent), from every finished request."""

    def __init__(self, page):
        self.by_kind: dict[str, int] = {}
        self.foreign: list[str] = []
        page.on("requestfinished", self._finished)

    def _finished(self, request):
        if urlsplit(request.url).hostname not in ("127.0.0.1", "localhost"):
            self.foreign.append(request.url)
        sizes = request.sizes()
        size = sizes["responseBodySize"] + sizes["responseHeadersSize"]
        self.by_kind[kind_of(request.url)] = self.by_kind.get(kind_of(request.url), 0) + size


def load(page, url: str) -> dict:
    transfers = Transfers(page)
    page.goto(f"{url}?q={quote(FIRST_QUERY)}")
    wait_for(page, "window.firstHitMs !== undefined")
    keyword_ms = page.evaluate("window.firstHitMs")
    semantic = page.evaluate(SEMANTIC_TIMING, FIRST_QUERY)
    page.wait_for_load_state("networkidle")
    result = {
        "first_keyword_result_s": round(keyword_ms / 1000, 2),
        "semantic_ready_s": round(semantic["ready_ms"] / 1000, 2),
        "first_semantic_result_s": round(semantic["first_result_ms"] / 1000, 2),
        "python_start": page.evaluate("window.readingRoom.status().python_start"),
        "bytes_by_kind": dict(sorted(transfers.by_kind.items())),
        "bytes_total": sum(transfers.by_kind.values()),
        "foreign_requests": transfers.foreign,
    }
    if index_read_whole(page):
        page.wait_for_timeout(500)  # lets the last responses' finished events arrive
        result["bytes_with_index_read_whole"] = sum(transfers.by_kind.values())
    result["startup_steps_ms"] = page.evaluate("window.readingRoom.status().timeline")
    return result


def index_read_whole(page) -> bool:
    """Waits for the index files the worker fetches whole once searches pause (worker.js
    readIndexWhole); False where none fit."""
    if not page.evaluate("window.readingRoom.status().timeline.index_whole_wanted !== undefined"):
        return False
    wait_for(page, "window.readingRoom.status().timeline.index_read_whole !== undefined")
    return True


# Ask mode without a key: from submitting a question to its source cards on screen (evidence from the
# worker: retrieval query embedded, hybrid search, prompt fitted to the budget), per question.
ASK_SOURCES = """async (questions) => {
  const times = [];
  for (const question of questions) {
    document.getElementById('ask-new').click();
    document.getElementById('ask-q').value = question;
    const shown = new Promise((resolve) => {
      const observer = new MutationObserver(() => {
        if (document.querySelector('.turn .source-card, .turn[data-state=failed]')) {
          observer.disconnect();
          resolve(performance.now());
        }
      });
      observer.observe(document.getElementById('thread'), {childList: true, subtree: true, attributes: true});
    });
    const started = performance.now();
    document.getElementById('ask-form').requestSubmit();
    times.push((await shown) - started);
  }
  return times;
}"""


def percentiles(times: list[float]) -> dict:
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"p50_ms": round(statistics.median(ordered), 1), "p95_ms": round(p95, 1), "n": len(ordered)}


def parity(site: Path, questions: list[str], browser_tops: list[list[str]]) -> dict:
    """The browser's hybrid top-k against `python -m builder query`'s (same core, same ONNX encoder)."""
    cli_tops = top_chunk_ids(site, questions, SearchOptions(k=PARITY_K))
    identical, overlaps, differences = 0, [], []
    for query, in_cli, in_browser in zip(questions, cli_tops, browser_tops, strict=True):
        identical += in_cli == in_browser
        overlaps.append(len(set(in_cli) & set(in_browser)) / max(len(in_cli), 1))
        if in_cli != in_browser:
            differences.append({"query": query, "cli": in_cli, "browser": in_browser})
    return {
        "k": PARITY_K,
        "queries": len(questions),
        "identical_rankings": identical,
        "mean_overlap": round(statistics.fmean(overlaps), 4),
        "differences": differences,
    }


def open_profile(playwright, profile: str):
    """A persistent profile has a disk cache, as a visitor's browser does (an incognito context keeps only
    small responses in memory)."""
    context = playwright.chromium.launch_persistent_context(
        profile, executable_path=str(CHROMIUM), args=CHROMIUM_ARGS
    )
    context.add_init_script(FIRST_HIT_PROBE)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    return context, page


def cold_over_slow_line(playwright, url: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-profile-") as profile:
        context, page = open_profile(playwright, profile)
        devtools = context.new_cdp_session(page)
        devtools.send("Network.enable")
        devtools.send("Network.emulateNetworkConditions", SLOW_LINE)
        result = {"line": SLOW_LINE, **load(page, url)}
        context.close()
    return result


def run(site: Path, questions: list[str], startup_only: bool = False) -> dict:
    from playwright.sync_api import sync_playwright

    server, url = serve_in_thread(site)
    try:
        with sync_playwright() as playwright, tempfile.TemporaryDirectory(prefix="bench-profile-") as profile:
            context, page = open_profile(playwright, profile)
            result = {"url": url, "cold": load(page, url), "warm_http_cache": load(page, url)}
            if startup_only:
                context.close()
                result["cold_throttled"] = cold_over_slow_line(playwright, url)
                return result
            page.evaluate(LATENCY, [[q for q in WARM_UP if q not in questions], "hybrid"])
            result["query_latency"] = {
                name: {
                    part: percentiles(times)
                    for part, times in page.evaluate(LATENCY, [questions, mode]).items()
                    if times
                }
                for name, mode in (("hybrid", "hybrid"), ("bm25", "bm25"), ("hybrid_again", "hybrid"))
            }
            result["parity_with_cli"] = parity(
                site, questions, page.evaluate(TOP_CHUNK_IDS, [questions, PARITY_K])
            )
            page.goto(f"{url}?ask=")
            page.evaluate("window.readingRoom.semanticReady")
            index_read_whole(page)
            page.evaluate(ASK_SOURCES, questions[:3])  # warm-up
            result["ask_to_sources_shown_warm"] = percentiles(page.evaluate(ASK_SOURCES, questions))
            context.close()
            result["cold_throttled"] = cold_over_slow_line(playwright, url)
    finally:
        server.shutdown()
        server.server_close()
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--site", type=Path, required=True, help="a built site folder")
    parser.add_argument("--questions", type=Path, default=DEV_QUESTIONS, help="JSONL with a 'query' per line")
    parser.add_argument("--startup-only", action="store_true", help="time the page loads alone")
    add_record_option(parser)
    args = parser.parse_args(argv)
    bench_run = begin("browser", argv)
    lines = args.questions.read_text(encoding="utf-8").splitlines()
    questions = [json.loads(line)["query"] for line in lines if line.strip()]
    result = run(args.site, questions, args.startup_only)
    print(json.dumps(result, indent=1))
    if args.record:
        bench_run.save(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
