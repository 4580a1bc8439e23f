"""The browser runtime as the site ships it: our JS/CSS, ORT Web, Pyodide, the search core as the wheel
the site's Pyodide installs, and the interpreter snapshot made from that wheel.

Runtime files are content-hashed (`style.<hash>.css`), except Pyodide, which loads its own files by their
original names from one folder and so lives in a versioned folder `runtime/pyodide-<version>/`, and ES
modules that import one another by name, which share a folder named by the hash of them all
(`runtime/engine-<hash>/`, `runtime/page-<hash>/`). The Python snapshot the search worker restores
instead of booting Python is made from the same wheel bytes. The wasm files and the snapshot, which the
workers fetch themselves, are stored gzipped (store.stored_gzipped). The manifest's `runtime` section
names them by role, with its own `artifacts` list, apart from the data files'.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import io
import json
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from builder.paths import REPO_ROOT
from builder.site.store import smallest_gzip, stored_gzipped, write_hashed, write_plain
from readingroom_core.formats.manifest import Artifact, RuntimeSection

WASM_DIR = REPO_ROOT / "wasm"
PYODIDE_PACKAGE = WASM_DIR / "node_modules" / "pyodide"
SNAPSHOT_SCRIPT = WASM_DIR / "node" / "python_snapshot.mjs"
SNAPSHOT_TIMEOUT_S = 300
RUNTIME_SOURCES = WASM_DIR / "runtime"
ORT_PACKAGE = WASM_DIR / "node_modules" / "onnxruntime-web"
STDLIB = "python_stdlib.zip"
PYODIDE_FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", STDLIB, "pyodide-lock.json")
# Codecs kept beside those the boot imports: Python decodes UTF-8, ASCII and Latin-1 without a lookup, and
# these are what a page or a file names most often.
KEPT_CODECS = ("ascii", "latin_1", "utf_8_sig", "utf_16", "utf_32", "cp1252", "idna", "punycode")
# Stored gzipped where that pays: Pyodide fetches the first three itself, and the worker's fetch wrapper
# hands it their `.gz` unpacked; the worker unpacks the interpreter's glue (1.25 MB, 0.26 MB gzipped, which
# hosts that send files as stored would send whole) and imports it from memory (python_start.js). Only
# pyodide.mjs, a few KB, is imported from the host.
RUNTIME_INPUTS = ("package.json", "pyodide.asm.mjs", "pyodide.asm.wasm", STDLIB)  # what the snapshot reads
PYODIDE_FETCHED = ("pyodide.asm.wasm", STDLIB, "pyodide-lock.json", "pyodide.asm.mjs")
# ORT Web's wasm-only build; numThreads 1 means the threaded glue never starts a worker of its own.
ORT_FILES = {
    "ort": "ort.wasm.min.mjs",
    "ort_glue": "ort-wasm-simd-threaded.mjs",
    "ort_wasm": "ort-wasm-simd-threaded.wasm",
}
ORT_FETCHED = ("ort_wasm",)  # handed to ORT as ort.env.wasm.wasmBinary, so it may come as .gz
OWN_RUNTIME = {"css": "style.css"}
# The engine's two workers share download.js, which they import by name, as the search worker imports its
# own parts: one folder named by the hash of them all (as the page's modules below).
ENGINE_MODULES = (
    "worker.js",
    "python_start.js",
    "embedding.js",
    "encoder.js",
    "download.js",
    "ranged_reads.js",
    "whole_index.js",
)
# The search page's ES modules (search and Ask mode) import one another by name, so they share one folder
# named by the hash of them all, together with markdown-it's self-contained browser build (answer.js
# imports it as ./markdown-it.mjs). protocol.js holds types only and is not shipped.
PAGE_MODULES = (
    "app.js",
    "filter_state.js",
    "missing_view.js",
    "corpus.js",
    "fold.js",
    "paper_map.js",
    "paper.js",
    "search_client.js",
    "router.js",
    "results_view.js",
    "landing.js",
    "reading_view.js",
    "dom.js",
    "citation.js",
    "references.js",
    "my_list.js",
    "list_exports.js",
    "ask.js",
    "ask_turn.js",
    "answer.js",
    "providers.js",
    "local_server.js",
    "settings.js",
)
MARKDOWN_IT_PACKAGE = WASM_DIR / "node_modules" / "markdown-it"
MARKDOWN_IT_FILE = "dist/browser/markdown-it.esm.min.mjs"
SOURCE_MAP_COMMENT = re.compile(rb"\n//# sourceMappingURL=\S+\s*$")
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip entry can hold


def build_core_wheel(out_dir: Path) -> Path:
    """Build the pure-Python `readingroom_core` wheel into `out_dir` and return its path.

    The sources are copied to a scratch folder first, so setuptools' build/ and egg-info never land in
    wasm/. Without setuptools installed, `build` makes an isolated environment (which needs PyPI).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for stale in out_dir.glob("readingroom_core-*.whl"):  # so the one wheel left is this build's
        stale.unlink()
    with tempfile.TemporaryDirectory(prefix="readingroom-core-wheel-") as scratch:
        source = Path(scratch) / "wasm"
        source.mkdir()
        shutil.copy2(WASM_DIR / "pyproject.toml", source)
        shutil.copytree(
            WASM_DIR / "readingroom_core",
            source / "readingroom_core",
            ignore=shutil.ignore_patterns("__pycache__"),
        )
        isolation = ["--no-isolation"] if importlib.util.find_spec("setuptools") else []
        command = [
            sys.executable,
            "-m",
            "build",
            "--wheel",
            *isolation,
            str(source),
            "--outdir",
            str(out_dir),
        ]
        finished = subprocess.run(command, capture_output=True, text=True, check=False)
        if finished.returncode != 0:
            raise RuntimeError(f"building the core wheel failed:\n{finished.stdout}\n{finished.stderr}")
    wheels = sorted(out_dir.glob("readingroom_core-*-py3-none-any.whl"))
    if len(wheels) != 1:
        raise RuntimeError(
            f"expected one readingroom_core wheel in {out_dir}, found {[w.name for w in wheels]}"
        )
    return wheels[0]


