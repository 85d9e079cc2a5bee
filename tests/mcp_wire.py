"""A raw stdio session with ``mnemo-mcp``, as a host sees it: lines written to its stdin, every
line it writes to stdout kept, answers awaited with a bound (a hang is a failure, not a stall).

Shared by the relay's tests, the fuzz test and ``tools/evals/fuzz_surfaces.py``.
"""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Self

HELLO = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}


class NoAnswerError(AssertionError):
    """mnemo-mcp did not answer in time (a hang), or stopped."""


class RawSession:
    """``with RawSession(command, env, stderr_path) as session: session.request(...)``."""

    def __init__(self, command: list[str], env: dict[str, str], stderr_path: Path) -> None:
        self._stderr = stderr_path.open("ab")
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, env=env
        )
        self.lines: list[bytes] = []  # everything written to stdout, in order
        self._answers: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._pending: list[dict[str, Any]] = []
        self._next_id = 0  # this session's own requests are "raw-<n>": no generated id is one
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)
            try:
                message = json.loads(line)
            except ValueError:
                continue  # kept in self.lines: foreign output, for the caller to count
            if isinstance(message, dict):
                self._answers.put(message)
        self._answers.put(None)  # stdout closed

    def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line.rstrip(b"\n") + b"\n")
        self.process.stdin.flush()

    def answer(self, request_id: object, timeout_s: float = 60.0) -> dict[str, Any]:
        """The answer to ``request_id`` (others that arrive meanwhile are kept for later)."""
        for i, message in enumerate(self._pending):
            if message.get("id") == request_id:
                return self._pending.pop(i)
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                message = self._answers.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise NoAnswerError(f"no answer to id {request_id!r} within {timeout_s:.0f} s") from None
            if message is None:
                self._answers.put(None)
                raise NoAnswerError(f"mnemo-mcp closed its stdout (exit {self.process.poll()})")
            if message.get("id") == request_id and ("result" in message or "error" in message):
                return message
            self._pending.append(message)

    def request(self, method: str, params: dict[str, Any] | None = None, timeout_s: float = 60.0) -> Any:
        """Send a request and return its answer."""
        request_id = self._new_id()
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(json.dumps(message).encode())
        return self.answer(request_id, timeout_s)

    def _new_id(self) -> str:
        self._next_id += 1
        return f"raw-{self._next_id}"

    def initialize(self) -> dict[str, Any]:
        answer = self.request("initialize", HELLO, timeout_s=120)
        self.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        return answer

    def exchange(self, line: bytes, timeout_s: float = 60.0) -> list[dict[str, Any]]:
        """Send ``line``, then a ping; return what was answered before the ping (and anything
        still waiting). The relay answers a line it refuses before it passes on the next one."""
        ping_id = self._new_id()
        self.send(line)
        self.send(json.dumps({"jsonrpc": "2.0", "id": ping_id, "method": "ping"}).encode())
        self.answer(ping_id, timeout_s)
        before, self._pending = self._pending, []
        return before

    def foreign_lines(self) -> list[bytes]:
        """Lines on stdout that are not JSON-RPC 2.0 messages."""
        foreign = []
        for line in list(self.lines):
            try:
                message = json.loads(line)
            except ValueError:
                foreign.append(line)
                continue
            if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
                foreign.append(line)
        return foreign

    def close(self, timeout_s: float = 30.0) -> int:
        if self.process.stdin is not None and not self.process.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                self.process.stdin.close()
        try:
            code = self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait()
        self._reader.join(timeout=timeout_s)
        if self.process.stdout is not None:
            self.process.stdout.close()
        self._stderr.close()
        return code
