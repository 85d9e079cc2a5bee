"""The episode journal: hooks are acknowledged once their episodes are on disk here, not in the store.

A hook waits for the daemon's answer, and a store insert costs it far more than an append plus
``fdatasync`` to this file. So a hook's episodes are written here first (one JSON line
each), acknowledged, and committed to the store in the background by the episode writer. The file
is emptied whenever every episode written to it is committed; a daemon that stops before that
replays it at start (appends are idempotent by episode id, so replaying twice stores nothing
twice). A line cut short by a crash is skipped and logged: it was never acknowledged.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path

from pydantic import ValidationError

from mnemo.episodes import Episode

logger = logging.getLogger(__name__)


class EpisodeJournal:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self._pending = 0  # episodes in the file not committed to the store yet

    @property
    def pending(self) -> int:
        return self._pending

    def close(self) -> None:
        os.close(self._fd)

    def write(self, episodes: list[Episode]) -> None:
        """Append ``episodes`` durably (returns after fdatasync)."""
        data = b"".join(e.model_dump_json().encode() + b"\n" for e in episodes)
        with self._lock:
            _write_all(self._fd, data)
            os.fdatasync(self._fd)
            self._pending += len(episodes)

    def committed(self, count: int) -> None:
        """``count`` journaled episodes are in the store; empty the file once none is left."""
        with self._lock:
            self._pending -= count
            if self._pending <= 0:
                self._pending = 0
                os.ftruncate(self._fd, 0)

    def replay(self) -> list[Episode]:
        """The episodes a stopped daemon left uncommitted; they count as pending until committed."""
        found = []
        with self._lock:
            data = self.path.read_bytes()
            whole = data.rfind(b"\n") + 1
            if whole < len(data):  # a line cut off by a crash (never acknowledged): drop it, so
                os.ftruncate(self._fd, whole)  # that the next line does not land on its tail
                logger.warning("%s: a cut-off last line (never acknowledged) dropped", self.path)
            for number, line in enumerate(data[:whole].splitlines(), 1):
                try:
                    found.append(Episode.model_validate_json(line))
                except ValidationError:
                    logger.warning("%s:%d: an unreadable line skipped", self.path, number)
            self._pending += len(found)
        return found


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
