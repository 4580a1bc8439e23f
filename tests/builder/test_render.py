"""The rendered pages and the copied runtime: escaping, base_url links, manifest entries, the local server."""

import ast
import gzip
import hashlib
import io
import json
import re
import shutil
import subprocess
import urllib.error
import urllib.request
import zipfile
from dataclasses import replace
from email.message import Message
from html.parser import HTMLParser
from pathlib import Path

import pytest
from support.pyodide import missing_runtime

from builder.commands.serve import serve_in_thread
from builder.models import Settings
from builder.report import BuildReport
from builder.site.manifest import read_manifest
from builder.site.pages import render_site
from builder.site.runtime import (
    PYODIDE_PACKAGE,
    SNAPSHOT_SCRIPT,
    WASM_DIR,
    made_python_runtime,
    node_failure,
    python_runtime,
    run_snapshot_script,
)
from builder.site.store import GZIP_MIN_SAVING
from readingroom_core.formats.manifest import Artifact
from readingroom_core.ranges import folder_reader

HOSTILE_TITLE = '<script>alert("title")</script> & Co'
HOSTILE_NOTE = '<img src=x onerror="alert(1)">'
BASE = "/sub/path/"


@pytest.fixture(scope="module")
def hostile_site(built_sites, tmp_path_factory) -> Path:
    """The second test site re-rendered under a sub-path, with markup in a title, author and note."""
    if missing_runtime():
        pytest.skip(missing_runtime())
    site = tmp_path_factory.mktemp("render") / "site"
    shutil.copytree(built_sites.second, site)
    manifest = read_manifest(site)
    data = json.loads(folder_reader(site)(manifest.files.papers))
    first = data["papers"][0]
    first.update(title=HOSTILE_TITLE, note=HOSTILE_NOTE, authors=["</p><b>Mallory</b>", *first["authors"]])
    plain = json.dumps(data).encode("utf-8")
    packed = gzip.compress(plain, mtime=0)  # the papers file is stored only gzipped, as the build stores it
    (site / (manifest.files.papers + ".gz")).write_bytes(packed)
    rewritten = {manifest.files.papers: plain, manifest.files.papers + ".gz": packed}
    artifacts = tuple(  # as a build would list them (render_site saves the manifest)
        Artifact(a.path, len(rewritten[a.path]), hashlib.sha256(rewritten[a.path]).hexdigest())
        if a.path in rewritten
        else a
        for a in manifest.artifacts
    )
    manifest = replace(manifest, base_url=BASE, artifacts=artifacts)
    render_site(site, manifest, Settings(title="t", base_url=BASE, description="<i>d</i>"), BuildReport())
    return site


class LinkCollector(HTMLParser):
    """Every href/src in a page, and the text of <script> elements."""

    def __init__(self):
        super().__init__()
        self.links: list[str] = []
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self._in_script = tag == "script"
        self.links += [value for name, value in attrs if name in ("href", "src") and value is not None]

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script and data.strip():
            self.scripts.append(data)


def collect(path: Path) -> LinkCollector:
    parser = LinkCollector()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def html_pages(site: Path) -> list[Path]:
    return sorted(site.rglob("*.html"))


def test_build_renders_every_page(built_sites):
    site = built_sites.second
    manifest = read_manifest(site)
    for page in ("index.html", "corpus/index.html", "about/index.html"):
        assert (site / page).is_file(), page
    for paper in ("1904.08375", "2412.19048", "2305.13245", "1410.3831"):
        html = (site / "papers" / paper / "index.html").read_text(encoding="utf-8")
        assert f"https://arxiv.org/abs/{paper}" in html
        assert f"https://arxiv.org/pdf/{paper}" in html
    assert manifest.counts.papers == 4


