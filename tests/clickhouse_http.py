"""A test fixture: chDB behind the part of ClickHouse's HTTP interface clickhouse-connect speaks.

No modern ClickHouse server installs on these machines, so the tests of a shared store (several
daemons on one server, each with its own index) run against this stand-in: one process holding
an embedded chDB engine, answering clickhouse-connect's HTTP requests — queries with bound
parameters (``param_*``), results in the format asked for, inserts in Native (compressed or
not, chunked or not), errors as ClickHouse writes them (status 500, ``X-ClickHouse-Exception-Code``).

Users: the fixture takes the user a client names (HTTP basic auth, as clickhouse-connect sends
it, or ``X-ClickHouse-User``; ``default`` when none) and answers ``currentUser()`` with it, so
that each daemon is a person as on a server. A column MATERIALIZED ``currentUser()`` (mnemo's
``written_by``) stamps each insert with its user too: before an insert by another user than the
last, the fixture sets the expression of every such column to that user's name (chDB has one
user), so rows carry who wrote them as a server's would; DDL keeps ``currentUser()`` as written.
It checks no password, but for the users given one with ``--password USER=SECRET``: a wrong one
is answered as ClickHouse answers it (AUTHENTICATION_FAILED, code 516), so that mnemo's message
for bad credentials can be tested.

``--version V`` makes it answer ``version()`` with V, and, for a V older than 19, fail the query
clickhouse-connect's handshake sends as ClickHouse 18.16 does ("Unknown identifier: readonly"):
how mnemo refuses an old server is tested against that stand-in, not the real 18.16.

It is a fixture, never shipped, and what it cannot show is said wherever a test relies on it:
no real users (a password only as above), grants, row policies, quotas, replicas or cluster;
one query at a time; settings sent as URL parameters are ignored (but ``database``).

Run it as ``python -m tests.clickhouse_http DIRECTORY`` (prints ``http://127.0.0.1:PORT`` once
serving), or from a test with :func:`clickhouse_http_server`.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import gzip
import io
import re
import subprocess
import sys
import tempfile
import threading
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar
from urllib.parse import parse_qsl, urlsplit

_FORMAT = re.compile(rb"\bFORMAT\s+(\w+)\s*;?\s*$", re.IGNORECASE)
_INSERT = re.compile(rb"^\s*INSERT\s+INTO\s+(.+?)\s+FORMAT\s+(\w+)[ \t]*\r?\n?", re.IGNORECASE | re.DOTALL)
_CODE = re.compile(r"Code:\s*(\d+)")
_INSERT_ANY = re.compile(rb"^\s*INSERT\b", re.IGNORECASE)
_DDL = re.compile(rb"^\s*(ALTER|CREATE)\b", re.IGNORECASE)
_CURRENT_USER = re.compile(r"\bcurrentUser\(\s*\)", re.IGNORECASE)
_VERSION = re.compile(r"\bversion\(\s*\)", re.IGNORECASE)


def _decompress(data: bytes, encoding: str) -> bytes:
    if not encoding:
        return data
    if encoding == "lz4":
        import lz4.frame

        out, rest = [], data
        while rest:  # one frame per chunk sent
            decompressor = lz4.frame.LZ4FrameDecompressor()
            out.append(decompressor.decompress(rest))
            rest = decompressor.unused_data
        return b"".join(out)
    if encoding == "zstd":
        import zstandard

        return zstandard.ZstdDecompressor().decompressobj().decompress(data)
    if encoding == "gzip":
        return gzip.decompress(data)
    if encoding == "deflate":
        return zlib.decompress(data)
    raise ValueError(f"unsupported Content-Encoding {encoding}")


class _Engine:
    """The one chDB connection, one query at a time."""

    def __init__(self, directory: Path, version: str) -> None:
        import chdb

        self._conn = chdb.connect(str(directory))
        self._version = version
        self._lock = threading.Lock()
        self._database = "default"
        self._stamped = ""

    def run(
        self, sql: bytes, params: dict[str, str], database: str, data: bytes | None, user: str
    ) -> tuple[bytes, str]:
        literal = "'" + user.replace("\\", "\\\\").replace("'", "\\'") + "'"
        if not _DDL.match(sql):  # a column's expression is the server's, evaluated at each insert
            sql = _CURRENT_USER.sub(literal, sql.decode()).encode()
        if self._version:
            if int(self._version.split(".")[0]) < 19 and b"readonly" in sql:
                raise RuntimeError("Code: 47. DB::Exception: Unknown identifier: readonly")
            sql = _VERSION.sub(f"'{self._version}'", sql.decode()).encode()
        text = sql.decode()
        with self._lock:
            if database and database != self._database:
                self._conn.query(f"USE `{database}`", "TabSeparated")
                self._database, self._stamped = database, ""
            if _DDL.match(sql):
                self._stamped = ""  # a migration may have added or changed a stamp
            if _INSERT_ANY.match(sql):
                self._stamp(literal)
            if data is not None:
                # INSERT … FORMAT Native with its data in the body: chDB reads data from a file.
                insert = _INSERT.match(sql)
                assert insert is not None
                target, fmt = insert.group(1).decode(), insert.group(2).decode()
                with tempfile.NamedTemporaryFile(suffix="." + fmt.lower()) as tmp:
                    tmp.write(data)
                    tmp.flush()
                    self._conn.query(
                        f"INSERT INTO {target} FROM INFILE '{tmp.name}' FORMAT {fmt}", "TabSeparated"
                    )
                return b"", "TabSeparated"
            found = _FORMAT.search(sql)
            fmt = found.group(1).decode() if found else "TabSeparated"
            if found:
                text = sql[: found.start()].decode()
            result = self._conn.query(text, fmt, params=params)
            return (result.bytes() or b""), fmt

    def _stamp(self, literal: str) -> None:
        """Make every ``written_by`` column (MATERIALIZED ``currentUser()`` on a server) stamp this
        insert's user, as a server stamps it: chDB has one user, so its expression is set to the
        inserting user's name before the insert (a change of metadata only; rows keep theirs)."""
        if literal == self._stamped:
            return
        found = self._conn.query(
            "SELECT table FROM system.columns WHERE database = currentDatabase() "
            "AND name = 'written_by' AND default_kind = 'MATERIALIZED'",
            "TabSeparated",
        )
        for table in (found.bytes() or b"").decode().split():
            self._conn.query(
                f"ALTER TABLE `{table}` MODIFY COLUMN written_by LowCardinality(String) "
                f"MATERIALIZED {literal}",
                "TabSeparated",
            )
        self._stamped = literal


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    engine: _Engine
    passwords: ClassVar[dict[str, str]] = {}

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self._answer(b"")

    def do_POST(self) -> None:
        self._answer(self._body())

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = io.BytesIO()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                out.write(self.rfile.read(size))
                self.rfile.readline()
            raw = out.getvalue()
        else:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        return _decompress(raw, self.headers.get("Content-Encoding", "").strip().lower())

    def _answer(self, body: bytes) -> None:
        url = urlsplit(self.path)
        if url.path == "/ping":
            self._send(200, b"Ok.\n", {})
            return
        args = dict(parse_qsl(url.query, keep_blank_values=True))
        params = {k.removeprefix("param_"): v for k, v in args.items() if k.startswith("param_")}
        query = args.get("query", "").encode()
        data: bytes | None = None
        if query:
            sql = query
            if _INSERT.match(query):
                data = body
            elif body:
                sql = query + b" " + body
        else:
            insert = _INSERT.match(body)
            if insert is not None:
                sql, data = body[: insert.end()], body[insert.end() :]
            else:
                sql = body
        user, password = self._credentials(args)
        if user in self.passwords and self.passwords[user] != password:
            message = (
                f"Code: 516. DB::Exception: {user}: Authentication failed: password is incorrect, "
                "or there is no user with such name. (AUTHENTICATION_FAILED)"
            )
            self._send(403, message.encode() + b"\n", {"X-ClickHouse-Exception-Code": "516"})
            return
        try:
            payload, fmt = self.engine.run(sql, params, args.get("database", ""), data, user)
        except Exception as exc:  # chDB raises its errors as RuntimeError with ClickHouse's text
            message = str(exc).strip() or type(exc).__name__
            code = _CODE.search(message)
            self._send(
                500,
                message.encode() + b"\n",
                {"X-ClickHouse-Exception-Code": code.group(1) if code else "1001"},
            )
            return
        self._send(200, payload, {"X-ClickHouse-Format": fmt, "X-ClickHouse-Timezone": "UTC"})

    def _credentials(self, args: dict[str, str]) -> tuple[str, str]:
        auth = self.headers.get("Authorization", "")
        if auth.lower().startswith("basic "):
            user, _, password = base64.b64decode(auth[6:]).decode().partition(":")
            return user or "default", password
        user = self.headers.get("X-ClickHouse-User") or args.get("user") or "default"
        return user, self.headers.get("X-ClickHouse-Key") or args.get("password") or ""

    def _send(self, status: int, payload: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


def serve(directory: Path, version: str = "", passwords: dict[str, str] | None = None) -> None:
    _Handler.engine = _Engine(directory, version)
    _Handler.passwords = dict(passwords or {})
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    print(f"http://127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


@contextlib.contextmanager
def clickhouse_http_server(
    directory: Path, version: str = "", passwords: dict[str, str] | None = None
) -> Iterator[str]:
    """The fixture in its own process (chDB allows one engine per process); yields its URL.
    ``version``: the server version it claims; ``passwords``: users whose password it checks."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tests.clickhouse_http",
            str(directory),
            *(["--version", version] if version else []),
            *(
                arg
                for user, secret in (passwords or {}).items()
                for arg in ("--password", f"{user}={secret}")
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        if not url.startswith("http://"):
            raise RuntimeError(f"the ClickHouse HTTP fixture did not start (exit {process.wait(10)})")
        yield url
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


if __name__ == "__main__":
    cli = argparse.ArgumentParser(prog="python -m tests.clickhouse_http")
    cli.add_argument("directory", type=Path)
    cli.add_argument("--version", default="")
    cli.add_argument("--password", action="append", default=[], metavar="USER=SECRET")
    options = cli.parse_args()
    serve(options.directory, options.version, dict(p.split("=", 1) for p in options.password))
