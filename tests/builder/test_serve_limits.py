"""`serve` bounded against hostile clients, through real sockets on 127.0.0.1: a Range header of
thousands of digits is answered (never a dropped connection), no file stays open whichever way a
request ends, a client trickling its request's head is dropped after the deadline, a client that stops
reading is dropped after the idle time, and only so many connections hold a thread at once.
"""

from __future__ import annotations

import json
import os
import select
import socket
import struct
import threading
import time

import pytest

from builder.commands.serve import ConnectionLimits, serve_in_thread

BODY = bytes(range(256)) * 40  # 10,240 bytes
FILE = "/data/codes.0123456789ab.bin"
QUICK = ConnectionLimits(head_seconds=1.0, idle_seconds=1.0, connections=8, wait_seconds=3.0)


@pytest.fixture
def site(tmp_path):
    (tmp_path / "manifest.json").write_text(json.dumps({"base_url": "/"}))
    (tmp_path / "index.html").write_text("<p>hello</p>")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "codes.0123456789ab.bin").write_bytes(BODY)
    return tmp_path


def served(site, limits: ConnectionLimits = QUICK):
    server, _ = serve_in_thread(site, limits=limits)
    return server, server.server_address[1]


def stop(server) -> None:
    server.shutdown()
    server.server_close()


def exchange(port: int, request: bytes) -> bytes:
    """The whole reply to `request` (the server closes every connection after its reply)."""
    with socket.create_connection(("127.0.0.1", port), timeout=20) as connection:
        connection.sendall(request)
        reply = b""
        while chunk := connection.recv(65536):
            reply += chunk
    return reply


def get(path: str, *headers: str) -> bytes:
    lines = [f"GET {path} HTTP/1.1", "Host: 127.0.0.1", *headers, "", ""]
    return "\r\n".join(lines).encode("latin-1")


def split_reply(reply: bytes) -> tuple[int, dict[str, str], bytes]:
    head, _, body = reply.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in header_lines)
    return int(status_line.split()[1]), headers, body


@pytest.mark.parametrize(
    ("range_header", "status", "body"),
    [
        # past the largest position Varnish holds: the header is ignored
        pytest.param("bytes=" + "9" * 5_000 + "-", 200, BODY, id="start of 5,000 digits"),
        pytest.param("bytes=0-" + "9" * 5_000, 200, BODY, id="end of 5,000 digits"),
        pytest.param("bytes=-" + "9" * 5_000, 200, BODY, id="suffix of 5,000 digits"),
        pytest.param("bytes=" + "7" * 60_000 + "-" + "8" * 4_000, 200, BODY, id="64,000 digits"),
        pytest.param("bytes=9223372036854775808-", 200, BODY, id="start of 2**63"),
        # leading zeros count for nothing
        pytest.param("bytes=" + "0" * 5_000 + "5-" + "0" * 5_000 + "9", 206, BODY[5:10], id="zeros"),
        pytest.param("bytes=-" + "0" * 6_000 + "10", 206, BODY[-10:], id="suffix after zeros"),
        pytest.param("bytes=9223372036854775807-", 416, b"", id="start of 2**63-1"),
        pytest.param("bytes=0-9223372036854775807", 206, BODY, id="end of 2**63-1"),
        # a header line over http.server's 65,536 bytes
        pytest.param("bytes=" + "1" * 70_000 + "-", 431, None, id="70,000 digits"),
    ],
)
def test_a_range_of_any_length_is_answered(site, capfd, range_header, status, body):
    server, port = served(site)
    try:
        answered, headers, content = split_reply(exchange(port, get(FILE, f"Range: {range_header}")))
        again = split_reply(exchange(port, get(FILE, "Range: bytes=0-9")))  # and the server goes on
    finally:
        stop(server)
    assert answered == status
    if body is not None:
        assert content == body and headers["Content-Length"] == str(len(body))
    assert again[0] == 206 and again[2] == BODY[:10]
    assert "Traceback" not in capfd.readouterr().err


def test_a_hundred_and_one_headers_are_a_431(site):
    server, port = served(site)
    try:
        headers = [f"X-{number}: {number}" for number in range(101)]
        status, _, _ = split_reply(exchange(port, get(FILE, *headers)))
    finally:
        stop(server)
    assert status == 431


def files_open_in(folder) -> list[str]:
    """This process's open descriptors onto files under `folder` (Linux: /proc/self/fd)."""
    inside = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # closed since the listing
        if target.startswith(str(folder)):
            inside.append(target)
    return inside


