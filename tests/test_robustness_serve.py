"""`serve` against a busy port, a NUL in the path and a damaged manifest: one line, never a traceback."""

import json
import socket
import struct
import urllib.error
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
