"""HTTP/1.1 to the daemon over its unix socket: the one transport of every client.

The hook process, the ``mnemo`` command and mnemo-mcp all send their requests through
:class:`UnixHTTP`. It imports only C modules of the standard library (``_socket``, ``select``),
because the hook process and the command must start in milliseconds.

It speaks what the daemon (uvicorn) answers: a status line, headers, then a body delimited by
Content-Length, chunked, or the end of the connection. Kept-alive connections are pooled; one
the daemon closed meanwhile (it exits when idle) is noticed before it is reused, so a request is
never written into a dead socket. Failures say what they imply for a retry:
:class:`NotSentError` (nothing reached the daemon) or :class:`ConnectionLostError` (the request
may have been applied). Running out of time raises :class:`TimeoutError`.
"""

from __future__ import annotations

import _socket
import select
import time

MAX_HEAD_BYTES = 64 * 1024
MAX_ANSWER_BYTES = 256 * 1024 * 1024
MAX_IDLE = 4  # pooled connections; a client rarely has more requests in flight
_RECV_BYTES = 65536


class TransportError(Exception):
    """A request to the daemon failed on the way."""


class NotSentError(TransportError):
    """No connection could be made: the request was not sent. ``is_absent``: nothing listens
    on the socket (no daemon runs), as opposed to a connection refused for another reason."""

    def __init__(self, message: str, *, is_absent: bool) -> None:
        super().__init__(message)
        self.is_absent = is_absent


class ConnectionLostError(TransportError):
    """The connection failed after the request was written: it may or may not have been applied."""


class Response:
    __slots__ = ("body", "status")

    def __init__(self, status: int, body: bytes) -> None:
        self.status, self.body = status, body


class _Reader:
    """Buffered reads from a socket against one deadline."""

    __slots__ = ("buffer", "deadline", "sock")

    def __init__(self, sock: _socket.socket, deadline: float) -> None:
        self.sock, self.deadline, self.buffer = sock, deadline, bytearray()

    def fill(self) -> bool:
        """Read what arrives next into the buffer; False at the end of the stream."""
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the daemon did not answer in time")
        self.sock.settimeout(remaining)
        chunk = self.sock.recv(_RECV_BYTES)
        self.buffer += chunk
        return bool(chunk)

    def until(self, delimiter: bytes, limit: int) -> bytes:
        start = 0
        while (found := self.buffer.find(delimiter, start)) < 0:
            if len(self.buffer) > limit:
                raise ConnectionLostError(f"an answer's line or head is over {limit:,} bytes")
            start = max(0, len(self.buffer) - len(delimiter) + 1)
            if not self.fill():
                raise ConnectionLostError("the connection closed before the answer was complete")
        line = bytes(self.buffer[:found])
        del self.buffer[: found + len(delimiter)]
        return line

    def exactly(self, size: int) -> bytes:
        while len(self.buffer) < size:
            if not self.fill():
                raise ConnectionLostError("the connection closed before the answer was complete")
        data = bytes(self.buffer[:size])
        del self.buffer[:size]
        return data

    def to_end(self) -> bytes:
        while self.fill():
            if len(self.buffer) > MAX_ANSWER_BYTES:
                raise ConnectionLostError(f"an answer over {MAX_ANSWER_BYTES:,} bytes is refused")
        data = bytes(self.buffer)
        self.buffer.clear()
        return data


