"""Progress of long work (an import, a download) on stderr."""

from __future__ import annotations

import time
from typing import TextIO


class ProgressBar:
    """A one-line progress bar on stderr (one line per 10 % when stderr is not a terminal)."""

    def __init__(self, stream: TextIO, label: str = "") -> None:
        self._stream = stream
        self._label = label
        self._started = time.monotonic()
        self._is_tty = stream.isatty()
        self._last_percent = -10

    def show(self, done: int, total: int, detail: str) -> None:
        percent = 100 if total == 0 else int(100 * done / total)
        bar = "#" * (percent // 4) + "." * (25 - percent // 4)
        text = f"{self._label} [{bar}] {percent:3d}%  {detail}".lstrip()
        if self._is_tty:
            self._stream.write("\r" + text)
        elif percent >= self._last_percent + 10 or percent == 100 or percent < self._last_percent:
            self._stream.write(text + "\n")
            self._last_percent = percent
        self._stream.flush()

    def update(self, lines: int, done_bytes: int, total_bytes: int) -> None:
        """The import's progress: bytes read of the file, lines and lines per second."""
        elapsed = max(time.monotonic() - self._started, 1e-6)
        self.show(done_bytes, total_bytes, f"{lines:,} lines  {lines / elapsed:,.0f} lines/s")

    def close(self) -> None:
        if self._is_tty:
            self._stream.write("\n")