def run_snapshot_script(*arguments: str) -> str:
    """What wasm/node/python_snapshot.mjs printed, run with `arguments`. A failed run is tried once more,
    said on stderr, since the script's inputs are the build's own files: what fails twice is a real error,
    raised with what Node printed of it."""
    node = shutil.which("node")
    if node is None:
        raise RuntimeError("node is not installed; the build needs Node.js (as `npm ci --prefix wasm` does)")
    failures: list[str] = []
    while len(failures) < 2:
        finished = subprocess.run(
            [node, str(SNAPSHOT_SCRIPT), *arguments],
            capture_output=True,
            text=True,
            check=False,
            timeout=SNAPSHOT_TIMEOUT_S,
        )
        if finished.returncode == 0:
            return finished.stdout
        failures.append(node_failure(finished))
        if len(failures) == 1:
            print(
                f"{SNAPSHOT_SCRIPT.name} {arguments[0]} failed; trying once more:\n{failures[0]}",
                file=sys.stderr,
            )
    raise RuntimeError(f"{SNAPSHOT_SCRIPT.name} {arguments[0]} failed twice:\n{failures[-1]}")


def node_failure(finished: subprocess.CompletedProcess[str], lines: int = 40) -> str:
    """What a failed Node run printed, its exit status first, without the source lines Node echoes for an
    uncaught error (Pyodide's are a megabyte of minified code on one line), ending with the error itself."""
    printed = [line for line in (finished.stdout + finished.stderr).splitlines() if len(line) <= 1_000]
    return f"exit status {finished.returncode}\n" + "\n".join(printed[-lines:])


def python_runtime(wheel: bytes) -> tuple[bytes, bytes]:
    """The standard library the site ships, compiled, and Pyodide's memory after booting with it and
    importing the core from `wheel` (the bytes the site ships), all made with Node
    (wasm/node/python_snapshot.mjs): a visitor's search worker restores the snapshot instead of booting
    Python, or boots with the compiled library where the snapshot would take too long to come. The same
    wheel gives the same bytes (the wheel's bytes pass through Python's memory), so a later build in the
    same process (the test suite, a script that builds several sites) with the same wheel, script and Pyodide reuses them."""
    return made_python_runtime(
        wheel, files_fingerprint(SNAPSHOT_SCRIPT, *(PYODIDE_PACKAGE / name for name in RUNTIME_INPUTS))
    )


