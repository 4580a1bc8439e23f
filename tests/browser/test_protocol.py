"""What the Python side hands the browser, held to the types wasm/runtime/protocol.js declares for it.

tsc checks the runtime's JavaScript against protocol.js, but the JSON that readingroom_core.browser
writes only meets those types at run time. Here real replies, from CPython on the suite's small built
site (every kind the search worker gets: prepared searches, search replies, the ranged files and the
batches the core announces, query ids, evidence, verdicts, errors, the manifest), are written as typed
constants into a scratch module that the repository's TypeScript checks with strict and checkJs: a
reply with a field its type lacks, without a required one, or with one of the wrong type fails. What
window.readingRoom gives (search hits, the status, an Ask turn) is checked the same way, from chromium.
Needs node and `npm ci --prefix wasm`; skipped without.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support.mock_llm import MockLLM
from support.served import require_browser, serving

from readingroom_core.browser import open_site
from readingroom_core.ranges import folder_range_reader, folder_reader

WASM_DIR = Path(__file__).resolve().parents[2] / "wasm"
TSC = WASM_DIR / "node_modules" / "typescript" / "bin" / "tsc"
PROTOCOL = (WASM_DIR / "runtime" / "protocol.js").as_posix()
QUERY = "grouped query attention"
QUESTION = "How many predicted queries does doc2query append?"
KEY = "test-key"


@dataclass(frozen=True)
class Typed:
    """A value and the TypeScript type it must have; `P.Name` stands for protocol.js's Name."""

    type: str
    value: Any

    def module(self) -> str:
        type_ = re.sub(r"\bP\.(\w+)", lambda m: f"import({json.dumps(PROTOCOL)}).{m[1]}", self.type)
        literal = json.dumps(self.value, indent=1, ensure_ascii=True)
        return f"/** @type {{{type_}}} */\nexport const value = {literal};\n"


@pytest.fixture(scope="module")
def typecheck(tmp_path_factory) -> Callable[[dict[str, Typed]], dict[str, list[str]]]:
    """check({name: Typed}): tsc's errors by name (none for a value of its type), each module alone."""
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not on PATH")
    if not TSC.is_file():
        pytest.skip(f"{TSC} is missing; run `npm ci --prefix wasm`")

    def check(values: dict[str, Typed]) -> dict[str, list[str]]:
        folder = tmp_path_factory.mktemp("typed")
        for name, typed in values.items():
            (folder / f"{name}.js").write_text(typed.module(), encoding="utf-8")
        config = {
            "extends": (WASM_DIR / "tsconfig.base.json").as_posix(),
            "compilerOptions": {"lib": ["ES2024", "DOM"], "strict": True, "checkJs": True, "noEmit": True},
            "files": [f"{name}.js" for name in values],
        }
        (folder / "tsconfig.json").write_text(json.dumps(config), encoding="utf-8")
        checked = subprocess.run(
            [node, str(TSC), "-p", str(folder / "tsconfig.json"), "--pretty", "false"],
            capture_output=True,
            text=True,
            check=False,
        )
        errors: dict[str, list[str]] = {name: [] for name in values}
        last = None
        for line in checked.stdout.splitlines():
            found = re.search(r"(?:^|/)(\w+)\.js\((\d+),\d+\): error (.*)", line)
            if found:
                last = found[1]
                errors[last].append(f"line {found[2]}: {found[3]}")
            elif last is not None and line.startswith(" "):  # the same error, explained further
                errors[last][-1] += " " + line.strip()
        assert checked.returncode == 0 or any(errors.values()), checked.stdout + checked.stderr
        return errors

    return check


def float32_bytes(vector: list[float]) -> bytes:
    """A query vector as the worker hands it over: the encoder's Float32Array."""
    return array("f", vector).tobytes()


