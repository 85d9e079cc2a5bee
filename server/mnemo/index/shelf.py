"""Each indexed memory's current version, compressed, kept in an unnamed file rather than in RAM.

Recall answers with a few memories and reads them from here (one ``pread`` each, from the page
cache once read), so the whole store's copies need not sit in the daemon's heap. What stays in
RAM is each text's place in the file, in two arrays by number: the row of the search index that
owns the shelf (:class:`~mnemo.index.engine.SearchIndex`), so it needs no table of keys beside
the rows' (docs/benchmarks/recall.md, "Memory at a million", says what each takes).

The file is unlinked as soon as it is created, in the directory given — the daemon's
index directory, private to the user — so nothing is left behind when the process ends, however
it ends, and no other process can open it by name. A new version is appended; the old one becomes
garbage (as does a dropped number's text), and once the garbage outweighs what is live (and
passes ``_COMPACT_MIN_BYTES``), the live versions are copied to a fresh file.
"""

from __future__ import annotations

import os
import tempfile
import threading
import weakref
import zlib
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from mnemo.index.keys import grown

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
    """Text by number, compressed, in a file; safe to use from several threads."""

    def __init__(self, directory: Path | None = None) -> None:
        if directory is not None:
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        self._directory = directory
        self._fd, self._closer = self._new_file()
        self._end = 0
        self._garbage = 0
        self._held = 0  # numbers holding a text (a length of 0 holds none: zlib never gives 0 bytes)
        self._offsets = np.zeros(0, dtype=np.int64)
        self._lengths = np.zeros(0, dtype=np.uint32)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        """How many numbers hold a text."""
        return self._held

    def put(self, number: int, value: str) -> None:
        """Keep ``value`` (text, kept compressed) under ``number``, replacing what it had."""
        self.put_many([(number, value)])

    def put_many(self, items: Sequence[tuple[int, str]]) -> None:
        """``put`` each (number, value), in order: of a number given twice, the last value is kept."""
        payloads = [zlib.compress(value.encode(), 1) for _, value in items]
        for (number, _), payload in zip(items, payloads, strict=True):
            if number < 0:
                raise ValueError(f"no place for a text under {number}")
            if len(payload) >= 1 << 32:
                raise ValueError(f"{number}: a text of {len(payload):,} bytes compressed is too long to keep")
        if not items:
            return
        with self._lock:
            os.pwrite(self._fd, b"".join(payloads), self._end)
            size = max(number for number, _ in items) + 1
            self._offsets = grown(self._offsets, len(self._offsets), size)
            self._lengths = grown(self._lengths, len(self._lengths), size)
            for (number, _), payload in zip(items, payloads, strict=True):
                self._release(number)
                self._offsets[number], self._lengths[number] = self._end, len(payload)
                self._held += 1
                self._end += len(payload)
            self._compact_if_mostly_garbage()

    def drop(self, numbers: Iterable[int]) -> None:
        """Forget the texts of ``numbers`` (those holding none are skipped)."""
        with self._lock:
            for number in numbers:
                self._release(number)
            self._compact_if_mostly_garbage()

    def settle(self) -> None:
        """After a large load: spare room given back."""
        with self._lock:
            size = self._used()
            self._offsets = self._offsets[:size].copy()
            self._lengths = self._lengths[:size].copy()

    def get(self, number: int) -> str | None:
        with self._lock:  # a compaction swaps the file and every place at once
            if not 0 <= number < len(self._lengths) or not self._lengths[number]:
                return None
            payload = os.pread(self._fd, int(self._lengths[number]), int(self._offsets[number]))
        return zlib.decompress(payload).decode()

    def holds(self, numbers: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
        """Whether each of ``numbers`` holds a text."""
        with self._lock:
            inside = (numbers >= 0) & (numbers < len(self._lengths))
            held = np.zeros(len(numbers), dtype=bool)
            held[inside] = self._lengths[numbers[inside]] > 0
            return held

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
            size = self._used()
            return {
                "offsets": self._offsets[:size].copy(),
                "lengths": self._lengths[:size].copy(),
                "end_garbage": np.asarray([self._end, self._garbage], dtype=np.int64),
            }

    @classmethod
    def restored(cls, directory: Path | None, path: Path, arrays: dict[str, np.ndarray]) -> Shelf:
        """A shelf holding what :meth:`save` copied to ``path`` (copied again into its own file)."""
        shelf = cls(directory)
        offsets, lengths = arrays["offsets"].astype(np.int64), arrays["lengths"].astype(np.uint32)
        end, garbage = (int(v) for v in arrays["end_garbage"])
        if len(offsets) != len(lengths):
            raise ValueError("the shelf's places and lengths differ in number")
        if len(offsets) and (int(offsets.min()) < 0 or int((offsets + lengths).max()) > end):
            raise ValueError("a place past the end of the shelf's file")
        with path.open("rb") as source:
            if os.fstat(source.fileno()).st_size != end:
                raise ValueError("the shelf's file is not the size saved")
            _copy(source.fileno(), shelf._fd, end)
        shelf._offsets, shelf._lengths = offsets, lengths
        shelf._end, shelf._garbage, shelf._held = end, garbage, int(np.count_nonzero(lengths))
        return shelf

    @property
    def garbage(self) -> int:
        """Bytes of texts replaced or dropped since the file was last written afresh."""
        return self._garbage

    def _used(self) -> int:
        """One past the highest number holding a text (under the lock)."""
        return int(np.flatnonzero(self._lengths)[-1]) + 1 if self._held else 0

    def _release(self, number: int) -> None:
        """The text ``number`` holds, if any, becomes garbage (under the lock)."""
        if number < len(self._lengths) and self._lengths[number]:
            self._garbage += int(self._lengths[number])
            self._lengths[number] = 0
            self._held -= 1

    def _new_file(self) -> tuple[int, weakref.finalize[[int], Shelf]]:
        """A new unnamed file (0600), and what closes it when the shelf goes."""
        fd, name = tempfile.mkstemp(prefix="shelf-", dir=self._directory)
        os.unlink(name)
        return fd, weakref.finalize(self, os.close, fd)

    def _compact_if_mostly_garbage(self) -> None:
        """Copy the live texts to a fresh file once garbage outweighs them (under the lock)."""
        if self._garbage <= max(_COMPACT_MIN_BYTES, self._end - self._garbage):
            return
        fd, closer = self._new_file()
        end = 0
        for number in np.flatnonzero(self._lengths).tolist():
            length = int(self._lengths[number])
            os.pwrite(fd, os.pread(self._fd, length, int(self._offsets[number])), end)
            self._offsets[number] = end
            end += length
        self._closer()
        self._fd, self._closer, self._end, self._garbage = fd, closer, end, 0

    def close(self) -> None:
        self._closer()
