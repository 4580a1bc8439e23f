"""Requests to the search core, answered the same way by CPython and by Pyodide.

`tests/support/pyodide.py` sends one JSON request to `run_core.mjs`, which runs this file inside Pyodide and
calls `handle`; CPython imports the same file and calls the same function, so a parity test compares
only the interpreters, never two drivers. Paths are host paths: the Node script mounts each folder a
request names at the same path inside Pyodide. Stdlib and `readingroom_core` only.
"""

from __future__ import annotations

import json
import os
import sys
import time
from array import array

from readingroom_core import answers
from readingroom_core.browser import open_folder, open_site
from readingroom_core.library import CorpusLibrary
from readingroom_core.options import SearchOptions
from readingroom_core.ranges import folder_reader
from readingroom_core.tokenizer import WordPieceTokenizer

BROWSER_REQUEST = ("query", "k", "mode", "filters")  # what worker.js sends to Site.prepare


def folders(request_json: str) -> str:
    """Host folders (a JSON list) the request reads, for the Node script to mount before `handle` runs."""
    request = json.loads(request_json)
    if request["op"] == "verify":
        return json.dumps([request["site"]] if request.get("site") else [])
    return json.dumps([request["site"]])


def search_options(request: dict, mode: str) -> SearchOptions:
    """k and mode from the request, plus any other SearchOptions fields it sets (e.g. candidates, ef)."""
    return SearchOptions(k=request["k"], mode=mode, **request.get("options", {}))


def search(request: dict) -> dict:
    """Top hits per case and mode, as the browser gets them (`readingroom_core.browser.hit_json`)."""
    site = open_folder(request["site"])
    results = []
    for case in request["cases"]:
        by_mode = {}
        for mode in request["modes"]:
            hits = site.engine.search(case["query"], case.get("vector"), search_options(request, mode))
            by_mode[mode] = [site.hit_json(hit) for hit in hits]
        results.append(by_mode)
    return {"results": results}


def browser(request: dict) -> dict:
    """The Web Worker's calls in its order: open the site from a reader and the fetched manifest text,
    load semantic search, then per case the query's token ids, the search prepared, and the reply to the
    prepared search with the vector as the worker hands it over (float32 bytes; the worker's reading ahead
    only fetches files the search then reads)."""
    read = folder_reader(request["site"])
    site = open_site(read, read("manifest.json").decode("utf-8"))
    site.load_semantic()
    replies = []
    for case in request["cases"]:
        ids = site.encode_ids(case["query"])
        search_request = {key: case.get(key) for key in BROWSER_REQUEST}
        prepared = json.loads(site.prepare(json.dumps(search_request)))
        if "error" in prepared:
            replies.append({"ids": ids, **prepared})
            continue
        vector = case.get("vector")
        reply = site.search(prepared["search"], None if vector is None else array("f", vector).tobytes())
        site.discard(prepared["search"])
        replies.append({"ids": ids, **json.loads(reply)})
    return {"replies": replies}


def tokenize(request: dict) -> dict:
    """WordPiece ids of each text, untruncated, from the site's vocab and char-class table."""
    read = folder_reader(request["site"])
    tokenizer = WordPieceTokenizer.from_data(
        read(request["vocab"]).decode("utf-8"), json.loads(read(request["char_classes"]))
    )
    # Normalisation can lengthen text (ligatures, Hangul jamo), so allow 4 pieces per input character.
    return {"ids": [tokenizer.encode(text, max_length=4 * len(text) + 2) for text in request["texts"]]}


def bench(request: dict) -> dict:
    """Seconds per search: the first pass over the cases (text files and postings decoded on demand)
    and the later passes separately; engine construction and the vector file's load timed alone."""
    started = time.perf_counter()
    engine = open_folder(request["site"]).engine
    engine_load = time.perf_counter() - started
    started = time.perf_counter()
    engine.load_vectors()
    vectors_load = time.perf_counter() - started
    first_pass: dict[str, list[float]] = {mode: [] for mode in request["modes"]}
    later_passes: dict[str, list[float]] = {mode: [] for mode in request["modes"]}
    for repeat in range(request["repeat"]):
        for mode in request["modes"]:
            options = search_options(request, mode)
            times = first_pass[mode] if repeat == 0 else later_passes[mode]
            for case in request["cases"]:
                started = time.perf_counter()
                engine.search(case["query"], case.get("vector"), options)
                times.append(time.perf_counter() - started)
    return {
        "engine_load_s": engine_load,
        "vectors_load_s": vectors_load,
        "chunks": engine.n_chunks,
        "first_pass_s": first_pass,
        "later_passes_s": later_passes,
    }


