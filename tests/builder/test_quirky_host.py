"""The misbehaving host of tests/support/quirky_host.py misbehaves as documented (readers' tests rely on it)."""

import gzip
import http.client
import json
from urllib.parse import urlsplit

import pytest
from support.quirky_host import QuirkyHost

BODY = b"0123456789" * 500
FILE = "data/postings.0123456789ab.bin"


@pytest.fixture
def site(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps({"base_url": "/list/"}))
    (tmp_path / "data").mkdir()
    (tmp_path / FILE).write_bytes(BODY)
    return tmp_path


def get(url: str, **headers: str):
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        connection.request("GET", parts.path, headers=headers)
        response = connection.getresponse()
        return response.status, response.headers, response.read()
    finally:
        connection.close()


def test_a_host_that_ignores_range_sends_the_whole_file(site):
    with QuirkyHost(site, ignore_range=True) as host:
        status, headers, body = get(host.url + FILE, Range="bytes=0-9")
    assert (status, body) == (200, BODY) and "Content-Range" not in headers
    assert [(seen.range, seen.status) for seen in host.requests] == [("bytes=0-9", 200)]


def test_a_host_that_gzips_what_accepts_gzip_and_ranges_identity_requests(site):
    with QuirkyHost(site, gzip="accepted") as host:
        status, headers, body = get(host.url + FILE, Range="bytes=0-9", **{"Accept-Encoding": "gzip"})
        assert (status, headers["Content-Encoding"]) == (200, "gzip")
        assert gzip.decompress(body) == BODY
        status, headers, body = get(host.url + FILE, Range="bytes=10-19", **{"Accept-Encoding": "identity"})
        assert (status, body, headers["Content-Range"]) == (206, BODY[10:20], f"bytes 10-19/{len(BODY)}")
        assert "Content-Encoding" not in headers


def test_a_host_that_always_gzips_compresses_even_a_ranged_identity_request(site):
    with QuirkyHost(site, gzip="always") as host:
        status, headers, body = get(host.url + FILE, Range="bytes=0-9", **{"Accept-Encoding": "identity"})
        assert (status, headers["Content-Encoding"], gzip.decompress(body)) == (200, "gzip", BODY)
        assert get(host.url + "data/missing.bin")[0] == 404


def test_a_well_behaved_quirky_host_serves_as_serve_does(site):
    with QuirkyHost(site) as host:
        status, headers, body = get(host.url + FILE, Range="bytes=-5")
        assert (status, body) == (206, BODY[-5:])
        assert get(host.url + FILE, Range=f"bytes={len(BODY)}-")[0] == 416


def test_a_malformed_request_is_recorded_not_a_crash(site):
    with QuirkyHost(site) as host:
        parts = urlsplit(host.url)
        connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
        connection.putrequest("GET", "/" + "a" * 70_000, skip_host=True)
        connection.endheaders()
        assert connection.getresponse().status == 414
        connection.close()
    assert [seen.status for seen in host.requests] == [414]
