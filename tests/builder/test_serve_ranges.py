"""`serve` answers Range requests as GitHub Pages does: one range with 206, 416 past the end, the whole
file for what it ignores, always identity-encoded; through real HTTP to a real server (and chromium)."""

import http.client
import json
import os
import time
from email.utils import formatdate

import pytest
from support.chromium import CHROMIUM, CHROMIUM_ARGS

from builder.commands.serve import serve_in_thread

BODY = bytes(range(256)) * 40  # 10,240 bytes, each offset recognisable


@pytest.fixture
def served(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps({"base_url": "/list/"}))
    (tmp_path / "index.html").write_text("<p>hello</p>")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "codes.0123456789ab.bin").write_bytes(BODY)
    server, _ = serve_in_thread(tmp_path)
    yield server.server_address[1], tmp_path
    server.shutdown()
    server.server_close()


def get(port: int, path: str, method: str = "GET", **headers: str):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request(method, path, headers=headers)
        response = connection.getresponse()
        return response.status, response.headers, response.read()
    finally:
        connection.close()


FILE = "/list/data/codes.0123456789ab.bin"


@pytest.mark.parametrize(
    ("header", "start", "stop"),
    [
        ("bytes=0-9", 0, 10),
        ("bytes=1000-1999", 1000, 2000),
        ("bytes=10000-", 10000, 10240),
        ("bytes=-100", 10140, 10240),
        ("bytes=-99999", 0, 10240),  # a suffix longer than the file is the whole file, as a 206
        ("bytes=10200-99999", 10200, 10240),  # the end is clipped to the file
        ("BYTES=5-5", 5, 6),
    ],
)
def test_one_range_is_a_206_with_exactly_those_bytes(served, header, start, stop):
    status, headers, body = get(served[0], FILE, Range=header)
    assert status == 206
    assert body == BODY[start:stop]
    assert headers["Content-Range"] == f"bytes {start}-{stop - 1}/{len(BODY)}"
    assert headers["Content-Length"] == str(stop - start)
    assert headers["Accept-Ranges"] == "bytes"
    assert headers["Cache-Control"] == "public, max-age=31536000, immutable"
    assert "Content-Encoding" not in headers


@pytest.mark.parametrize("header", ["bytes=10240-", "bytes=20000-30000", "bytes=-0"])
def test_a_range_past_the_end_is_a_416_naming_the_size(served, header):
    status, headers, body = get(served[0], FILE, Range=header)
    assert status == 416
    assert headers["Content-Range"] == f"bytes */{len(BODY)}"
    assert body == b""


@pytest.mark.parametrize(
    "header",
    ["bytes=0-9,20-29", "bytes=9-0", "items=0-9", "bytes=", "bytes=-", "garbage", "bytes=a-b"],
)
def test_what_pages_does_not_serve_as_a_range_gets_the_whole_file(served, header):
    status, headers, body = get(served[0], FILE, Range=header)
    assert (status, body) == (200, BODY)
    assert "Content-Range" not in headers
    assert headers["Accept-Ranges"] == "bytes"


def test_a_plain_get_is_unchanged_and_never_compressed(served):
    status, headers, body = get(served[0], FILE, **{"Accept-Encoding": "gzip, deflate, br"})
    assert (status, body) == (200, BODY)
    assert headers["Content-Length"] == str(len(BODY)) and "Content-Encoding" not in headers
    assert headers["Accept-Ranges"] == "bytes"
    status, headers, body = get(served[0], "/list/", Range="bytes=0-2")  # a folder: its page, whole
    assert (status, body) == (200, b"<p>hello</p>")


def test_a_range_accepting_gzip_still_gets_identity_bytes(served):
    status, headers, body = get(served[0], FILE, Range="bytes=0-99", **{"Accept-Encoding": "gzip"})
    assert (status, body) == (206, BODY[:100])
    assert "Content-Encoding" not in headers


def test_head_with_a_range_sends_the_206_headers_only(served):
    status, headers, body = get(served[0], FILE, "HEAD", Range="bytes=100-199")
    assert (status, body) == (206, b"")
    assert headers["Content-Range"] == f"bytes 100-199/{len(BODY)}"


def test_if_range_serves_the_range_only_for_the_same_file(served):
    port, site = served
    modified = formatdate(os.stat(site / "data" / "codes.0123456789ab.bin").st_mtime, usegmt=True)
    status, _, body = get(port, FILE, Range="bytes=0-9", **{"If-Range": modified})
    assert (status, body) == (206, BODY[:10])
    stale = formatdate(time.time() - 86_400, usegmt=True)
    status, _, body = get(port, FILE, Range="bytes=0-9", **{"If-Range": stale})
    assert (status, body) == (200, BODY)