@pytest.fixture(scope="module")
def replies(built_sites) -> dict[str, Typed]:
    """Every kind of reply the search worker gets from Python, from the calls worker.js makes."""
    root = built_sites.second
    read, read_range = folder_reader(root), folder_range_reader(root)
    announced: list[str] = []

    def announce(batch_json: str) -> None:
        announced.append(batch_json)

    manifest_text = read("manifest.json").decode("utf-8")
    site = open_site(read, manifest_text, read_range, announce)
    out: dict[str, Typed] = {"keyword_ranged_files": Typed("string[]", json.loads(site.ranged_files()))}
    site.load_semantic()
    dims = site.manifest.model.dims
    vector = float32_bytes([dims**-0.5] * dims)  # any unit vector of the model's width ranks by meaning

    def search(name: str, request: dict, vector: bytes | None = None) -> None:
        prepared = json.loads(site.prepare(json.dumps(request)))
        if "error" in prepared:
            out[name] = Typed("P.ErrorReply", prepared)
            return
        out[f"{name}_prepared"] = Typed("P.PreparedSearch", prepared)
        try:
            reply = json.loads(site.search(prepared["search"], vector))
        finally:
            site.discard(prepared["search"])
        out[name] = Typed("P.ErrorReply" if "error" in reply else "P.CoreSearchReply", reply)

    hybrid = {"query": QUERY, "k": 10, "mode": "hybrid", "filters": {}}
    search("hybrid", hybrid, vector)
    search("keyword", {**hybrid, "mode": "bm25", "filters": {"year_min": 2000, "tags": ["t0"]}})
    search("dense", {**hybrid, "mode": "dense"}, vector)
    search("misspelt", {**hybrid, "query": "attentoin"})  # answered with a suggestion
    search("filters_only", {**hybrid, "query": "year:2000..2030"})
    search("rejected_query", {**hybrid, "query": "year:abc attention"})
    search("dense_without_vector", {**hybrid, "mode": "dense"})
    out["ranged_files"] = Typed("string[]", json.loads(site.ranged_files()))
    out["announced"] = Typed("P.Ranges[]", [json.loads(batch) for batch in announced])
    out["query_ids"] = Typed("number[]", site.encode_ids(QUERY))

    ask = {"question": QUESTION, "history": [], "budget": 4500, "context": None, "max_tokens": 1500}
    out["retrieval_query"] = Typed("string", site.ask_retrieval_query(json.dumps(ask)))
    evidence = json.loads(site.ask_evidence(json.dumps(ask), vector))
    out["evidence"] = Typed("P.EvidenceReply", evidence)
    follow_up = {**ask, "history": [{"question": QUESTION, "answer": "Ten."}], "context": 8192}
    out["evidence_keyword_only"] = Typed(
        "P.EvidenceReply", json.loads(site.ask_evidence(json.dumps(follow_up)))
    )
    out["evidence_too_long"] = Typed(
        "P.ErrorReply", json.loads(site.ask_evidence(json.dumps({**ask, "budget": 5})))
    )

    source = evidence["sources"][0]
    quote = " ".join(source["text"].split()[:8])
    answer = (
        f"Doc2query expands passages with predicted queries. [arXiv:{source['arxiv_id']} "
        f'p.{source["page_start"]} "{quote}"]\n'
        'Expansion also cures every retrieval failure known. [arXiv:9999.99999 p.1 "no such paper"]\n'
        "This sentence makes a claim and cites nothing at all."
    )
    request = {"answer": answer, "evidence": {"sources": evidence["sources"], "pages": evidence["pages"]}}
    verdict = json.loads(site.verify_answer(json.dumps(request)))
    out["verdict"] = Typed("P.VerifyReply", verdict)

    hit = json.loads(site.search(json.loads(site.prepare(json.dumps(hybrid)))["search"]))["hits"][0]
    in_context = {"arxiv_id": hit["arxiv_id"], "page": hit["page_start"], "chunk_id": hit["chunk_id"]}
    out["page_marked"] = Typed("P.PageReply", json.loads(site.page_in_context(json.dumps(in_context))))
    out["page_plain"] = Typed(
        "P.PageReply", json.loads(site.page_in_context(json.dumps({**in_context, "chunk_id": ""})))
    )
    out["page_missing"] = Typed(
        "P.ErrorReply", json.loads(site.page_in_context(json.dumps({**in_context, "page": 999})))
    )

    manifest = json.loads(manifest_text)
    out["manifest"] = Typed("P.Manifest", {"files": manifest["files"], "artifacts": manifest["artifacts"]})
    return out


