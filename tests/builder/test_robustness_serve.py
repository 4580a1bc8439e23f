"""`serve` against a busy port, a NUL in the path and a damaged manifest: one line, never a traceback."""

import json
import socket
import struct
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

from builder.cli import main
from builder.commands.serve import serve_in_thread


@pytest.fixture
def site(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps({"base_url": "/"}))
    (tmp_path / "index.html").write_text("<p>hello</p>")
    return tmp_path


def status_of(url: str) -> int:
    try:
        with urllib.request.urlopen(url) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def test_a_busy_port_is_one_error_line(site, capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        assert main(["serve", "--site", str(site), "--port", str(port)]) == 2
    err = capsys.readouterr().err
    assert f"error: cannot listen on 127.0.0.1:{port}" in err and "--port 0" in err
    assert "Traceback" not in err


def test_a_nul_in_the_path_is_a_bad_request(site, capfd):
    server, url = serve_in_thread(site)
    try:
        assert status_of(url + "manifest.json%00") == 400
        assert status_of(url + "%00/index.html") == 400
        assert status_of(url + "index.html") == 200  # and the server goes on
    finally:
        server.shutdown()
        server.server_close()
    assert "Traceback" not in capfd.readouterr().err


@pytest.mark.parametrize(
    ("manifest", "message"),
    [
        ({"base_url": "//other.host/"}, "must be an absolute path on the site's own host"),
        ("not json", "is damaged"),
    ],
)
def test_a_damaged_manifest_never_redirects_elsewhere(site, capsys, manifest, message):
    text = manifest if isinstance(manifest, str) else json.dumps(manifest)
    (site / "manifest.json").write_text(text)
    assert main(["serve", "--site", str(site), "--port", "0"]) == 2
    assert message in capsys.readouterr().err


def test_a_client_that_leaves_mid_download_is_no_traceback(site, capfd):
    (site / "big.bin").write_bytes(b"x" * 50_000_000)
    server, url = serve_in_thread(site)
    try:
        host, port = server.server_address[:2]
        for _ in range(3):
            with socket.create_connection((host, port)) as client:
                client.sendall(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
                client.recv(1024)
                client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))  # RST
        assert status_of(url + "index.html") == 200
    finally:
        server.shutdown()
        server.server_close()
    assert "Traceback" not in capfd.readouterr().err


def raw_reply(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(request)
        connection.shutdown(socket.SHUT_WR)
        reply = b""
        while chunk := connection.recv(65536):
            reply += chunk
    return reply


@pytest.mark.parametrize(
    ("request_line", "status"),
    [
        (b"GET /" + b"a" * 70_000 + b" HTTP/1.1", b"414"),
        (b"GET / HTTP/9.9", b"505"),
        (b"GET / HTTP/1.7", b"505"),
        (b"GET / HTTP/0.9", b"400"),
        (b"GET /", b"400"),  # an HTTP/0.9 simple request
        (b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", b"400"),  # a TLS hello on the plain port
        (b"garbage", b"400"),
    ],
)
def test_a_bad_request_line_gets_a_status_and_no_traceback(site, capfd, request_line, status):
    server, _ = serve_in_thread(site)
    try:
        reply = raw_reply(server.server_address[1], request_line + b"\r\n\r\n")
    finally:
        server.shutdown()
        server.server_close()
    assert reply.startswith(b"HTTP/1.0 " + status + b" ") or reply.startswith(b"HTTP/1.1 " + status + b" "), (
        reply[:80]
    )
    assert "Traceback" not in capfd.readouterr().err


# The corpus file takes a non-ASCII base_url only percent-encoded.
@pytest.mark.parametrize("base_url", ["/my%20site/", "/caf%C3%A9/"])
def test_a_percent_encoded_base_url_serves_each_file(site, capfd, base_url):
    (site / "manifest.json").write_text(json.dumps({"base_url": base_url}))
    (site / "data").mkdir()
    (site / "data" / "papers.json").write_text('{"v": 1}')
    server, _ = serve_in_thread(site)
    encoded = urllib.parse.quote(urllib.parse.unquote(base_url))  # as a browser sends it
    root = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        with urllib.request.urlopen(f"{root}{encoded}data/papers.json") as response:
            assert response.read() == b'{"v": 1}'
        with urllib.request.urlopen(f"{root}{encoded}") as response:
            assert response.read() == b"<p>hello</p>"
        with urllib.request.urlopen(f"{root}/") as response:  # the root redirects to the site
            assert response.url == f"{root}{encoded}"
        assert status_of(f"{root}{encoded}data/missing.json") == 404
        assert status_of(f"{root}/elsewhere/index.html") == 404
    finally:
        server.shutdown()
        server.server_close()
    assert "Traceback" not in capfd.readouterr().err


def test_twenty_parallel_clients_never_stall(site):
    server, url = serve_in_thread(site)
    stalled: list[float] = []

    def client() -> None:
        for _ in range(25):
            started = time.monotonic()
            with urllib.request.urlopen(url + "index.html", timeout=20) as response:
                response.read()
            if time.monotonic() - started > 2:
                stalled.append(time.monotonic() - started)

    try:
        threads = [threading.Thread(target=client) for _ in range(20)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
    finally:
        server.shutdown()
        server.server_close()
    assert not any(thread.is_alive() for thread in threads)
    assert not stalled, f"{len(stalled)} of 500 requests took over 2 s: {stalled}"