def files_fingerprint(*paths: Path) -> str:
    """A hash of the files' names and bytes: what a memoised step read besides its arguments."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(f"{path}\0{path.stat().st_size}\0".encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


@functools.lru_cache(maxsize=1)
def made_python_runtime(wheel: bytes, fingerprint: str) -> tuple[bytes, bytes]:
    """python_runtime's work; `fingerprint` (of the script and Pyodide's files) is only the memo's key."""
    with tempfile.TemporaryDirectory(prefix="readingroom-snapshot-") as scratch:
        wheel_path, imports, trimmed_path, stdlib_path, snapshot = (
            Path(scratch) / name
            for name in ("core.whl", "imports.json", "trimmed.zip", "stdlib.zip", "python.snapshot")
        )
        wheel_path.write_bytes(wheel)
        run_snapshot_script("imports", str(wheel_path), str(imports))
        trimmed = trimmed_stdlib((PYODIDE_PACKAGE / STDLIB).read_bytes(), json.loads(imports.read_text()))
        trimmed_path.write_bytes(trimmed)
        run_snapshot_script("compile", str(trimmed_path), str(imports), str(stdlib_path))
        run_snapshot_script("snapshot", str(wheel_path), str(stdlib_path), str(snapshot))
        return stdlib_path.read_bytes(), snapshot.read_bytes()


def trimmed_stdlib(full: bytes, imported: list[str]) -> bytes:
    """Pyodide's standard library (a zip) cut to what Python's boot and the core's import read (`imported`,
    paths in the zip), kept whole for each package they import from but `encodings` (of which a few common
    codecs are kept); frozen modules, such as os, are not read from it. Nothing else imports from it
    later: the core imports nothing lazily (tests/builder/test_render.py holds it to that), and a visitor runs no
    other Python.

    Then what is imported is compiled (python_snapshot.mjs `compile`): a little more to download than the
    sources, for a boot that compiles nothing and a smaller snapshot, so that on a slow line, where Python
    boots, it starts and shows the first results sooner (commits 6036093 and 75ec6fe measured both)."""
    packages = {path.split("/")[0] for path in imported if "/" in path} - {"encodings"}
    codecs = {f"encodings/{name}.py" for name in KEPT_CODECS}
    keep = set(imported) | codecs
    buffer = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(full)) as source, zipfile.ZipFile(buffer, "w") as target:
        for info in source.infolist():
            top = info.filename.split("/")[0]
            if info.filename in keep or top in packages or info.filename == "encodings/":
                target.writestr(info, source.read(info))
    return buffer.getvalue()


def package_version(package_dir: Path) -> str:
    package_json = package_dir / "package.json"
    if not package_json.exists():
        raise FileNotFoundError(
            f"{package_dir} is missing; run `npm ci --prefix wasm` to install the runtime"
        )
    return json.loads(package_json.read_text(encoding="utf-8"))["version"]


# The runtime's gzipped files (the wasm, the snapshot, the standard library) are the same bytes in every
# build of one checkout: a later build in the process takes their streams from here (seconds each).
runtime_gzip = functools.lru_cache(maxsize=8)(smallest_gzip)


