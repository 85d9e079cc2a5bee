"""Helpers shared by the tests: processes, the store, waiting, and memories made by hand."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio

from mnemo.client.typed import DaemonClient
from mnemo.memories import Memory, Origin
from mnemo.vocabulary import MemoryStatus, MemoryType

GEMMA = "embeddinggemma-300m-int8"
# A models directory holding EmbeddingGemma, for the tests that need the quality model.
MODELS_DIR = os.environ.get("MNEMO_TEST_MODELS_DIR", "")
HAS_GEMMA = bool(MODELS_DIR) and (Path(MODELS_DIR) / GEMMA).is_dir()


def daemon_pids(home: Path) -> list[int]:
    """Pids of live ``python -m mnemo.daemon`` processes whose MNEMO_HOME is ``home``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            environ = (entry / "environ").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if b"mnemo.daemon" in cmdline and f"MNEMO_HOME={home}".encode() in environ and state != "Z":
            found.append(int(entry.name))
    return found


def process_stat(pid: int) -> tuple[str, int, int]:
    """(state, parent pid, session id) of a process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return fields[0], int(fields[1]), int(fields[3])


HOLDER = """
import sys, clickhouse_connect
client = clickhouse_connect.get_client(dsn="chdb://" + sys.argv[1])
client.command("SELECT 1")
print("ready", flush=True)
sys.stdin.read()
"""


@contextmanager
def store_held_by_another_process(path: Path) -> Iterator[int]:
    """Open an embedded chDB store at ``path`` in a separate process until the block ends."""
    with subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as holder:
        assert holder.stdout is not None and holder.stdin is not None
        assert holder.stdout.readline().strip() == "ready"
        try:
            yield holder.pid
        finally:
            holder.stdin.close()
            holder.wait(timeout=60)
            holder.stdout.close()


class Clock:
    """An injectable clock that a test moves by hand (``clock.now += timedelta(...)``)."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@contextmanager
def frequent_thread_switches() -> Iterator[None]:
    """Make the interpreter switch threads every microsecond or so inside the block, so that a
    test's threads interleave inside each other's every step (a race shows, not only sometimes)."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def is_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    state, _, _ = process_stat(pid)
    return state != "Z"


def wait_until(condition: Callable[[], bool], *, timeout_s: float = 30.0, what: str = "condition") -> None:
    """Poll ``condition`` until true; fail after ``timeout_s`` (a bound, not a timing assertion)."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up after {timeout_s:.0f} s waiting for {what}")
        time.sleep(0.02)


async def wait_for_vectors(client: DaemonClient) -> None:
    """Wait (bounded) until the daemon's index is built and every item has its vector."""
    with anyio.fail_after(60):
        while True:
            status = await client.status()
            if status.index_ready and status.embedding_backlog == 0:
                return
            await anyio.sleep(0.05)


def raw_http(socket_path: Path, request: bytes, *, timeout_s: float = 30.0) -> bytes:
    """Send ``request`` (raw bytes, as written) over the daemon's unix socket and return the first
    answer, whole (by its Content-Length), or all that came before the daemon closed."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout_s)
        sock.connect(str(socket_path))
        sock.sendall(request)
        return read_answer(sock)


def read_answer(sock: socket.socket) -> bytes:
    """One HTTP answer from ``sock``, whole by its Content-Length (or up to the connection's end)."""
    answer = b""
    while chunk := sock.recv(65536):
        answer += chunk
        head, _, body = answer.partition(b"\r\n\r\n")
        length = [line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")]
        if length and len(body) >= int(length[0].split(b":")[1]):
            break
    return answer


def make_memory(memory_id: str, what: str, at: datetime, **fields: Any) -> Memory:
    """A distilled memory written by hand: an active decision in workspace:shop with no W but
    ``what``, no entities or sources, made, updated and valid from ``at``; ``fields`` override."""
    values: dict[str, Any] = {
        "id": memory_id,
        "version": 1,
        "type": MemoryType.DECISION,
        "status": MemoryStatus.ACTIVE,
        "namespace": "workspace:shop",
        "content": what,
        "what": what,
        "who": "",
        "when": "",
        "where": "",
        "why": "",
        "how": "",
        "entities": [],
        "sources": [],
        "origin": Origin.DISTILLED,
        "created_at": at,
        "updated_at": at,
        "valid_from": at,
    }
    return Memory(**{**values, **fields})
