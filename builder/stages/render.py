"""Render the site's HTML pages and copy the browser runtime next to the data files.

The build hands render what it holds in memory (manifest, paper records, int8 vector rows);
`render_site` reads the same from an already-written site, so a site can be re-rendered without
re-embedding. Pages are jinja2 templates with autoescape on: titles, abstracts and
notes come from arXiv and the reading list and are treated as untrusted. Every internal link starts
with the site's `base_url`, so a site built for "/my-list/" works under that prefix (GitHub Pages).

Runtime files are content-hashed (`app.<hash>.js`), except Pyodide, which loads its own files by their
original names from one folder and so lives in a versioned folder `runtime/pyodide-<version>/`, and ES
modules that import one another by name, which share a folder named by the hash of them all
(`runtime/engine-<hash>/`, `runtime/ask-<hash>/`). The Python snapshot the search worker restores instead of
booting Python (runtime.python_snapshot) is made here from the same wheel bytes. The wasm files and the
snapshot, which the workers fetch themselves, get a gzip copy (store.with_gzip).
The manifest gets a `runtime` section naming them by role, with its own `artifacts` list (path, size,
sha256 of every copied file), apart from the data files' `artifacts`.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import shutil
import tempfile
import zipfile
from dataclasses import asdict
from pathlib import Path

import jinja2
import numpy as np

from builder.models import Settings
from builder.paths import REPO_ROOT
from builder.stages import manifest as manifest_io
from builder.stages.report import BuildReport
from builder.stages.runtime import PYODIDE_PACKAGE, WASM_DIR, build_core_wheel, python_snapshot
from builder.stages.store import GZIP_SUFFIX, Artifact, safe_stem, with_gzip, write_hashed
from readingroom_core.hnsw import UsearchFile
from readingroom_core.sitedata import MANIFEST_FILE, read_papers

TEMPLATES_DIR = REPO_ROOT / "site_templates"
RUNTIME_SOURCES = WASM_DIR / "runtime"
ORT_PACKAGE = WASM_DIR / "node_modules" / "onnxruntime-web"
PYODIDE_FILES = (
    "pyodide.mjs",
    "pyodide.asm.mjs",
    "pyodide.asm.wasm",
    "python_stdlib.zip",
    "pyodide-lock.json",
)
# Pyodide fetches these itself; the worker's fetch wrapper hands it the `.gz` copies (render writes them
# where gzip pays). The .mjs files are imported, and an import cannot be decompressed by the page.
PYODIDE_FETCHED = ("pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json")
# ORT Web's wasm-only build; numThreads 1 means the threaded glue never starts a worker of its own.
ORT_FILES = {
    "ort": "ort.wasm.min.mjs",
    "ort_glue": "ort-wasm-simd-threaded.mjs",
    "ort_wasm": "ort-wasm-simd-threaded.wasm",
}
ORT_FETCHED = ("ort_wasm",)  # handed to ORT as ort.env.wasm.wasmBinary, so it may come as .gz
OWN_RUNTIME = {"corpus_js": "corpus.js", "css": "style.css"}
# The engine's two workers share download.js, which they import by name, as the search worker imports its
# own parts: one folder named by the hash of them all (as the page's modules below).
ENGINE_MODULES = ("worker.js", "python_start.js", "embedding.js", "encoder.js", "download.js")
# The search page's ES modules (search and Ask mode) import one another by name, so they share one folder
# named by the hash of them all, together with markdown-it's self-contained browser build (answer.js
# imports it as ./markdown-it.mjs). protocol.js holds types only and is not shipped.
PAGE_MODULES = (
    "app.js",
    "search_client.js",
    "router.js",
    "results_view.js",
    "dom.js",
    "citation.js",
    "ask.js",
    "ask_turn.js",
    "answer.js",
    "providers.js",
    "settings.js",
)
MARKDOWN_IT_PACKAGE = WASM_DIR / "node_modules" / "markdown-it"
MARKDOWN_IT_FILE = "dist/browser/markdown-it.esm.min.mjs"
SOURCE_MAP_COMMENT = re.compile(rb"\n//# sourceMappingURL=\S+\s*$")
RENDERED_DIRS = ("runtime", "papers", "corpus", "about")
RELATED_COUNT = 5
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip entry can hold


def render_site(out_dir: Path, manifest: dict, settings: Settings, report: BuildReport) -> list[Artifact]:
    """Re-render an already-written site from its files and save its manifest with the new runtime."""
    out_dir = Path(out_dir)
    files = manifest["files"]
    papers = read_papers((out_dir / files["papers"]).read_bytes(), files["papers"])
    artifacts = render_pages(
        out_dir, manifest, settings, report, papers, stored_rows(out_dir / files["vectors"])
    )
    manifest_io.write_manifest(out_dir, manifest)
    return artifacts


def render_pages(
    out_dir: Path,
    manifest: dict,
    settings: Settings,
    report: BuildReport,
    papers: list[dict],
    rows: np.ndarray,
) -> list[Artifact]:
    """Write index, paper, corpus and about pages plus the runtime; add the runtime to `manifest` (the
    caller saves it); return the runtime artifacts. `rows`: the int8 vector rows, by doc id."""
    out_dir = Path(out_dir)
    for name in RENDERED_DIRS:  # hashed names change build to build; these folders are ours alone
        shutil.rmtree(out_dir / name, ignore_errors=True)
    runtime, artifacts = copy_runtime(out_dir)
    runtime["artifacts"] = [asdict(a) for a in sorted(artifacts, key=lambda a: a.path)]
    manifest["runtime"] = runtime
    pages = SitePages(out_dir, manifest, settings, report, papers)
    pages.write_all(related_papers(rows, papers))
    return artifacts


def stored_rows(vectors_path: Path) -> np.ndarray:
    """The int8 rows of a written vector file, by key (doc id), as `readingroom_core.hnsw` reads them."""
    index = UsearchFile.from_bytes(vectors_path.read_bytes())  # checks the format, knows the layout
    rows = np.frombuffer(index.int8_rows(), dtype=np.int8).reshape(index.size, index.dimensions)
    by_key = np.empty_like(rows)
    by_key[np.array(index.keys, dtype=np.int64)] = rows  # keys are doc ids
    return by_key


# --- runtime -----------------------------------------------------------------------------------------


def package_version(package_dir: Path) -> str:
    package_json = package_dir / "package.json"
    if not package_json.exists():
        raise FileNotFoundError(
            f"{package_dir} is missing; run `npm ci --prefix wasm` to install the runtime"
        )
    return json.loads(package_json.read_text(encoding="utf-8"))["version"]


def copy_runtime(out_dir: Path) -> tuple[dict, list[Artifact]]:
    """Copy our JS/CSS, the core wheel, ORT Web and Pyodide; return (roles -> paths, artifacts)."""
    runtime: dict = {}
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
            artifacts.extend(with_gzip(out_dir, artifact)[1:])
    with tempfile.TemporaryDirectory(prefix="readingroom-wheel-") as scratch:
        wheel = build_core_wheel(Path(scratch))
        stem = wheel.name.removesuffix(".whl")
        wheel_bytes = reproducible_zip(wheel)
        add("wheel", write_hashed(out_dir, "runtime", stem, ".whl", wheel_bytes))
        snapshot = write_hashed(out_dir, "runtime", "python-snapshot", ".bin", python_snapshot(wheel_bytes))
        add("python_snapshot", snapshot)
        artifacts.extend(with_gzip(out_dir, snapshot)[1:])
    engine = {name: (RUNTIME_SOURCES / name).read_bytes() for name in ENGINE_MODULES}
    engine_folder, engine_artifacts = write_module_folder(out_dir, "engine", engine)
    runtime["worker"], runtime["encoder"] = f"{engine_folder}/worker.js", f"{engine_folder}/encoder.js"
    artifacts.extend(engine_artifacts)
    page_folder, page_artifacts = copy_page_modules(out_dir)
    runtime["app"] = f"{page_folder}/app.js"
    artifacts.extend(page_artifacts)
    version = package_version(PYODIDE_PACKAGE)
    folder = f"runtime/pyodide-{version}"
    for name in PYODIDE_FILES:
        artifact = write_plain(out_dir, f"{folder}/{name}", (PYODIDE_PACKAGE / name).read_bytes())
        artifacts.extend(with_gzip(out_dir, artifact) if name in PYODIDE_FETCHED else [artifact])
    runtime["pyodide"] = folder + "/"
    runtime["versions"] = {
        "pyodide": version,
        "onnxruntime-web": package_version(ORT_PACKAGE),
        "markdown-it": package_version(MARKDOWN_IT_PACKAGE),
    }
    return runtime, artifacts


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


def write_plain(out_dir: Path, relative: str, data: bytes) -> Artifact:
    path = out_dir / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return Artifact(relative, len(data), hashlib.sha256(data).hexdigest())


# --- related papers ----------------------------------------------------------------------------------


def related_papers(rows: np.ndarray, papers: list[dict], count: int = RELATED_COUNT) -> dict[str, list]:
    """For each paper id, the `count` papers whose mean chunk vector is closest: [(paper, cosine)].
    `rows`: the int8 vector rows by doc id (what the site's search scores against)."""
    if len(papers) < 2:
        return {paper["id"]: [] for paper in papers}
    units = np.asarray(rows).astype(np.float32)
    units /= np.maximum(np.linalg.norm(units, axis=1, keepdims=True), 1e-12)
    means = np.stack([units[first : first + n].mean(axis=0) for first, n in (p["chunks"] for p in papers)])
    means /= np.maximum(np.linalg.norm(means, axis=1, keepdims=True), 1e-12)
    similarity = means @ means.T
    np.fill_diagonal(similarity, -np.inf)
    related = {}
    for row, paper in enumerate(papers):
        order = np.argsort(-similarity[row], kind="stable")[: min(count, len(papers) - 1)]
        related[paper["id"]] = [(papers[i], float(similarity[row, i])) for i in order]
    return related


# --- pages -------------------------------------------------------------------------------------------


def make_environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES_DIR),
        autoescape=True,  # every template: paper metadata is untrusted
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def paper_dir(arxiv_id: str) -> str:
    return f"papers/{safe_stem(arxiv_id)}/"