def copy_runtime(out_dir: Path) -> RuntimeSection:
    """Copy our JS/CSS, the core wheel and its snapshot, ORT Web and Pyodide; name them by role."""
    runtime: dict[str, str] = {}
    artifacts: list[Artifact] = []

    def add(role: str, artifact: Artifact) -> None:
        runtime[role] = artifact.path
        artifacts.append(artifact)

    for role, name in OWN_RUNTIME.items():
        add(role, copy_hashed(out_dir, RUNTIME_SOURCES / name))
    for role, name in ORT_FILES.items():
        artifact = copy_hashed(out_dir, ORT_PACKAGE / "dist" / name)
        add(role, artifact)
        if role in ORT_FETCHED:
            artifacts.extend(stored_gzipped(out_dir, artifact, runtime_gzip)[1:])
    stem, wheel_bytes = core_wheel(files_fingerprint(*core_sources()))
    add("wheel", write_hashed(out_dir, "runtime", stem, ".whl", wheel_bytes))
    stdlib, snapshot_bytes = python_runtime(wheel_bytes)
    snapshot = write_hashed(out_dir, "runtime", "python-snapshot", ".bin", snapshot_bytes)
    add("python_snapshot", snapshot)
    artifacts.extend(stored_gzipped(out_dir, snapshot, runtime_gzip)[1:])
    engine = {name: (RUNTIME_SOURCES / name).read_bytes() for name in ENGINE_MODULES}
    engine_folder, engine_artifacts = write_module_folder(out_dir, "engine", engine)
    runtime["worker"], runtime["encoder"] = f"{engine_folder}/worker.js", f"{engine_folder}/encoder.js"
    artifacts.extend(engine_artifacts)
    page_folder, page_artifacts = copy_page_modules(out_dir)
    runtime["app"] = f"{page_folder}/app.js"
    runtime["corpus_js"], runtime["paper_js"] = f"{page_folder}/corpus.js", f"{page_folder}/paper.js"
    artifacts.extend(page_artifacts)
    version = package_version(PYODIDE_PACKAGE)
    pyodide = {name: (PYODIDE_PACKAGE / name).read_bytes() for name in PYODIDE_FILES} | {STDLIB: stdlib}
    folder, pyodide_artifacts = write_module_folder(out_dir, f"pyodide-{version}", pyodide)
    for artifact in pyodide_artifacts:
        fetched = artifact.path.rsplit("/", 1)[1] in PYODIDE_FETCHED
        artifacts.extend(stored_gzipped(out_dir, artifact, runtime_gzip) if fetched else [artifact])
    runtime["pyodide"] = folder + "/"
    versions = {
        "pyodide": version,
        "onnxruntime-web": package_version(ORT_PACKAGE),
        "markdown-it": package_version(MARKDOWN_IT_PACKAGE),
    }
    return RuntimeSection(runtime, versions, tuple(artifacts))


def copy_page_modules(out_dir: Path) -> tuple[str, list[Artifact]]:
    """`runtime/page-<hash12>/`: the search page's modules and markdown-it (its source-map comment
    dropped: the map is not shipped)."""
    package_version(MARKDOWN_IT_PACKAGE)  # a clear error when npm ci has not run
    files = {name: (RUNTIME_SOURCES / name).read_bytes() for name in PAGE_MODULES}
    markdown_it = (MARKDOWN_IT_PACKAGE / MARKDOWN_IT_FILE).read_bytes()
    files["markdown-it.mjs"] = SOURCE_MAP_COMMENT.sub(b"\n", markdown_it)
    return write_module_folder(out_dir, "page", files)


def write_module_folder(out_dir: Path, stem: str, files: dict[str, bytes]) -> tuple[str, list[Artifact]]:
    """`runtime/<stem>-<hash12>/` holding `files` (name -> bytes), the hash over all of them: modules
    that import one another by name keep their names, and a change to any one renames the folder."""
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + hashlib.sha256(files[name]).digest())
    folder = f"runtime/{stem}-{digest.hexdigest()[:12]}"
    return folder, [write_plain(out_dir, f"{folder}/{name}", data) for name, data in sorted(files.items())]


def core_sources() -> list[Path]:
    """What the core wheel is built from (build_core_wheel copies these)."""
    package = sorted(
        path for path in (WASM_DIR / "readingroom_core").rglob("*.py") if "__pycache__" not in path.parts
    )
    return [WASM_DIR / "pyproject.toml", *package]


@functools.lru_cache(maxsize=1)
def core_wheel(fingerprint: str) -> tuple[str, bytes]:
    """The core wheel's name stem and reproducible bytes; `fingerprint` (of core_sources) is the memo's key."""
    with tempfile.TemporaryDirectory(prefix="readingroom-wheel-") as scratch:
        wheel = build_core_wheel(Path(scratch))
        return wheel.name.removesuffix(".whl"), reproducible_zip(wheel)


def reproducible_zip(path: Path) -> bytes:
    """The archive with every entry's timestamp fixed, so the same sources give the same hashed name."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(buffer, "w") as target:
        for info in source.infolist():
            fixed = zipfile.ZipInfo(info.filename, date_time=ZIP_EPOCH)
            fixed.external_attr = info.external_attr
            fixed.compress_type = zipfile.ZIP_DEFLATED
            target.writestr(fixed, source.read(info))
    return buffer.getvalue()


def copy_hashed(out_dir: Path, source: Path) -> Artifact:
    """`runtime/<stem>.<hash12><suffix>`; for `ort.wasm.min.mjs` the stem is `ort.wasm.min`."""
    stem, _, suffix = source.name.rpartition(".")
    return write_hashed(out_dir, "runtime", stem, "." + suffix, source.read_bytes())
