"""A damaged or tampered site in Debian chromium: checked before use, keyword search goes on where it can,
and a visitor sees one line, never a Python traceback (details go to the console).

Each case copies one built site, damages it the way a broken upload or an attacker would, and serves it.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
from contextlib import ExitStack
from pathlib import Path

import pytest
from support.builds import SMALL_PAPERS
from support.chromium import TOP_CHUNK_IDS, wait_for
from support.served import build_from_cache, corpus_text, require_browser, serving

from builder.evaluation.evaluate import top_chunk_ids
from readingroom_core.options import SearchOptions
from readingroom_core.ranges import folder_reader
from readingroom_core.readers.papers import read_paper_table

pytestmark = pytest.mark.browser

LOAD_TIMEOUT_MS = 90_000
QUERY = "predicted queries appended to documents"
TAGS = (["deep learning"], ["deep", "learning"], ["it's <b>"])  # spaces and markup in tags


@pytest.fixture(scope="module")
def clean_site(built_sites, tmp_path_factory, generated_mirror) -> Path:
    require_browser()
    corpus = corpus_text(SMALL_PAPERS, "Tamper test", tags=TAGS)
    return build_from_cache(tmp_path_factory.mktemp("tamper"), corpus, built_sites.cache, generated_mirror)


def manifest_of(site: Path) -> dict:
    return json.loads((site / "manifest.json").read_text())


def rewrite(site: Path, role: str, change, update_manifest: bool) -> None:
    """Change the contents of `role`'s data file, as stored (gzipped where the build stored it so); with
    update_manifest, also their recorded sha256 (a forger's edit)."""
    manifest = manifest_of(site)
    path = site / manifest["files"][role]
    data = change(folder_reader(site)(manifest["files"][role]))
    copy = path.with_name(path.name + ".gz")
    if copy.exists():
        copy.write_bytes(gzip.compress(data, mtime=0))
    else:
        path.write_bytes(data)
    if update_manifest:
        for artifact in manifest["artifacts"]:
            if artifact["path"] == manifest["files"][role]:
                artifact["sha256"] = hashlib.sha256(data).hexdigest()
            if artifact["path"] == manifest["files"][role] + ".gz":
                artifact["sha256"] = hashlib.sha256(copy.read_bytes()).hexdigest()
        (site / "manifest.json").write_text(json.dumps(manifest))


def damage_copy(site: Path, role: str, change) -> None:
    """Change the stored bytes of `role`'s gzipped data file (a broken upload: it no longer unpacks to what
    its checksum says, or at all)."""
    damage_copy_at(site, manifest_of(site)["files"][role], change)


def damage_copy_at(site: Path, relative: str, change) -> None:
    copy = site / (relative + ".gz")
    copy.write_bytes(change(copy.read_bytes()))


def flip_middle_byte(data: bytes) -> bytes:
    block = bytearray(data)
    block[len(block) // 2] ^= 0xFF
    return bytes(block)


def reverse_middle(data: bytes) -> bytes:
    """The middle half of the file reversed: every block there changes, the length stays."""
    quarter = len(data) // 4
    return data[:quarter] + data[quarter:-quarter][::-1] + data[-quarter:]


def damage_ranged(site: Path, stem: str, change) -> None:
    """Change a file read by range (stored as it is; its blocks' checksums are in a directory)."""
    (path,) = site.glob(f"*/{stem}.*.bin")
    path.write_bytes(change(path.read_bytes()))


class Visit:
    def __init__(self, browser, url: str):
        self.context = browser.new_context()
        self.page = self.context.new_page()
        self.page.set_default_timeout(LOAD_TIMEOUT_MS)
        self.console: list[str] = []
        self.page.on("console", lambda m: m.type == "error" and self.console.append(m.text))
        self.page.on("pageerror", lambda e: self.console.append(f"pageerror: {e}"))
        self.page.goto(url)

    def settled(self) -> dict:
        """The status once start-up has ended one way or the other."""
        wait_for(
            self.page, "(() => { const s = readingRoom.status(); return s.loading === null || s.error; })()"
        )
        return self.page.evaluate("readingRoom.status()")

    def status_line(self) -> str:
        return self.page.inner_text("#status")

    def search(self, query: str) -> str:
        self.page.fill("#q", query)
        self.page.press("#q", "Enter")
        wait_for(self.page, "document.querySelector('#results').getAttribute('aria-busy') === 'false'")
        self.page.wait_for_selector("#results .message")
        return self.page.inner_text("#results")


@pytest.fixture
def visit_tampered(browser, clean_site, tmp_path):
    with ExitStack() as servers:
        visits = []

        def visit(damage) -> Visit:
            site = tmp_path / f"site{len(visits)}"
            shutil.copytree(clean_site, site)
            url = servers.enter_context(serving(site))  # serve reads base_url from the manifest: damage after
            damage(site)
            visits.append(Visit(browser, url))
            return visits[-1]

        yield visit
        for view in visits:
            view.context.close()


def assert_no_traceback(*texts: str) -> None:
    for text in texts:
        assert "Traceback" not in text and 'File "/' not in text, text


def test_the_clean_site_checks_its_files_and_reports_the_cost(visit_tampered):
    view = visit_tampered(lambda site: None)
    status = view.settled()
    assert status["semantic"] and status["semantic_error"] is None and status["error"] is None
    assert status["python_start"] == "snapshot"
    assert status["checksums_ms"] > 0
    print(
        f"sha256 of every start-up data file: {status['checksums_ms']:.1f} ms for {status['bytes']} bytes loaded"
    )
    assert "semantic" in view.search(QUERY)
    assert view.console == []


@pytest.mark.parametrize(
    ("role", "change", "update_manifest", "why"),
    [
        ("dense", flip_middle_byte, False, "does not match its checksum in manifest.json"),
        ("dense", lambda data: b'{"v": 1}', True, "format"),  # the checksum was forged: the format check
        ("encoder", lambda data: data[: len(data) // 2], False, "does not match its checksum"),
        ("word_pieces", flip_middle_byte, False, "does not match its checksum in manifest.json"),
    ],
)
def test_damaged_semantic_data_falls_back_to_keyword_search(
    visit_tampered, role, change, update_manifest, why
):
    view = visit_tampered(lambda site: rewrite(site, role, change, update_manifest))
    assert_keyword_fallback(view, why)


@pytest.mark.parametrize(
    ("role", "change"),
    [
        ("dense", flip_middle_byte),
        ("dense", lambda data: data[: len(data) // 2]),
        ("vocab", flip_middle_byte),
    ],
)
def test_a_damaged_gzip_copy_falls_back_to_keyword_search(visit_tampered, role, change):
    view = visit_tampered(lambda site: damage_copy(site, role, change))
    assert_keyword_fallback(view, "the site's data is damaged")


def assert_keyword_fallback(view, why: str) -> None:
    status = view.settled()
    assert status["keyword"] and not status["semantic"] and why in status["semantic_error"]
    line = view.status_line()
    assert line.startswith("Keyword search only: semantic search is unavailable") and "\n" not in line
    results = view.search(QUERY)
    assert "(keyword search)" in results and view.page.query_selector_all("#results .hit")
    assert view.page.evaluate(
        "q => readingRoom.search(q, {mode: 'dense'}).catch((e) => e.message)", QUERY
    ) == ("Semantic search is unavailable on this site; use keyword or hybrid mode.")
    assert_no_traceback(line, results)
    assert any(why in message for message in view.console)  # the details are in the console


@pytest.mark.parametrize("stem", ["dense-rows", "dense-lists", "word-pieces"])
def test_a_damaged_semantic_file_read_by_range_turns_the_search_keyword_only(visit_tampered, stem):
    view = visit_tampered(lambda site: damage_ranged(site, stem, reverse_middle))
    status = view.settled()
    assert status["semantic"]  # only the directories are read at start-up
    results = view.search(QUERY)
    assert "(keyword search)" in results and view.page.query_selector_all("#results .hit")
    status = view.page.evaluate("readingRoom.status()")
    assert not status["semantic"] and "do not match their checksum" in status["semantic_error"]
    assert "\n" not in status["semantic_error"]
    assert_no_traceback(results, status["semantic_error"])


def test_damaged_paper_vectors_turn_semantic_search_off_in_one_line(visit_tampered):
    """The papers' vectors come with the dense directory: damaged, semantic search never comes up, and
    searches stay keyword-only, said in one line."""
    view = visit_tampered(lambda site: rewrite(site, "paper_vectors", flip_middle_byte, False))
    view.settled()
    results = view.search(QUERY)
    assert "(keyword search)" in results and view.page.query_selector_all("#results .hit")
    status = view.page.evaluate("readingRoom.status()")
    assert not status["semantic"] and "does not match its checksum" in status["semantic_error"]
    assert "\n" not in status["semantic_error"]
    assert_no_traceback(results, status["semantic_error"])


def test_damaged_postings_read_by_range_fail_the_search_in_one_line(visit_tampered):
    view = visit_tampered(lambda site: damage_ranged(site, "postings-pages", reverse_middle))
    view.settled()
    results = view.search(QUERY)
    assert (
        "do not match their checksum; the site's data is damaged" in results and "\n" not in results.strip()
    )
    assert_no_traceback(results)


def damage_snapshot(change):
    """Change the build's Python snapshot (stored gzipped, as the browser fetches it)."""

    def damage(site: Path) -> None:
        copy = site / (manifest_of(site)["runtime"]["python_snapshot"] + ".gz")
        copy.write_bytes(gzip.compress(change(gzip.decompress(copy.read_bytes())), mtime=0))

    return damage


def snapshot_of_another_build(data: bytes) -> bytes:
    """Pyodide writes its build id after the magic number and two lengths (bytes 16-47)."""
    block = bytearray(data)
    block[16:48] = bytes(32)
    return bytes(block)


def delete_snapshot(site: Path) -> None:
    (site / (manifest_of(site)["runtime"]["python_snapshot"] + ".gz")).unlink()


@pytest.mark.parametrize(
    "damage",
    [
        delete_snapshot,
        damage_snapshot(snapshot_of_another_build),
        damage_snapshot(lambda data: bytes(4096)),
        lambda site: damage_copy_at(site, manifest_of(site)["runtime"]["python_snapshot"], flip_middle_byte),
    ],
    ids=["missing", "another-build", "not-a-snapshot", "damaged-gzip-copy"],
)
def test_a_missing_or_broken_python_snapshot_means_booting_python(visit_tampered, clean_site, damage):
    view = visit_tampered(damage)
    status = view.settled()
    assert status["python_start"] == "boot"
    assert status["keyword"] and status["semantic"] and status["error"] is None
    expected = top_chunk_ids(clean_site, [QUERY], SearchOptions(k=10))
    assert view.page.evaluate(TOP_CHUNK_IDS, [[QUERY], 10]) == expected
    assert view.console == []  # a warning says why, but the visitor's site works


@pytest.mark.parametrize(
    ("damage", "shown"),
    [
        (lambda site: rewrite(site, "postings", lambda d: d[:-200], False), "does not match its checksum"),
        (lambda site: rewrite(site, "postings", lambda d: b'{"v": 1}', True), "Error"),
        (lambda site: damage_copy(site, "postings", flip_middle_byte), "the site's data is damaged"),
        (lambda site: damage_copy(site, "postings", lambda d: d[:-100]), "the site's data is damaged"),
        (lambda site: (site / "manifest.json").unlink(), "manifest.json is missing (HTTP 404)"),
        (lambda site: (site / "manifest.json").write_text("<html>"), "manifest.json is damaged"),
    ],
)
def test_a_site_that_cannot_search_says_so_in_one_line(visit_tampered, damage, shown):
    view = visit_tampered(damage)
    status = view.settled()
    assert not status["keyword"] and status["error"]
    line = view.status_line()
    assert line.startswith("Search could not load") and shown in line and "\n" not in line
    assert_no_traceback(line)


def text_head_of(site: Path, paper_id: str) -> tuple[Path, int, int]:
    """The texts file, and where the paper's head lies in it (formats/texts.py: papers in table order)."""
    manifest = manifest_of(site)
    table = read_paper_table(folder_reader(site)(manifest["files"]["paper_table"]))
    index = next(i for i, paper in enumerate(table) if paper.id == paper_id)
    start = sum(paper.text_bytes[1] for paper in table[:index])
    return site / manifest["files"]["texts"], start, start + table[index].text_bytes[0]


@pytest.mark.parametrize("update_manifest", [False, True])
def test_a_damaged_paper_text_fails_one_search_in_one_line(visit_tampered, update_manifest):
    def damage(site: Path) -> None:
        path, start, end = text_head_of(site, SMALL_PAPERS[0])
        data = bytearray(path.read_bytes())
        data[start:end] = bytes(end - start)  # not a deflate stream
        path.write_bytes(bytes(data))

        def forge_checksum(table: bytes) -> bytes:
            rows = json.loads(table)
            row = next(row for row in rows["papers"] if row["id"] == SMALL_PAPERS[0])
            row["text_sha256"] = hashlib.sha256(bytes(end - start)).hexdigest()[:16]
            return json.dumps(rows).encode()

        if update_manifest:  # the forger also gives the paper table the damaged head's checksum
            rewrite(site, "paper_table", forge_checksum, update_manifest=True)

    view = visit_tampered(damage)
    view.settled()
    results = view.search(QUERY)
    assert "\n" not in results.strip() and results.strip()
    if update_manifest:
        assert "a paper's text could not be decompressed; the site's data is damaged" in results
    else:
        assert "do not match their checksum; the site's data is damaged" in results
    assert_no_traceback(results)


def test_a_damaged_group_of_a_paper_text_fails_one_search_in_one_line(visit_tampered):
    damaged = []

    def damage(site: Path) -> None:
        path, _, head_end = text_head_of(site, SMALL_PAPERS[0])
        data = bytearray(path.read_bytes())
        data[head_end + 8] ^= 0xFF  # in the paper's first group, whose checksum its head holds
        path.write_bytes(bytes(data))
        damaged.append(path.relative_to(site).as_posix())

    view = visit_tampered(damage)
    view.settled()
    results = view.search(QUERY)
    assert f"{damaged[0]} bytes" in results and "do not match their checksum" in results
    assert "\n" not in results.strip()
    assert_no_traceback(results)
    status = view.page.evaluate("readingRoom.status()")
    assert status["semantic"] and not status["semantic_error"]  # the texts are named, not the dense side
    assert "passage texts are damaged" in results


@pytest.mark.parametrize(
    ("tag", "shown"),
    [("deep learning", [SMALL_PAPERS[0]]), ("deep", [SMALL_PAPERS[1]]), ("it's <b>", [SMALL_PAPERS[2]])],
)
def test_the_corpus_page_filters_tags_with_spaces(visit_tampered, tag, shown):
    view = visit_tampered(lambda site: None)
    view.page.goto(view.page.url + "corpus/")
    view.page.select_option("#corpus-tag", tag)
    rows = view.page.query_selector_all("#corpus-table tbody tr:not([hidden])")
    assert [row.get_attribute("data-arxiv-id") for row in rows] == shown
    assert view.page.inner_text("#corpus-shown") == f"{len(shown)} shown"
    assert view.console == []