def facets(papers: list[dict]) -> dict[str, list]:
    years = sorted({p["year"] for p in papers if p.get("year")})
    return {
        "years": years,
        "categories": sorted({c for p in papers for c in p.get("categories", ())}),
        "tags": sorted({t for p in papers for t in p.get("tags", ())}),
    }


def script_json(data) -> str:
    """JSON safe inside <script type="application/json">: no '</script>' or '<!--' can be formed."""
    return json.dumps(data, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e")


class SitePages:
    """The site's HTML pages (search, corpus, about, one per paper), rendered with one shared context."""

    def __init__(self, out_dir: Path, manifest: dict, settings: Settings, report: BuildReport, papers):
        self.out_dir = out_dir
        self.manifest = manifest
        self.papers = papers
        self.env = make_environment()
        base = manifest["base_url"]
        runtime = manifest["runtime"]
        self.common = {
            "base": base,
            "site_title": manifest["title"],
            "description": settings.description,
            "css": base + runtime["css"],
            "scripts": {"app": base + runtime["app"], "corpus": base + runtime["corpus_js"]},
            "manifest": manifest,
            "report": report,
            "facets": facets(papers),
            "paper_dir": paper_dir,
        }

    def write_all(self, related: dict[str, list]) -> None:
        self.write("index.html", "index.html", page="search", app_config=script_json(self.app_config()))
        newest_first = sorted(
            self.papers, key=lambda p: p.get("first_version") or p.get("published") or "", reverse=True
        )
        self.write("corpus/index.html", "corpus.html", page="corpus", papers=newest_first)
        self.write("about/index.html", "about.html", page="about")
        # Static hosts (GitHub Pages, Netlify, nginx's error_page) serve this for any missing path; its
        # links are absolute (under base_url) so they work from whatever address was mistyped.
        self.write("404.html", "404.html", page="not-found")
        for paper in self.papers:
            self.write(
                paper_dir(paper["id"]) + "index.html",
                "paper.html",
                page="paper",
                paper=paper,
                related=related.get(paper["id"], []),
            )

    def app_config(self) -> dict:
        """What the search page's script needs: every URL under base_url, and the paper index for display."""
        base, runtime = self.manifest["base_url"], self.manifest["runtime"]
        return {
            "base": base,
            "manifest": base + MANIFEST_FILE,
            "worker": base + runtime["worker"],
            "encoder": base + runtime["encoder"],
            "wheel": base + runtime["wheel"],
            "python_snapshot": base + runtime["python_snapshot"],
            "pyodide": base + runtime["pyodide"],
            "ort": base + runtime["ort"],
            "ort_wasm": {"mjs": base + runtime["ort_glue"], "wasm": base + runtime["ort_wasm"]},
            # Runtime files the worker fetches as `<url>.gz` and decompresses (store.with_gzip).
            "gzipped": [
                base + a["path"].removesuffix(GZIP_SUFFIX)
                for a in runtime["artifacts"]
                if a["path"].endswith(GZIP_SUFFIX)
            ],
        }

    def write(self, relative: str, template: str, **context) -> None:
        html = self.env.get_template(template).render(**self.common, **context)
        path = self.out_dir / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(html, encoding="utf-8")