def read_response(reader: _Reader) -> tuple[Response, bool]:
    """One answer from ``reader``, and whether the connection may carry another request."""
    head = reader.until(b"\r\n\r\n", MAX_HEAD_BYTES).decode("latin-1").split("\r\n")
    version, _, rest = head[0].partition(" ")
    if not version.startswith("HTTP/1."):
        raise ConnectionLostError(f"not an HTTP/1.x answer: {head[0][:80]!r}")
    try:
        status = int(rest.partition(" ")[0])
        headers = {}
        for line in head[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        is_reusable = headers.get("connection", "").lower() != "close"
        if "content-length" in headers:
            length = int(headers["content-length"])
            if not 0 <= length <= MAX_ANSWER_BYTES:
                raise ConnectionLostError(f"an answer of {length:,} bytes is refused")
            body = reader.exactly(length)
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            body = _read_chunked(reader)
        else:
            body, is_reusable = reader.to_end(), False
    except ValueError as exc:
        raise ConnectionLostError(f"a malformed answer ({exc})") from None
    return Response(status, body), is_reusable


def _read_chunked(reader: _Reader) -> bytes:
    parts: list[bytes] = []
    total = 0
    while True:
        size = int(reader.until(b"\r\n", 1024).split(b";")[0], 16)
        if size == 0:
            while reader.until(b"\r\n", MAX_HEAD_BYTES):  # trailers, if any, up to the empty line
                pass
            return b"".join(parts)
        total += size
        if total > MAX_ANSWER_BYTES:
            raise ConnectionLostError(f"an answer over {MAX_ANSWER_BYTES:,} bytes is refused")
        parts.append(reader.exactly(size))
        if reader.exactly(2) != b"\r\n":
            raise ConnectionLostError("a malformed chunk in the answer")


def _looks_closed(sock: _socket.socket) -> bool:
    """Whether an idle connection was closed by the daemon (or has unasked bytes): readable.
    (poll, not select: select refuses descriptors past 1023, which a busy process may hold.)"""
    poller = select.poll()
    poller.register(sock, select.POLLIN | select.POLLERR | select.POLLHUP)
    return bool(poller.poll(0))


class UnixHTTP:
    """Requests to one unix socket. Safe to share between threads: each request takes its own
    connection, and the pool's list operations are atomic."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._idle: list[_socket.socket] = []
        self._is_closed = False

    def close(self) -> None:
        """Close the pooled connections; one still in use is closed when its request ends."""
        self._is_closed = True
        while True:
            try:
                self._idle.pop().close()
            except IndexError:  # empty (another thread may have taken the last one)
                return

    def request(
        self,
        method: str,
        target: str,
        body: bytes | None = None,
        *,
        timeout_s: float,
        content_type: str = "application/json",
        is_last: bool = False,
    ) -> Response:
        """Send one request and read its answer within ``timeout_s``. ``is_last``: close the
        connection afterwards (a process that sends one request)."""
        deadline = time.monotonic() + timeout_s
        head = f"{method} {target} HTTP/1.1\r\nhost: mnemo\r\n"
        if body is not None:
            head += f"content-type: {content_type}\r\ncontent-length: {len(body)}\r\n"
        if is_last:
            head += "connection: close\r\n"
        message = head.encode("ascii") + b"\r\n" + (body or b"")
        sock, is_reused = self._connection(deadline)
        try:
            try:
                self._send(sock, message, deadline)
            except ConnectionLostError:
                if not is_reused:
                    raise
                # A pooled connection the daemon closed just after it was checked: nothing of this
                # request reached it (it reads no more on a connection it closes). A new one.
                sock.close()
                sock, _ = self._new_connection(deadline)
                self._send(sock, message, deadline)
            try:
                response, is_reusable = read_response(_Reader(sock, deadline))
            except TimeoutError:
                raise
            except OSError as exc:
                raise ConnectionLostError(f"the connection failed before the answer ({exc!r})") from None
        except BaseException:
            sock.close()  # in an unknown state: never reused
            raise
        if is_reusable and not is_last and not self._is_closed and len(self._idle) < MAX_IDLE:
            self._idle.append(sock)
        else:
            sock.close()
        return response

    @staticmethod
    def _send(sock: _socket.socket, message: bytes, deadline: float) -> None:
        try:
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
            sock.sendall(message)
        except TimeoutError:
            raise
        except OSError as exc:
            raise ConnectionLostError(f"writing the request failed: {exc!r}") from None

    def _connection(self, deadline: float) -> tuple[_socket.socket, bool]:
        """A pooled connection that still looks open, or a new one; and whether it was pooled."""
        while True:
            try:
                sock = self._idle.pop()
            except IndexError:  # none left (another thread may have taken the last one)
                return self._new_connection(deadline)
            if not _looks_closed(sock):
                return sock, True
            sock.close()

    def _new_connection(self, deadline: float) -> tuple[_socket.socket, bool]:
        sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        try:
            sock.settimeout(max(deadline - time.monotonic(), 0.001))
            sock.connect(self.path)
        except (FileNotFoundError, ConnectionRefusedError) as exc:
            sock.close()
            raise NotSentError(f"nothing listens on {self.path} ({exc.strerror})", is_absent=True) from None
        except OSError as exc:
            sock.close()
            raise NotSentError(
                f"cannot connect to {self.path}: {exc.strerror or exc!r}", is_absent=False
            ) from None
        return sock, False
