"""Developer tasks: `nox -s tests`, `nox -s build`, `nox -s bench`, `nox -s lint`."""

from pathlib import Path

import nox

nox.options.sessions = ["lint", "tests"]
nox.options.reuse_venv = "yes"

ROOT = Path(__file__).parent
SHARED = ROOT.parent / "shared"
MIRROR = SHARED / "arxiv-mirror"
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


def install(session: nox.Session, extras: str = "") -> None:
    # torch is pinned in pyproject to the CPU wheel on local disk; install it first so nothing
    # resolves a multi-GB CUDA build.
    session.install("torch==2.13.0")
    session.install("-e", f".{extras}")


@nox.session
def tests(session: nox.Session) -> None:
    """The test suite (small corpora; a few minutes)."""
    install(session, "[dev]")
    session.run("pytest", *(session.posargs or ["-q"]), env=OFFLINE_ENV)


@nox.session
def build(session: nox.Session) -> None:
    """Build the site from corpus/readingroom.toml into site/ (uses ../shared/arxiv-mirror when present)."""
    install(session)
    args = ["python", "-m", "builder", "build", *session.posargs]
    if MIRROR.is_dir() and "--mirror" not in session.posargs:
        args += ["--mirror", str(MIRROR)]
    session.run(*args, env=OFFLINE_ENV)


@nox.session
def bench(session: nox.Session) -> None:
    """Whole-mirror measurements; numbers go in the closing notes."""
    install(session, "[dev]")
    if not MIRROR.is_dir():
        session.error(f"bench needs the arXiv mirror at {MIRROR}")
    session.run("python", "scripts/measure_parse.py", "--mirror", str(MIRROR), env=OFFLINE_ENV)
    session.run("python", "scripts/measure_chunks.py", "--mirror", str(MIRROR), env=OFFLINE_ENV)


@nox.session
def lint(session: nox.Session) -> None:
    session.install("ruff")
    session.run("ruff", "check", "builder", "wasm", "tests", "scripts", "noxfile.py")