def test_replies_are_http_1_1_with_a_strong_etag_and_a_connection_each(served):
    port, site = served
    stat = os.stat(site / "data" / "codes.0123456789ab.bin")
    etag = f'"{int(stat.st_mtime):x}-{stat.st_size:x}"'
    for headers in ({}, {"Range": "bytes=0-9"}):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        connection.request("GET", FILE, headers=headers)
        response = connection.getresponse()
        response.read()
        assert response.version == 11
        assert (response.headers["ETag"], response.headers["Connection"]) == (etag, "close")
        connection.close()
    assert get(port, "/list/")[1]["ETag"].startswith('"')  # a folder's page has its own


@pytest.mark.parametrize("method", ["GET", "HEAD"])
def test_if_none_match_on_the_files_etag_is_a_304_with_no_body(served, method):
    port = served[0]
    etag = get(port, FILE)[1]["ETag"]
    for tags in (etag, f'"other", W/{etag}', "*"):
        status, headers, body = get(port, FILE, method, **{"If-None-Match": tags})
        assert (status, body, headers["ETag"]) == (304, b"", etag)
    status, _, body = get(port, FILE, **{"If-None-Match": '"5f00-2800"'})
    assert (status, body) == (200, BODY)


def test_if_range_with_the_etag_serves_the_range_and_another_the_whole_file(served):
    port = served[0]
    etag = get(port, FILE)[1]["ETag"]
    status, _, body = get(port, FILE, Range="bytes=0-9", **{"If-Range": etag})
    assert (status, body) == (206, BODY[:10])
    status, _, body = get(port, FILE, Range="bytes=0-9", **{"If-Range": '"5f00-2800"'})
    assert (status, body) == (200, BODY)


def test_errors_stay_errors_under_a_range(served):
    port = served[0]
    assert get(port, "/list/data/missing.bin", Range="bytes=0-9")[0] == 404
    assert get(port, "/elsewhere/codes.bin", Range="bytes=0-9")[0] == 404


def test_ranges_on_one_kept_alive_connection_each_end_where_they_should(served):
    connection = http.client.HTTPConnection("127.0.0.1", served[0], timeout=10)
    try:
        for start in (0, 5000, 10230):
            connection.request("GET", FILE, headers={"Range": f"bytes={start}-{start + 9}"})
            response = connection.getresponse()
            assert (response.status, response.read()) == (206, BODY[start : start + 10])
        connection.request("GET", FILE)
        assert connection.getresponse().read() == BODY
    finally:
        connection.close()


def test_chromium_fetch_with_a_range_gets_the_bytes_uncompressed(served):
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is not installed")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{served[0]}/list/")
            with page.expect_request(lambda request: "codes" in request.url) as sent:
                reply = page.evaluate(
                    """async (url) => {
                      const response = await fetch(url, {headers: {Range: 'bytes=256-511'}});
                      const bytes = new Uint8Array(await response.arrayBuffer());
                      return [response.status, response.headers.get('Content-Range'), Array.from(bytes)];
                    }""",
                    FILE,
                )
            request_headers = sent.value.all_headers()
        finally:
            browser.close()
    assert reply == [206, f"bytes 256-511/{len(BODY)}", list(range(256))]
    assert request_headers.get("accept-encoding") == "identity"


def test_chromium_answers_a_range_asked_again_from_its_cache(served):
    """As on Pages: the ranged reads of a query asked again cost no request. Over HTTP/1.0, or with no
    strong validator, chromium sent every one to the server again."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is not installed")
    from playwright.sync_api import sync_playwright

    port, site = served
    fetch_range = """async ([url, range]) => {
      const response = await fetch(url, {headers: {Range: range}});
      return [response.status, Array.from(new Uint8Array(await response.arrayBuffer()))];
    }"""
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{port}/list/")
            first = page.evaluate(fetch_range, [FILE + "?bytes=256-511", "bytes=256-511"])
            (site / "data" / "codes.0123456789ab.bin").unlink()  # the server has it no more
            again = page.evaluate(fetch_range, [FILE + "?bytes=256-511", "bytes=256-511"])
            other = page.evaluate(fetch_range, [FILE + "?bytes=0-9", "bytes=0-9"])
        finally:
            browser.close()
    assert first == again == [206, list(range(256))]
    assert other[0] == 404
