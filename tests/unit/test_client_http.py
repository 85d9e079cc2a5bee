"""The one transport to the daemon (mnemo.client.http), on byte fixtures: a unix socket server
in a thread answers each connection with exactly the bytes a test gives."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from mnemo.client.http import ConnectionLostError, NotSentError, UnixHTTP


class ScriptedServer:
    """Answers the requests of its n-th connection with ``script[n]``, one answer a request,
    then closes that connection (``closed`` counts the connections it closed)."""

    def __init__(self, path: Path, script: list[list[bytes]]) -> None:
        self.script = script
        self.requests: list[bytes] = []
        self.connections = 0
        self.closed = threading.Semaphore(0)
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(path))
        self._server.listen(8)
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        for answers in self.script:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            self.connections += 1
            with conn:
                for answer in answers:
                    request = self._read_request(conn)
                    if request is None:
                        break
                    self.requests.append(request)
                    conn.sendall(answer)
            self.closed.release()

    @staticmethod
    def _read_request(conn: socket.socket) -> bytes | None:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                return None
            data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
                while len(body) < length:
                    body += conn.recv(65536)
                data = head + b"\r\n\r\n" + body
        return data

    def close(self) -> None:
        self._server.close()
        self._thread.join(5)


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., tuple[ScriptedServer, UnixHTTP]]]:
    """``serve([answers of connection 1], [answers of connection 2], …)`` → (server, client)."""
    made: list[tuple[ScriptedServer, UnixHTTP]] = []

    def start(*script: list[bytes]) -> tuple[ScriptedServer, UnixHTTP]:
        path = tmp_path / f"d{len(made)}.sock"
        made.append((ScriptedServer(path, list(script)), UnixHTTP(str(path))))
        return made[-1]

    yield start
    for server, http in made:
        http.close()
        server.close()


OK_A = b"HTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\na"
OK_B = b"HTTP/1.1 200 OK\r\ncontent-length: 1\r\n\r\nb"
Serve = Callable[..., tuple[ScriptedServer, UnixHTTP]]


def test_a_content_length_answer_is_read_and_the_connection_reused(serve: Serve) -> None:
    server, http = serve([b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}", OK_B])
    first = http.request("POST", "/v1/x", b'{"a":1}', timeout_s=5)
    second = http.request("GET", "/v1/y", timeout_s=5)
    assert (first.status, first.body, second.status, second.body) == (200, b"{}", 200, b"b")
    assert server.connections == 1
    assert server.requests[0].startswith(b"POST /v1/x HTTP/1.1\r\n")
    assert server.requests[0].endswith(b'\r\n\r\n{"a":1}')


def test_a_chunked_answer_is_joined_and_its_trailers_skipped(serve: Serve) -> None:
    chunked = (
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
        b"4;x=1\r\nWiki\r\n5\r\npedia\r\n0\r\nx-t: 1\r\n\r\n"
    )
    server, http = serve([chunked, OK_B])
    assert http.request("GET", "/a", timeout_s=5).body == b"Wikipedia"
    assert http.request("GET", "/b", timeout_s=5).body == b"b"  # the stream stayed in step
    assert server.connections == 1


@pytest.mark.parametrize(
    "cut",
    [
        b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc",
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n10\r\nonly",
        b"HTTP/1.1 200 OK\r\ncontent-le",
    ],
    ids=["content-length", "chunked", "head"],
)
def test_an_answer_cut_short_is_a_lost_connection_not_a_short_body(serve: Serve, cut: bytes) -> None:
    _, http = serve([cut])
    with pytest.raises(ConnectionLostError, match="closed before the answer was complete"):
        http.request("GET", "/a", timeout_s=5)


def test_a_connection_the_daemon_closed_while_kept_alive_is_not_reused(serve: Serve) -> None:
    # The first answer keeps the connection alive, then the daemon closes it (exiting idle, say):
    # the next request goes over a new connection, never into the dead one.
    server, http = serve([OK_A], [OK_B])
    assert http.request("GET", "/1", timeout_s=5).body == b"a"
    assert server.closed.acquire(timeout=5)
    assert http.request("GET", "/2", timeout_s=5).body == b"b"
    assert server.connections == 2 and len(server.requests) == 2


def test_an_answer_without_length_is_read_to_the_end_and_the_connection_not_reused(serve: Serve) -> None:
    server, http = serve([b"HTTP/1.1 200 OK\r\n\r\nall of it"], [OK_B])
    assert http.request("GET", "/a", timeout_s=5).body == b"all of it"
    assert http.request("GET", "/b", timeout_s=5).body == b"b"
    assert server.connections == 2


def test_a_connection_close_answer_is_not_pooled(serve: Serve) -> None:
    server, http = serve([b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: 1\r\n\r\na"], [OK_B])
    assert http.request("GET", "/a", timeout_s=5).body == b"a"
    assert http.request("GET", "/b", timeout_s=5).body == b"b"
    assert server.connections == 2


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (b"SMTP ready\r\n\r\n", "not an HTTP/1.x answer"),
        (b"HTTP/1.1 200 OK\r\ncontent-length: lots\r\n\r\n", "malformed"),
        (b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n", "malformed"),
        (b"HTTP/1.1 200 OK\r\ncontent-length: -1\r\n\r\n", "refused"),
    ],
)
def test_a_malformed_answer_is_a_lost_connection(serve: Serve, answer: bytes, message: str) -> None:
    _, http = serve([answer])
    with pytest.raises(ConnectionLostError, match=message):
        http.request("GET", "/a", timeout_s=5)


def test_nothing_listening_is_not_sent_and_says_the_daemon_is_absent(tmp_path: Path) -> None:
    http = UnixHTTP(str(tmp_path / "none.sock"))
    with pytest.raises(NotSentError) as raised:
        http.request("GET", "/a", timeout_s=1)
    assert raised.value.is_absent


def test_a_daemon_that_never_answers_runs_out_the_time(tmp_path: Path) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(str(tmp_path / "mute.sock"))
        listener.listen(1)
        http = UnixHTTP(str(tmp_path / "mute.sock"))
        with pytest.raises(TimeoutError):
            http.request("GET", "/a", timeout_s=0.3)


def test_a_pooled_connection_past_descriptor_1023_is_checked_and_reused(serve: Serve, tmp_path: Path) -> None:
    # select() refuses descriptors past 1023: a busy client (many files open) must still reuse.
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if min(hard, 4096) < 1200:
        pytest.skip("this process may not open 1,200 files")
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    held = [open(tmp_path / "held", "wb") for _ in range(1100)]  # noqa: SIM115 - held open on purpose
    try:
        server, http = serve([OK_A, OK_B])
        assert http.request("GET", "/1", timeout_s=5).body == b"a"
        assert http.request("GET", "/2", timeout_s=5).body == b"b"
        assert server.connections == 1
    finally:
        for file in held:
            file.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_a_client_closed_while_a_request_is_under_way_does_not_pool_its_connection(serve: Serve) -> None:
    server, http = serve([OK_A, OK_A], [OK_B])
    http.close()  # as mnemo-mcp's client does at exit, while a worker thread may still send
    assert http.request("GET", "/1", timeout_s=5).body == b"a"
    assert server.closed.acquire(timeout=5)  # the client closed that connection after its answer
    assert http.request("GET", "/2", timeout_s=5).body == b"b"  # over a new one
    assert server.connections == 2
