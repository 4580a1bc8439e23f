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
from dataclasses import asdict

from readingroom_core.engine import SearchEngine, SearchOptions
from readingroom_core.tokenizer import WordPieceTokenizer

HIT_FIELDS = ("doc_id", "chunk_id", "arxiv_id", "score", "ranks", "snippet", "highlights")


def folders(request_json: str) -> str:
    """Host folders (a JSON list) the request reads, for the Node script to mount before `handle` runs."""
    request = json.loads(request_json)
    if request["op"] == "tokenize":
        return json.dumps(
            sorted({os.path.dirname(request["vocab"]), os.path.dirname(request["char_classes"])})
        )
    return json.dumps([request["site"]])


def open_engine(site: str) -> SearchEngine:
    with open(os.path.join(site, "manifest.json"), encoding="utf-8") as manifest_file:
        manifest = json.load(manifest_file)

    def read(relative_path: str) -> bytes:
        with open(os.path.join(site, relative_path), "rb") as data_file:
            return data_file.read()

    return SearchEngine(manifest, read)


def search_options(request: dict, mode: str) -> SearchOptions:
    """k and mode from the request, plus any other SearchOptions fields it sets (e.g. candidates, ef)."""
    return SearchOptions(k=request["k"], mode=mode, **request.get("options", {}))


def search(request: dict) -> dict:
    """Top hits per case and mode, with the fields a visitor sees (scores, snippets, highlights)."""
    engine = open_engine(request["site"])
    results = []
    for case in request["cases"]:
        by_mode = {}
        for mode in request["modes"]:
            hits = engine.search(case["query"], case.get("vector"), search_options(request, mode))
            by_mode[mode] = [{name: asdict(hit)[name] for name in HIT_FIELDS} for hit in hits]
        results.append(by_mode)
    return {"results": results}


def tokenize(request: dict) -> dict:
    """WordPiece ids of each text, untruncated, from the site's vocab and char-class table."""
    with open(request["vocab"], encoding="utf-8") as vocab_file:
        vocab_text = vocab_file.read()
    with open(request["char_classes"], encoding="utf-8") as classes_file:
        char_classes = json.load(classes_file)
    tokenizer = WordPieceTokenizer.from_data(vocab_text, char_classes)
    # Normalisation can lengthen text (ligatures, Hangul jamo), so allow 4 pieces per input character.
    return {"ids": [tokenizer.encode(text, max_length=4 * len(text) + 2) for text in request["texts"]]}


def bench(request: dict) -> dict:
    """Seconds per search: the first pass over the cases (text files and postings decoded on demand)
    and the later passes separately; engine construction and the vector file's load timed alone."""
    started = time.perf_counter()
    engine = open_engine(request["site"])
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


def profile(request: dict) -> dict:
    """Where a warm search spends its time, per mode: cProfile's cumulative and own seconds per query of
    the costliest functions (profiling slows pure-Python code, so read the shares, not the totals)."""
    import cProfile
    import pstats

    engine = open_engine(request["site"])
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


OPERATIONS = {"search": search, "tokenize": tokenize, "bench": bench, "profile": profile}


def handle(request_json: str) -> str:
    """One JSON request in, one JSON reply out; the reply names the interpreter that answered."""
    request = json.loads(request_json)
    reply = OPERATIONS[request["op"]](request)
    reply["python"] = f"{sys.implementation.name} {sys.version.split()[0]} on {sys.platform}"
    return json.dumps(reply)