def suggest(request: dict) -> dict:
    """Seconds per did-you-mean (`SearchEngine.suggest`) for each case, and its suggestion.

    The first call is timed apart (it builds the term lists), then one untimed pass reads the text
    files the suggestions spell words from. Timed passes then run each case twice: with the engine's
    memo of corrections cleared (the cost of a word met for the first time) and again (memoized).
    """
    engine = open_folder(request["site"]).engine
    started = time.perf_counter()
    engine.suggest(request["cases"][0]["query"])
    first_call = time.perf_counter() - started
    suggestions = [engine.suggest(case["query"]) for case in request["cases"]]
    fresh: list[list[float]] = [[] for _ in request["cases"]]
    memoized: list[list[float]] = [[] for _ in request["cases"]]
    for _ in range(request["repeat"]):
        for index, case in enumerate(request["cases"]):
            engine.speller.corrections.clear()  # benchmark only: forget what earlier calls worked out
            for times in (fresh[index], memoized[index]):
                started = time.perf_counter()
                engine.suggest(case["query"])
                times.append(time.perf_counter() - started)
    return {"first_call_s": first_call, "fresh_s": fresh, "memoized_s": memoized, "suggestions": suggestions}


def profile(request: dict) -> dict:
    """Where a warm search spends its time, per mode: cProfile's cumulative and own seconds per query of
    the costliest functions (profiling slows pure-Python code, so read the shares, not the totals)."""
    import cProfile
    import pstats

    engine = open_folder(request["site"]).engine
    engine.load_vectors()
    by_mode = {}
    for mode in request["modes"]:
        options = search_options(request, mode)
        for case in request["cases"]:  # warm: text files read, postings decoded
            engine.search(case["query"], case.get("vector"), options)
        profiler = cProfile.Profile()
        profiler.enable()
        for case in request["cases"]:
            engine.search(case["query"], case.get("vector"), options)
        profiler.disable()
        rows = [
            (f"{os.path.basename(filename)}:{function}", calls, own, cumulative)
            for (filename, _, function), (_, calls, own, cumulative, _) in pstats.Stats(
                profiler
            ).stats.items()
        ]
        queries = len(request["cases"])
        by_mode[mode] = [
            {
                "function": name,
                "calls_per_query": calls / queries,
                "own_s": own / queries,
                "cumulative_s": cum / queries,
            }
            for name, calls, own, cum in sorted(rows, key=lambda row: -row[2])[: request.get("top", 12)]
        ]
    return {"per_query": by_mode}


def evidence(request: dict) -> dict:
    """The sources, page texts and prompt of each question, as the browser's Ask gets them."""
    engine = open_folder(request["site"]).engine
    return {"results": [answers.evidence(engine, case, case.get("vector")) for case in request["cases"]]}


def verify(request: dict) -> dict:
    """Citation checks of each answer against its evidence (and the site's reading list, when the
    request names a site)."""
    library = CorpusLibrary(open_folder(request["site"]).engine) if request.get("site") else None
    cases = request["cases"]
    return {"results": [answers.verify(case["answer"], case["evidence"], library) for case in cases]}


OPERATIONS = {
    "search": search,
    "browser": browser,
    "tokenize": tokenize,
    "bench": bench,
    "profile": profile,
    "suggest": suggest,
    "evidence": evidence,
    "verify": verify,
}


def handle(request_json: str) -> str:
    """One JSON request in, one JSON reply out; the reply names the interpreter that answered."""
    request = json.loads(request_json)
    reply = OPERATIONS[request["op"]](request)
    reply["python"] = f"{sys.implementation.name} {sys.version.split()[0]} on {sys.platform}"
    return json.dumps(reply)