def test_every_reply_the_worker_gets_from_python_has_its_declared_type(replies, typecheck):
    # What the checks below rest on: each kind came, and in the variety that tells its types apart.
    assert {"error"} == set(replies["rejected_query"].value) == set(replies["dense_without_vector"].value)
    assert replies["hybrid"].value["hits"] and replies["misspelt"].value["suggestion"]
    assert any(batch for batch in replies["announced"].value) and replies["query_ids"].value
    citations = replies["verdict"].value["citations"]
    assert {c["status"] for c in citations} >= {"verified", "invented"}
    assert any(c["highlight"] for c in citations) and any(c["source"] is None for c in citations)
    assert replies["verdict"].value["uncited"] and "error" in replies["evidence_too_long"].value
    assert replies["page_marked"].value["marked"] and not replies["page_plain"].value["marked"]
    assert "error" in replies["page_missing"].value
    errors = typecheck(replies)
    assert not any(errors.values()), {name: found for name, found in errors.items() if found}


def _hit(reply: dict) -> dict:
    return reply["hits"][0]


# (reply, what is done to a copy of it, what tsc's error says: TypeScript is pinned in wasm/package.json)
MUTATIONS = {
    "hit_with_an_unknown_field": (
        "hybrid",
        lambda r: _hit(r).update(rank=1),
        ["rank", "does not exist in type 'Hit'"],
    ),
    "reply_without_weak": ("hybrid", lambda r: r.pop("weak"), ["Property 'weak' is missing"]),
    "year_as_text": (
        "hybrid",
        lambda r: _hit(r).update(year="2019"),
        ["'string' is not assignable to type 'number'"],
    ),
    "segment_marked_by_text": (
        "hybrid",
        lambda r: _hit(r)["segments"][0].__setitem__(1, "yes"),
        ["'string' is not assignable to type 'boolean'"],
    ),
    "read_ahead_without_its_end": (
        "hybrid_prepared",
        lambda r: r["read_ahead"].append(["data/texts.bin", 0]),
        ["'[string, number]' is not assignable to type '[string, number, number]'"],
    ),
    "source_with_an_unknown_field": (
        "evidence",
        lambda r: r["sources"][0].update(score=1.5),
        ["score", "does not exist in type 'Source'"],
    ),
    "evidence_without_answer_tokens": (
        "evidence",
        lambda r: r.pop("answer_tokens"),
        ["'answer_tokens' is missing"],
    ),
    "citation_source_as_text": (
        "verdict",
        lambda r: r["citations"][0].update(source="1"),
        ["'string' is not assignable to type 'number'"],
    ),
    "verdict_without_uncited": ("verdict", lambda r: r.pop("uncited"), ["Property 'uncited' is missing"]),
    "manifest_without_dense": (
        "manifest",
        lambda r: r["files"].pop("dense"),
        ["Property 'dense' is missing"],
    ),
}


def test_a_reply_off_its_type_is_rejected(replies, typecheck):
    """The same check refuses a copy of a real reply with a field added, dropped or of the wrong type."""
    mutated = {}
    for name, (kind, change, _) in MUTATIONS.items():
        value = copy.deepcopy(replies[kind].value)
        change(value)
        mutated[name] = Typed(replies[kind].type, value)
    errors = typecheck(mutated)
    for name, (_, _, said) in MUTATIONS.items():
        assert any(all(part in error for part in said) for error in errors[name]), (name, errors[name])


@pytest.mark.browser
def test_what_window_reading_room_gives_has_its_declared_type(built_sites, browser, typecheck):
    """readingRoom.search's hits, readingRoom.status() and an Ask turn's result, from the page itself."""
    require_browser()
    with serving(built_sites.second) as url, MockLLM(api_key=KEY) as llm:
        context = browser.new_context()
        try:
            page = context.new_page()
            page.set_default_timeout(90_000)
            page.goto(url)
            page.evaluate("Promise.all([readingRoom.ready, readingRoom.semanticReady])")
            hits = page.evaluate("(query) => readingRoom.search(query, {k: 5})", QUERY)
            asked = page.evaluate(
                """([question, base, key]) => readingRoom.ask(question,
                     {provider: "openai", base_url: base + "/v1", model: "mock-mixed", key})""",
                [QUESTION, llm.base_url, KEY],
            )
            status = page.evaluate("readingRoom.status()")
        finally:
            context.close()
    assert hits and asked["citations"] and status["last_search"] and status["last_ask"]
    surface = {
        "hits": Typed("P.Hit[]", hits),
        "status": Typed("P.Status", status),
        "ask": Typed("P.AskResult", asked),
    }
    errors = typecheck(surface)
    assert not any(errors.values()), {name: found for name, found in errors.items() if found}
