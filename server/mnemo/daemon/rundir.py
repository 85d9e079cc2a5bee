"""The run directory: created 0700 and owned by the user, with the locks and pid file in it.

uvicorn creates the unix socket with mode 0666; the directory's mode is what keeps other users
out, so it is checked every time it is used, not only when created.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mnemo.errors import ConfigError, DaemonError
from mnemo.paths import is_locked, try_lock

__all__ = ["accepts_connections", "ensure_private_dir", "held_lock", "is_locked", "read_pid", "try_lock"]


def ensure_private_dir(path: Path) -> None:
    """Create ``path`` with mode 0700, or tighten it; refuse a directory owned by someone else."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = path.stat()
    if info.st_uid != os.getuid():
        raise ConfigError(f"{path} belongs to uid {info.st_uid}, not to you; mnemo will not use it")
    if info.st_mode & 0o077:
        path.chmod(0o700)


@contextmanager
def held_lock(path: Path, *, timeout_s: float) -> Iterator[None]:
    """Hold an exclusive lock on ``path``, waiting at most ``timeout_s`` for it."""
    deadline = time.monotonic() + timeout_s
    while (fd := try_lock(path)) is None:
        if time.monotonic() > deadline:
            raise DaemonError(
                f"waited {timeout_s:.0f} s for the lock {path}; another client is stuck starting"
            )
        time.sleep(0.02)
    try:
        yield
    finally:
        os.close(fd)


def read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (FileNotFoundError, ValueError):
        return None


def accepts_connections(socket_path: Path, *, timeout_s: float) -> bool:
    """Whether something listens on the unix socket at ``socket_path``."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(timeout_s)
        try:
            probe.connect(str(socket_path))
        except OSError:
            return False
    return True