def test_untrusted_text_is_escaped(hostile_site):
    html = (hostile_site / "papers" / "1904.08375" / "index.html").read_text(encoding="utf-8")
    assert "&lt;script&gt;alert(&#34;title&#34;)&lt;/script&gt; &amp; Co" in html
    assert "<script>alert" not in html
    assert "&lt;img src=x onerror=" in html and "<img" not in html
    assert "&lt;/p&gt;&lt;b&gt;Mallory&lt;/b&gt;" in html
    # The one inline script is the citation data: JSON that holds the title as text and cannot end its element.
    (data,) = collect(hostile_site / "papers" / "1904.08375" / "index.html").scripts
    assert json.loads(data)["title"].startswith('<script>alert("title")</script> & Co') and "<" not in data
    corpus = (hostile_site / "corpus" / "index.html").read_text(encoding="utf-8")
    assert "<script>alert" not in corpus and "&lt;script&gt;alert" in corpus
    assert "<i>d</i>" not in (hostile_site / "about" / "index.html").read_text(encoding="utf-8")


def test_internal_links_start_with_base_url(hostile_site):
    for page in html_pages(hostile_site):
        for link in collect(page).links:
            if link.startswith(("https://arxiv.org/", "data:", "#")):  # external, inline, in-page
                continue
            assert link.startswith(BASE), f"{page.relative_to(hostile_site)}: {link}"
            target = hostile_site / link[len(BASE) :].split("?")[0].split("#")[0]
            assert target.exists(), f"{page.relative_to(hostile_site)} links to missing {link}"


def test_search_page_config_names_files_under_base_url(hostile_site):
    (config,) = collect(hostile_site / "index.html").scripts
    urls = json.loads(config)
    flat = [value for value in urls.values() if isinstance(value, str)] + list(urls["ort_wasm"].values())
    gzipped = set(urls["gzipped"])  # fetched as `<url>.gz`
    assert urls["python_snapshot"] in gzipped and urls["ort_wasm"]["wasm"] in gzipped
    for url in flat:
        assert url.startswith(BASE), url
        stored = url[len(BASE) :] + (".gz" if url in gzipped else "")
        assert (hostile_site / stored).exists(), url