def reset_after_first_bytes(port: int, request: bytes) -> None:
    """A client that reads the first bytes of the reply, then resets the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=20) as client:
        client.sendall(request)
        client.recv(1024)
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def leave_at_once(port: int, request: bytes) -> None:
    """A client that sends its request and resets the connection before any reply."""
    with socket.create_connection(("127.0.0.1", port), timeout=20) as client:
        client.sendall(request)
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


def test_no_file_stays_open_whichever_way_a_request_ends(site, capfd):
    (site / "data" / "big.0123456789ab.bin").write_bytes(b"x" * 20_000_000)
    big = "/data/big.0123456789ab.bin"
    server, port = served(site)
    stamp = None
    try:
        stamp = split_reply(exchange(port, get(FILE)))[1]["ETag"]
        for request in (
            get(FILE),
            get(FILE, "Range: bytes=10-20"),
            get(FILE, "Range: bytes=99999-"),  # 416
            get(FILE, "Range: bytes=5-1"),  # ignored: the whole file
            get(FILE, "Range: bytes=0-" + "9" * 5_000),
            get(FILE, "Range: bytes=0-9", 'If-Range: "another"'),
            get(FILE, f"If-None-Match: {stamp}"),  # 304
            get(FILE, "Range: bytes=0-9").replace(b"GET", b"HEAD", 1),
            get("/missing.bin"),
            get("/data/"),  # a folder without index.html
        ):
            exchange(port, request)
        for request in (get(big), get(big, "Range: bytes=100-"), get(big, "Range: bytes=0-" + "9" * 5_000)):
            reset_after_first_bytes(port, request)
            leave_at_once(port, request)
        deadline = time.monotonic() + 30
        while files_open_in(site) and time.monotonic() < deadline:  # replies still being cut short
            time.sleep(0.1)
        assert files_open_in(site) == []
    finally:
        stop(server)
    assert "Traceback" not in capfd.readouterr().err


def trickle(port: int, clients: int, seconds: float) -> tuple[list[float], list[bytes]]:
    """`clients` connections that each send their request's head one byte every 0.2 s; for each, how
    long the server took to close it (the loop stops after `seconds` whatever happens) and what the
    server sent it."""
    started = time.monotonic()
    sockets = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(clients)]
    closed_after: dict[socket.socket, float] = {}
    heard = {connection: b"" for connection in sockets}
    head = b"GET /index.html HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"z" * 1_000
    sent = 0
    try:
        while len(closed_after) < clients and time.monotonic() - started < seconds:
            open_now = [c for c in sockets if c not in closed_after]
            for connection in open_now:
                try:
                    connection.send(head[sent % len(head) : sent % len(head) + 1])
                except OSError:
                    closed_after.setdefault(connection, time.monotonic() - started)
            sent += 1
            readable, _, _ = select.select([c for c in sockets if c not in closed_after], [], [], 0.2)
            for connection in readable:
                try:
                    data = connection.recv(4096)
                except OSError:
                    data = b""
                heard[connection] += data
                if not data:
                    closed_after[connection] = time.monotonic() - started
    finally:
        for connection in sockets:
            connection.close()
    return [closed_after.get(c, float("inf")) for c in sockets], [heard[c] for c in sockets]


def test_clients_trickling_their_heads_are_dropped_and_hold_few_threads(site):
    server, port = served(site)
    threads_seen: list[int] = []
    watching = threading.Event()

    def watch() -> None:
        while not watching.is_set():
            threads_seen.append(threading.active_count())
            time.sleep(0.05)

    before = threading.active_count()
    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        closed_after, _ = trickle(port, clients=20, seconds=30)
        served_after = split_reply(exchange(port, get("/index.html")))
    finally:
        watching.set()
        watcher.join()
        stop(server)
    # Eight at a time, each dropped at its deadline (1 s): the twenty are gone in about 3 s.
    assert all(after < 15 for after in closed_after), closed_after
    assert min(closed_after) >= 0.9, "dropped before its deadline"
    assert max(threads_seen) <= before + 1 + QUICK.connections, max(threads_seen)  # + the watcher
    assert served_after[0] == 200 and served_after[2] == b"<p>hello</p>"


def test_a_client_finding_every_connection_taken_is_told_to_come_back(site):
    limits = ConnectionLimits(head_seconds=3.0, idle_seconds=3.0, connections=2, wait_seconds=0.2)
    server, port = served(site, limits)
    try:
        _, heard = trickle(port, clients=6, seconds=10)
    finally:
        stop(server)
    refused = [reply for reply in heard if reply.startswith(b"HTTP/1.1 503 Service Unavailable\r\n")]
    assert 1 <= len(refused) <= 4, heard
    assert all(b"Retry-After: 1\r\n" in reply for reply in refused)


def test_a_client_that_stops_reading_is_dropped_after_the_idle_time(site):
    (site / "data" / "big.0123456789ab.bin").write_bytes(b"x" * 50_000_000)
    server, port = served(site)
    before = threading.active_count()
    with socket.create_connection(("127.0.0.1", port), timeout=20) as client:
        client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
        client.sendall(get("/data/big.0123456789ab.bin"))
        time.sleep(0.5)
        held = threading.active_count()  # the connection's thread, blocked on a full socket
        deadline = time.monotonic() + 20
        while threading.active_count() > before and time.monotonic() < deadline:
            time.sleep(0.1)
        dropped = threading.active_count() == before
    stop(server)
    assert held == before + 1
    assert dropped, "the thread of a client that stopped reading is still there after 20 s"
