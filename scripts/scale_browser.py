"""The scale benchmark's browser half: what a visitor's chromium downloads, holds and waits for, read from
the network log and the DevTools protocol, so it measures any site layout without knowing it.

- start-up bytes when the first keyword result shows and when semantic search is ready;
- bytes and requests per query (each question asked once, after start-up: the HTTP responses that
  finish while it runs, whatever files and ranges the layout reads);
- the workers' heaps: V8's used heap plus ArrayBuffer backing stores, through Target auto-attach and
  Runtime.getHeapUsage (Runtime.queryObjects on a worker crashed chromium 156), and for the search
  worker Python's WebAssembly memory, which those leave out (a 100 MB WebAssembly.Memory adds nothing
  to backingStorageSize) and which holds the core's caches: the worker reports its size with each
  search. ONNX Runtime's WebAssembly memory in the encoder worker is not counted;
- query latency in the page (first sight, then the same questions again: warm).
Loads and queries reuse bench_browser's probes and profiles (one set of helpers for every browser bench).
"""

from __future__ import annotations

import statistics
import tempfile
from urllib.parse import quote, urlsplit

from bench_browser import (
    FIRST_HIT_PROBE,
    FIRST_QUERY,
    LATENCY,
    SEMANTIC_TIMING,
    SLOW_LINE,
    WARM_UP,
    kind_of,
    open_profile,
    percentiles,
)
from playwright.sync_api import Error as PlaywrightError
from support.chromium import WorkerHeaps, wait_for

__all__ = ["FIRST_HIT_PROBE", "measure_profile"]

ONE_QUERY = """async (query) => {
  const started = performance.now();
  await window.readingRoom.search(query, {k: 10, mode: 'hybrid'});
  return performance.now() - started;
}"""


class NetworkLog:
    """Bytes received (headers + body as sent) per kind of file as bench_browser counts them, plus the
    number of responses, a running total and the bytes of each index file (data/, passage texts
    aside): what grows with the list."""

    def __init__(self, page):
        self.by_kind: dict[str, int] = {}
        self.foreign: list[str] = []
        self.requests = 0
        self.bytes = 0
        self.index_files: dict[str, int] = {}
        page.on("requestfinished", self._finished)

    def _finished(self, request):
        try:
            sizes = request.sizes()
        except PlaywrightError:  # the page closed before this response's sizes could be read
            return
        size = sizes["responseBodySize"] + sizes["responseHeadersSize"]
        url = urlsplit(request.url)
        if url.hostname not in ("127.0.0.1", "localhost"):
            self.foreign.append(request.url)
        self.by_kind[kind_of(request.url)] = self.by_kind.get(kind_of(request.url), 0) + size
        self.requests += 1
        self.bytes += size
        path = url.path
        if "/data/" in path and "/data/text" not in path:
            name = path.rsplit("/", 1)[-1]
            self.index_files[name] = self.index_files.get(name, 0) + size


def cold_start(page, url: str) -> dict:
    """A page load: time and bytes to the first keyword result and to semantic-ready."""
    log = NetworkLog(page)
    page.goto(f"{url}?q={quote(FIRST_QUERY)}")
    wait_for(page, "window.firstHitMs !== undefined")
    keyword = {"bytes": log.bytes, "requests": log.requests, "s": page.evaluate("window.firstHitMs") / 1000}
    semantic = page.evaluate(SEMANTIC_TIMING, FIRST_QUERY)
    ready = {"bytes": log.bytes, "requests": log.requests, "s": semantic["ready_ms"] / 1000}
    page.wait_for_load_state("networkidle")
    return {
        "first_keyword_result_s": round(keyword["s"], 2),
        "first_semantic_result_s": round(semantic["first_result_ms"] / 1000, 2),
        "bytes_to_keyword_ready": keyword["bytes"],
        "requests_to_keyword_ready": keyword["requests"],
        "bytes_to_semantic_ready": ready["bytes"],
        "requests_to_semantic_ready": ready["requests"],
        "bytes_after_start": log.bytes,
        "bytes_by_kind": dict(sorted(log.by_kind.items())),
        "index_files": dict(sorted(log.index_files.items())),
        "foreign_requests": log.foreign,
    }


def per_query_transfers(page, questions: list[str]) -> dict:
    """Each question once, in order, after start-up: what its search fetched."""
    log = NetworkLog(page)
    sizes, counts, times = [], [], []
    for question in questions:
        bytes_before, requests_before = log.bytes, log.requests
        times.append(page.evaluate(ONE_QUERY, question))
        page.wait_for_timeout(20)  # lets the last responses' finished events arrive
        sizes.append(log.bytes - bytes_before)
        counts.append(log.requests - requests_before)
    return {
        "bytes": spread(sizes),
        "requests": spread(counts),
        "latency_first_sight": percentiles(times),
        "queries": len(questions),
    }


def spread(values: list[int]) -> dict:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"median": statistics.median(ordered), "p95": p95, "max": ordered[-1]}


def latency(page, questions: list[str]) -> dict:
    return {
        part: percentiles(times)
        for part, times in page.evaluate(LATENCY, [questions, "hybrid"]).items()
        if times
    }


def require_semantic_search(page) -> None:
    """A failed query turns semantic search off for the visit, and the questions after it then measure
    keyword search alone: the 10,000-paper figures recorded at 21a9438 were (a quoted title failed)."""
    error = page.evaluate("window.readingRoom.status().semantic_error")
    if error is not None:
        raise RuntimeError(f"semantic search turned off during the questions ({error}); nothing recorded")


def measure_profile(playwright, url: str, questions: list[str], throttled: bool) -> dict:
    """One fresh profile: a cold load, the questions (bytes, heap, latency), then a reload from the
    HTTP cache. Throttled: Chromium's network emulation (bench_browser.SLOW_LINE) for the whole visit."""
    with tempfile.TemporaryDirectory(prefix="bench-scale-profile-") as profile:
        context, page = open_profile(playwright, profile)
        if throttled:
            devtools = context.new_cdp_session(page)
            devtools.send("Network.enable")
            devtools.send("Network.emulateNetworkConditions", SLOW_LINE)
        heaps = WorkerHeaps(context, page)
        result: dict = {"cold": cold_start(page, url), "heap_after_start": heaps.measure(page)}
        page.evaluate(LATENCY, [[q for q in WARM_UP if q not in questions], "hybrid"])  # the JIT, first
        result["per_query"] = per_query_transfers(page, questions)
        result["heap_after_queries"] = heaps.measure(page)
        result["latency_warm"] = latency(page, questions)  # every question's second asking
        require_semantic_search(page)
        result["reload"] = cold_start(page, url)
        context.close()
    return result
