"""Each indexed memory's current version, compressed, kept in an unnamed file rather than in RAM.

Recall answers with a few memories and reads them from here (one ``pread`` each, from the page
cache once read), so the whole store's copies need not sit in the daemon's heap: at a million
memories they were ~0.36 GB of its RSS as compressed bytes in a dict. What stays in RAM is each
key's place in the file, in arrays by the key's number in a :class:`~mnemo.index.keys.KeyTable`.

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
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from mnemo.index.keys import KeyTable, grown

_COMPACT_MIN_BYTES = 64 << 20


def _copy(source: int, target: int, length: int) -> None:
    """The first ``length`` bytes of file ``source`` to the start of file ``target`` (in the
    kernel where it can)."""
    copy_range = getattr(os, "copy_file_range", None)
    copied = 0
    while copied < length:
        if copy_range is not None:
            try:
                done = copy_range(source, target, length - copied, copied, copied)
            except OSError:
                copy_range = None  # another file system, or none of it: by hand
                continue
        else:
            chunk = os.pread(source, min(1 << 20, length - copied), copied)
            done = os.pwrite(target, chunk, copied)
        if done == 0:
            raise OSError(f"the file ended {length - copied:,} bytes early")
        copied += done


class Shelf:
    """Text by key, compressed, in a file; safe to use from several threads."""

    def __init__(self, directory: Path | None = None) -> None:
        if directory is not None:
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._directory = directory
        self._fd, self._closer = self._new_file()
        self._end = 0
        self._garbage = 0
        self._keys = KeyTable()  # each key once: its number is where its place is
        self._offsets = np.zeros(0, dtype=np.int64)
        self._lengths = np.zeros(0, dtype=np.uint32)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._keys)

    def put(self, key: str, value: str) -> None:
        """Keep ``value`` (text, kept compressed) under ``key``, replacing what it had."""
        self.put_many([(key, value)])

    def put_many(self, items: Sequence[tuple[str, str]]) -> None:
        """``put`` each (key, value), in order: of a key given twice, the last value is kept."""
        payloads = [zlib.compress(value.encode(), 1) for _, value in items]
        for (key, _), payload in zip(items, payloads, strict=True):
            if len(payload) >= 1 << 32:
                raise ValueError(f"{key}: a text of {len(payload):,} bytes compressed is too long to keep")
        if not items:
            return
        keys = [key for key, _ in items]
        with self._lock:
            os.pwrite(self._fd, b"".join(payloads), self._end)
            known = self._keys.numbers(keys).tolist()
            new = {k: None for k, n in zip(keys, known, strict=True) if n < 0}  # in order, once each
            first = len(self._keys)
            self._keys.append(list(new))
            self._offsets = grown(self._offsets, first, len(self._keys))
            self._lengths = grown(self._lengths, first, len(self._keys))
            numbered = {k: first + i for i, k in enumerate(new)}
            written: set[int] = set()
            for key, held, payload in zip(keys, known, payloads, strict=True):
                number = held if held >= 0 else numbered[key]
                if number < first or number in written:  # what it held becomes garbage
                    self._garbage += int(self._lengths[number])
                written.add(number)
                self._offsets[number], self._lengths[number] = self._end, len(payload)
                self._end += len(payload)
            if self._garbage > max(_COMPACT_MIN_BYTES, self._end - self._garbage):
                self._compact()

    def settle(self) -> None:
        """After a large load: keys sorted for lookup, spare room given back."""
        with self._lock:
            self._keys.settle()
            self._offsets = self._offsets[: len(self._keys)].copy()
            self._lengths = self._lengths[: len(self._keys)].copy()

    def get(self, key: str) -> str | None:
        with self._lock:  # a compaction swaps the file and every place at once
            number = self._keys.get(key)
            if number is None:
                return None
            payload = os.pread(self._fd, int(self._lengths[number]), int(self._offsets[number]))
        return zlib.decompress(payload).decode()

    def save(self, path: Path) -> dict[str, np.ndarray]:
        """Copy the file to ``path`` (0600; the caller names it) and give the places in it:
        what :meth:`restored` reads back (:mod:`mnemo.index.image`)."""
        with self._lock:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                _copy(self._fd, fd, self._end)
                os.fsync(fd)
            finally:
                os.close(fd)
            data, ends = self._keys.arrays()
            size = len(self._keys)
            return {
                "key_bytes": data.copy(),
                "key_ends": ends.copy(),
                "offsets": self._offsets[:size].copy(),
                "lengths": self._lengths[:size].copy(),
                "end_garbage": np.asarray([self._end, self._garbage], dtype=np.int64),
            }

    @classmethod
    def restored(cls, directory: Path | None, path: Path, arrays: dict[str, np.ndarray]) -> Shelf:
        """A shelf holding what :meth:`save` copied to ``path`` (copied again into its own file)."""
        shelf = cls(directory)
        keys = KeyTable.restored(arrays["key_bytes"], arrays["key_ends"])
        offsets, lengths = arrays["offsets"].astype(np.int64), arrays["lengths"].astype(np.uint32)
        end, garbage = (int(v) for v in arrays["end_garbage"])
        if len(offsets) != len(keys) or len(lengths) != len(keys):
            raise ValueError("the shelf's places differ from its keys")
        if len(keys) and (int(offsets.min()) < 0 or int((offsets + lengths).max()) > end):
            raise ValueError("a place past the end of the shelf's file")
        with path.open("rb") as source:
            if os.fstat(source.fileno()).st_size != end:
                raise ValueError("the shelf's file is not the size saved")
            _copy(source.fileno(), shelf._fd, end)
        shelf._keys, shelf._offsets, shelf._lengths = keys, offsets, lengths
        shelf._end, shelf._garbage = end, garbage
        return shelf

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
        for number in range(len(self._keys)):
            length = int(self._lengths[number])
            os.pwrite(fd, os.pread(self._fd, length, int(self._offsets[number])), end)
            self._offsets[number] = end
            end += length
        self._closer()
        self._fd, self._closer, self._end, self._garbage = fd, closer, end, 0

    def close(self) -> None:
        self._closer()
