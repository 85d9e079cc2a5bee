"""HTTP/1.1 to the daemon over its unix socket, kept minimal: it is on every recall's path.

The daemon's clients (the MCP server, the CLI, hooks) first used httpx2's AsyncClient. Timed
against a bare asyncio socket, requests interleaved on the same daemon (recall, 100k memories,
the fallback embedder, 2 cores, three runs of 200 each): httpx2 added 1.2–2.2 ms to the median,
this client 0.3–0.4 ms.

It speaks what the daemon (uvicorn) answers: a status line, headers, then a Content-Length body
(chunked bodies are read too). Connections are kept alive and pooled; a pooled connection that
the daemon has closed meanwhile (it exited idle) is noticed before it is reused, so a request is
never written into a dead socket by this client. Failures are told apart by what they imply for
a retry: :class:`Refused` (nothing was sent) or :class:`Dropped` (the request may have arrived).
"""

from __future__ import annotations

import select
from dataclasses import dataclass

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream

MAX_HEAD_BYTES = 64 * 1024
MAX_BODY_BYTES = 256 * 1024 * 1024


class Refused(Exception):
    """No connection could be made: the request was not sent."""


class Dropped(Exception):
    """The connection failed after the request was written: it may or may not have been applied."""


@dataclass(frozen=True, slots=True)
class Response:
    status: int
    body: bytes


class _Connection:
    def __init__(self, stream: anyio.abc.SocketStream) -> None:
        self.stream = stream
        self.reader = BufferedByteReceiveStream(stream)

    def looks_closed(self) -> bool:
        """Whether the peer closed it (or sent something unasked): readable while idle."""
        if self.reader.buffer:
            return True
        sock = self.stream.extra(anyio.abc.SocketAttribute.raw_socket)
        readable, _, _ = select.select([sock], [], [], 0)
        return bool(readable)

    async def aclose(self) -> None:
        await self.stream.aclose()


class UnixHTTP:
    """Requests to one unix socket; safe to share between tasks (each takes its own connection)."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._idle: list[_Connection] = []

    async def aclose(self) -> None:
        idle, self._idle = self._idle, []
        for connection in idle:
            await connection.aclose()

    async def request(self, method: str, target: str, body: bytes | None = None) -> Response:
        """One request. Raises Refused, Dropped, or (under a caller's fail_after) TimeoutError."""
        connection = await self._connection()
        head = f"{method} {target} HTTP/1.1\r\nhost: mnemo\r\n"
        if body is not None:
            head += f"content-type: application/json\r\ncontent-length: {len(body)}\r\n"
        try:
            try:
                await connection.stream.send(head.encode("ascii") + b"\r\n" + (body or b""))
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
                raise Dropped(f"writing the request failed: {exc!r}") from None
            status, keep_alive, payload = await _read_response(connection.reader)
        except BaseException:
            await anyio.aclose_forcefully(connection.stream)  # in an unknown state: never reused
            raise
        if keep_alive:
            self._idle.append(connection)
        else:
            await connection.aclose()
        return Response(status, payload)

    async def _connection(self) -> _Connection:
        while self._idle:
            connection = self._idle.pop()
            if not connection.looks_closed():
                return connection
            await anyio.aclose_forcefully(connection.stream)
        try:
            return _Connection(await anyio.connect_unix(self._path))
        except OSError as exc:
            raise Refused(f"cannot connect to {self._path}: {exc.strerror or exc!r}") from None


async def _read_response(reader: BufferedByteReceiveStream) -> tuple[int, bool, bytes]:
    try:
        head = await reader.receive_until(b"\r\n\r\n", MAX_HEAD_BYTES)
        lines = head.decode("latin-1").split("\r\n")
        version, _, rest = lines[0].partition(" ")
        if not version.startswith("HTTP/1."):
            raise Dropped(f"not an HTTP/1.x answer: {lines[0][:80]!r}")
        status = int(rest.partition(" ")[0])
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        keep_alive = headers.get("connection", "").lower() != "close"
        if "content-length" in headers:
            length = int(headers["content-length"])
            if not 0 <= length <= MAX_BODY_BYTES:
                raise Dropped(f"an answer of {length:,} bytes is refused")
            body = await reader.receive_exactly(length)
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            body = await _read_chunked(reader)
        else:
            body, keep_alive = await _read_to_end(reader), False
    except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, OSError) as exc:
        raise Dropped(f"the connection closed before the answer was complete ({exc!r})") from None
    except anyio.DelimiterNotFound:
        raise Dropped(f"an answer's headers were over {MAX_HEAD_BYTES:,} bytes") from None
    except ValueError as exc:
        raise Dropped(f"a malformed answer ({exc})") from None
    return status, keep_alive, body


async def _read_chunked(reader: BufferedByteReceiveStream) -> bytes:
    parts: list[bytes] = []
    total = 0
    while True:
        size = int((await reader.receive_until(b"\r\n", 1024)).split(b";")[0], 16)
        if size == 0:
            await reader.receive_until(b"\r\n", MAX_HEAD_BYTES)  # no trailers are sent: the final CRLF
            return b"".join(parts)
        total += size
        if total > MAX_BODY_BYTES:
            raise Dropped(f"an answer over {MAX_BODY_BYTES:,} bytes is refused")
        parts.append(await reader.receive_exactly(size))
        await reader.receive_exactly(2)


async def _read_to_end(reader: BufferedByteReceiveStream) -> bytes:
    parts: list[bytes] = []
    total = 0
    while True:
        try:
            part = await reader.receive()
        except anyio.EndOfStream:
            return b"".join(parts)
        total += len(part)
        if total > MAX_BODY_BYTES:
            raise Dropped(f"an answer over {MAX_BODY_BYTES:,} bytes is refused")
        parts.append(part)
