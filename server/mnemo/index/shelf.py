"""Each indexed memory's current version, compressed, kept in an unnamed file rather than in RAM.

Recall answers with a few memories and reads them from here (one ``pread`` each, from the page
cache once read), so the whole store's copies need not sit in the daemon's heap: at a million
memories they were ~0.36 GB of its RSS as compressed bytes in a dict. What stays in RAM is each
key's place in the file, packed in one int.

The file is unlinked as soon as it is created, in the directory given — the daemon's
index directory, private to the user — so nothing is left behind when the process ends, however
it ends, and no other process can open it by name. A new version is appended; the old one becomes
garbage, and once the garbage outweighs what is live (and passes ``_COMPACT_MIN_BYTES``), the live
versions are copied to a fresh file.
"""

from __future__ import annotations

import os
import tempfile
import threading
import weakref
import zlib
from pathlib import Path

_LENGTH_BITS = 32
_LENGTH_MASK = (1 << _LENGTH_BITS) - 1
_COMPACT_MIN_BYTES = 64 << 20


class Shelf:
    """Text by key, compressed, in a file; safe to use from several threads."""

    def __init__(self, directory: Path | None = None) -> None:
        if directory is not None:
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._directory = directory
        self._fd, self._closer = self._new_file()
        self._end = 0
        self._garbage = 0
        self._where: dict[str, int] = {}  # key -> offset << 32 | length
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._where)

    def put(self, key: str, value: str) -> None:
        """Keep ``value`` (text, kept compressed) under ``key``, replacing what it had."""
        payload = zlib.compress(value.encode(), 1)
        with self._lock:
            os.pwrite(self._fd, payload, self._end)
            old = self._where.get(key)
            if old is not None:
                self._garbage += old & _LENGTH_MASK
            self._where[key] = self._end << _LENGTH_BITS | len(payload)
            self._end += len(payload)
            if self._garbage > max(_COMPACT_MIN_BYTES, self._end - self._garbage):
                self._compact()

    def get(self, key: str) -> str | None:
        with self._lock:  # a compaction swaps the file and every place at once
            where = self._where.get(key)
            if where is None:
                return None
            payload = os.pread(self._fd, where & _LENGTH_MASK, where >> _LENGTH_BITS)
        return zlib.decompress(payload).decode()

    @property
    def garbage(self) -> int:
        """Bytes of versions replaced since the file was last written afresh."""
        return self._garbage

    def _new_file(self) -> tuple[int, weakref.finalize[[int], Shelf]]:
        """A new unnamed file (0600), and what closes it when the shelf goes."""
        fd, name = tempfile.mkstemp(prefix="shelf-", dir=self._directory)
        os.unlink(name)
        return fd, weakref.finalize(self, os.close, fd)

    def _compact(self) -> None:
        """Copy the live versions to a fresh file (under the lock)."""
        fd, closer = self._new_file()
        end = 0
        for key, where in self._where.items():
            length = where & _LENGTH_MASK
            os.pwrite(fd, os.pread(self._fd, length, where >> _LENGTH_BITS), end)
            self._where[key] = end << _LENGTH_BITS | length
            end += length
        self._closer()
        self._fd, self._closer, self._end, self._garbage = fd, closer, end, 0

    def close(self) -> None:
        self._closer()