def test_runtime_files_are_in_the_manifest(hostile_site):
    manifest = read_manifest(hostile_site)
    artifacts = {a.path: a for a in manifest.runtime.artifacts}
    runtime_files = [p for p in (hostile_site / "runtime").rglob("*") if p.is_file()]
    assert len(runtime_files) >= 13
    read = folder_reader(hostile_site)
    for path in runtime_files:
        relative = path.relative_to(hostile_site).as_posix()
        assert relative in artifacts, relative
        data = path.read_bytes()
        assert artifacts[relative].bytes == len(data)
        assert artifacts[relative].sha256 == hashlib.sha256(data).hexdigest()
        if relative.endswith(".gz"):  # stored only gzipped: its own entry is what the .gz unpacks to
            plain = artifacts[relative.removesuffix(".gz")]
            assert not (hostile_site / plain.path).exists(), plain.path
            assert plain.sha256 == hashlib.sha256(read(plain.path)).hexdigest()
    runtime = manifest.runtime.files
    for role in ("app", "worker", "css", "wheel", "python_snapshot", "ort", "ort_glue", "ort_wasm"):
        assert runtime[role] in artifacts, role
    for name in ("pyodide.mjs", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json"):
        assert runtime["pyodide"] + name in artifacts


def test_the_standard_library_shipped_is_what_python_imports_in_a_folder_named_by_its_contents(hostile_site):
    folder = read_manifest(hostile_site).runtime.files["pyodide"]
    assert re.fullmatch(r"runtime/pyodide-[0-9.]+-[0-9a-f]{12}/", folder)  # served as immutable
    shipped = zipfile.ZipFile(io.BytesIO(folder_reader(hostile_site)(folder + "python_stdlib.zip")))
    names = set(shipped.namelist())
    full = zipfile.ZipFile(PYODIDE_PACKAGE / "python_stdlib.zip").namelist()
    # what the core imports and what Pyodide's boot imports (compiled), and common codecs
    assert {"json/decoder.pyc", "dataclasses.pyc", "asyncio/tasks.pyc", "encodings/latin_1.py"} <= names
    assert not {"unittest/__init__.py", "xml/__init__.py", "encodings/cp1250.py", "statistics.py"} & names
    assert len(names) < len(full) / 2


def test_what_python_imports_from_the_standard_library_is_bytecode(hostile_site, tmp_path):
    """Every module Python's boot and the core's import read is a sourceless .pyc, hash-based and
    unchecked (PEP 552: flags 1), stored for the site's gzip; a boot compiles none of them."""
    runtime, read = read_manifest(hostile_site).runtime.files, folder_reader(hostile_site)
    stdlib, wheel, listed = tmp_path / "python_stdlib.zip", tmp_path / "core.whl", tmp_path / "imports.json"
    stdlib.write_bytes(read(runtime["pyodide"] + "python_stdlib.zip"))
    wheel.write_bytes(read(runtime["wheel"]))
    run_snapshot_script("imports", str(wheel), str(listed), str(stdlib))  # a boot from the site's library
    imported = json.loads(listed.read_text())
    assert len(imported) > 100 and not [path for path in imported if not path.endswith(".pyc")]
    shipped = zipfile.ZipFile(stdlib)
    compiled = [entry for entry in shipped.infolist() if entry.filename.endswith(".pyc")]
    assert len(compiled) > 100
    for entry in compiled:
        assert entry.filename.removesuffix("c") not in shipped.namelist(), entry.filename
        assert entry.compress_type == zipfile.ZIP_STORED, entry.filename
        assert int.from_bytes(shipped.read(entry)[4:8], "little") == 1, entry.filename


def test_the_python_snapshot_carries_no_stale_free_memory(hostile_site, tmp_path):
    """The build zeroes malloc's free memory before it takes the snapshot (python_snapshot.mjs), whose
    stale bytes cost visitors 0.22 MB gzipped. Restored, the free memory is zero but for what the restore
    itself frees: 2% of its bytes (39% in a snapshot taken without zeroing)."""
    runtime = read_manifest(hostile_site).runtime.files
    snapshot = tmp_path / "python.snapshot"
    snapshot.write_bytes(gzip.decompress((hostile_site / (runtime["python_snapshot"] + ".gz")).read_bytes()))
    stdlib = tmp_path / "python_stdlib.zip"
    stdlib.write_bytes(folder_reader(hostile_site)(runtime["pyodide"] + "python_stdlib.zip"))
    memory = json.loads(run_snapshot_script("stale", str(snapshot), str(stdlib)))
    assert memory["free"] > 256 * 1024  # the probe found malloc's free memory
    assert memory["stale"] < 0.1 * memory["free"]


def test_the_python_snapshot_is_the_same_wherever_the_checkout_lives(hostile_site, tmp_path):
    """Emscripten keeps the program's path in Python's memory; the snapshot script names itself by a fixed
    name instead, so a fork built at another path ships the same snapshot under the same hashed name."""
    runtime = read_manifest(hostile_site).runtime.files
    read = folder_reader(hostile_site)
    wheel, stdlib = tmp_path / "core.whl", tmp_path / "python_stdlib.zip"
    wheel.write_bytes(read(runtime["wheel"]))
    stdlib.write_bytes(read(runtime["pyodide"] + "python_stdlib.zip"))
    elsewhere = tmp_path / "a" / "checkout" / "at" / "another" / "path"
    elsewhere.mkdir(parents=True)
    (elsewhere / "wasm").symlink_to(WASM_DIR, target_is_directory=True)
    snapshots = []
    for script in (SNAPSHOT_SCRIPT, elsewhere / "wasm" / "node" / SNAPSHOT_SCRIPT.name):
        out = tmp_path / f"python-{len(snapshots)}.snapshot"
        subprocess.run(
            ["node", str(script), "snapshot", str(wheel), str(stdlib), str(out)], check=True, timeout=300
        )
        snapshots.append(out.read_bytes())
    assert len(snapshots[0]) > 1_000_000
    assert snapshots[0] == snapshots[1]


def test_a_later_build_in_the_same_process_reuses_the_python_runtime(hostile_site):
    """The snapshot is a function of the wheel, the script and Pyodide's files: a second build in one
    process (as every test build after the first is) takes it from the memo, the very bytes a build made."""
    runtime = read_manifest(hostile_site).runtime.files
    read = folder_reader(hostile_site)
    before = made_python_runtime.cache_info()
    stdlib, snapshot = python_runtime(read(runtime["wheel"]))
    assert made_python_runtime.cache_info().hits == before.hits + 1
    assert snapshot == read(runtime["python_snapshot"])
    assert stdlib == read(runtime["pyodide"] + "python_stdlib.zip")


def test_a_node_failure_reads_as_its_error_not_as_the_source_line_node_echoes():
    """Node echoes the source line of an uncaught error, for Pyodide a megabyte of minified code, before
    the error: what the build raises keeps the error and drops the echo."""
    minified = "const filler = " + "1+" * 2_000 + "1; throw new Error('the snapshot ran out of memory');"
    finished = subprocess.run(["node", "-e", minified], capture_output=True, text=True, check=False)
    assert finished.returncode != 0 and len(finished.stderr) > 4_000
    reported = node_failure(finished)
    assert reported.startswith(f"exit status {finished.returncode}\n")
    assert "Error: the snapshot ran out of memory" in reported
    assert "1+1+1+" not in reported and len(reported) < 3_000


def test_the_core_imports_nothing_lazily():
    """The shipped standard library holds what importing the core reads: an import inside a function
    would find its module missing in the browser."""
    for path in sorted((WASM_DIR / "readingroom_core").glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        at_top = set(map(id, tree.body))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                assert id(node) in at_top, f"{path.name}:{node.lineno} imports inside a block"


def test_large_files_are_stored_only_gzipped_and_the_page_is_told_of_them(hostile_site):
    manifest = read_manifest(hostile_site)
    runtime = manifest.runtime.files
    listed = {a.path: a for a in manifest.artifacts + manifest.runtime.artifacts}
    copies = {path.removesuffix(".gz") for path in listed if path.endswith(".gz")}
    pyodide = runtime["pyodide"]
    fetched_by_workers = ("pyodide.asm.wasm", "pyodide-lock.json", "python_stdlib.zip")
    for plain in (
        *(pyodide + name for name in fetched_by_workers),
        runtime["python_snapshot"],
        runtime["ort_wasm"],
    ):
        assert plain in copies, plain
    files = manifest.files
    assert {files.papers, files.paper_table, files.postings, files.vocab, files.encoder} <= copies
    assert files.texts in listed and files.texts not in copies  # read by range: stored as it is
    for plain in copies:
        packed = (hostile_site / (plain + ".gz")).read_bytes()
        assert not (hostile_site / plain).exists(), plain  # nothing fetches it: the .gz is all there is
        assert hashlib.sha256(gzip.decompress(packed)).hexdigest() == listed[plain].sha256, plain
        assert len(packed) <= (1 - GZIP_MIN_SAVING) * listed[plain].bytes, plain
        assert listed[plain + ".gz"].sha256 == hashlib.sha256(packed).hexdigest()
    (config,) = collect(hostile_site / "index.html").scripts
    gzipped = json.loads(config)["gzipped"]
    assert sorted(gzipped) == sorted(BASE + path for path in copies if path.startswith("runtime/"))


def test_related_papers_exclude_the_paper_itself(hostile_site):
    for page in (hostile_site / "papers").glob("*/index.html"):
        links = [link for link in collect(page).links if link.startswith(BASE + "papers/")]
        assert len(links) == 3, page  # the three other papers
        assert f"{BASE}papers/{page.parent.name}/" not in links


def fetch(url: str) -> tuple[int, Message, bytes]:
    opener = urllib.request.build_opener(NoRedirect)
    try:
        with opener.open(url) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def test_server_mounts_the_site_at_base_url_with_mime_types(hostile_site):
    server, url = serve_in_thread(hostile_site)
    try:
        assert url.endswith(BASE)
        root = url[: -len(BASE)]
        manifest = read_manifest(hostile_site)
        runtime = manifest.runtime.files
        expected = {
            runtime["ort"]: "text/javascript",
            runtime["pyodide"] + "pyodide.mjs": "text/javascript",
            runtime["wheel"]: "application/zip",
            manifest.files.graph: "application/json",
            "": "text/html; charset=utf-8",
        }
        for path, mime in expected.items():
            status, headers, _ = fetch(url + path)
            assert (status, headers["Content-Type"]) == (200, mime), path
        assert fetch(url + runtime["app"])[1]["Cache-Control"].endswith("immutable")
        assert fetch(url + "manifest.json")[1]["Cache-Control"] == "no-cache"
        for path in (
            manifest.files.postings + ".gz",
            runtime["ort_wasm"] + ".gz",
            manifest.files.encoder + ".gz",
        ):
            status, headers, body = fetch(url + path)  # as stored, as GitHub Pages sends a .gz file
            assert (status, headers["Content-Type"]) == (200, "application/gzip"), path
            assert headers["Content-Encoding"] is None and body == (hostile_site / path).read_bytes()
            assert headers["Cache-Control"].endswith("immutable")
        status, headers, _ = fetch(root + "/")
        assert (status, headers["Location"]) == (302, BASE)
        assert fetch(root + "/manifest.json")[0] == 404
    finally:
        server.shutdown()
        server.server_close()


def test_server_answers_folders_as_github_pages_does(hostile_site):
    server, url = serve_in_thread(hostile_site)
    opener = urllib.request.build_opener(NoRedirect)
    try:
        paper_dir = next(p for p in (hostile_site / "papers").iterdir() if (p / "index.html").exists())
        folder = url + f"papers/{paper_dir.name}"
        try:
            opener.open(folder)
            raise AssertionError("a folder named without its slash must redirect")
        except urllib.error.HTTPError as redirect:
            assert redirect.code == 301 and redirect.headers["Location"].endswith(f"{paper_dir.name}/")
        status, headers, body = fetch(folder + "/")
        assert (status, headers["Content-Type"]) == (200, "text/html; charset=utf-8")
        assert body == (paper_dir / "index.html").read_bytes()
        assert not (hostile_site / "data" / "index.html").exists()
        status, _, body = fetch(url + "data/")
        assert status == 404  # a listing of the folder would be a 200
        status, _, body = fetch(url + "no-such-page/")  # Pages answers with the site's own 404 page
        assert (status, body) == (404, (hostile_site / "404.html").read_bytes())
        assert fetch(url[: -len(BASE)] + "/other" + BASE)[0] == 404
    finally:
        server.shutdown()
        server.server_close()


def test_rendering_again_gives_the_same_runtime_files(hostile_site):
    before = read_manifest(hostile_site)
    index_before = (hostile_site / "index.html").read_bytes()
    settings = Settings(title="t", base_url=BASE, description="<i>d</i>")
    render_site(hostile_site, read_manifest(hostile_site), settings, BuildReport())
    assert read_manifest(hostile_site).runtime == before.runtime  # the core wheel too (fixed zip times)
    assert (hostile_site / "index.html").read_bytes() == index_before


def test_a_not_found_page_leads_back_to_search(hostile_site):
    """Issue 12: a mistyped address gets the site's own 404 page (static hosts serve /404.html)."""
    links = collect(hostile_site / "404.html").links
    assert BASE in links and f"{BASE}corpus/" in links


def test_corpus_page_speaks_to_readers_not_builders(hostile_site):
    corpus = (hostile_site / "corpus" / "index.html").read_text(encoding="utf-8")
    manifest = read_manifest(hostile_site)
    assert "torch" not in corpus and str(manifest.index.scale) not in corpus
    assert f"{BASE}manifest.json" in collect(hostile_site / "corpus" / "index.html").links


def test_every_select_has_a_name_of_its_own(hostile_site):
    html = (hostile_site / "index.html").read_text(encoding="utf-8")
    assert 'id="year-max" name="year_max" aria-label="To year"' in html


def test_paper_page_dates_the_first_version_apart_from_this_copy(hostile_site):
    """Issue 12, item 2: 1904.08375 appeared in April 2019, whatever revision the mirror holds."""
    html = (hostile_site / "papers" / "1904.08375" / "index.html").read_text(encoding="utf-8")
    assert '<dt>First version</dt><dd><time datetime="2019-04' in html
