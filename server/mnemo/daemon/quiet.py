"""When the background store work runs: once the hooks' questions have gone quiet.

A host waits on a hook; the daemon writes what the hook recorded (the prompt's episode, the rows
of what it injected) after answering. Started the moment a hook answers, that work shares two
cores with the next hook: with prompts back to back, the daemon's answer took 35 ms p50 and 88 ms
p95 against 16 and 32 ms with prompts 300 ms apart (10k memories, docs/benchmarks/surfaces.md).
So each background writer waits until no question has come for ``QUIET_S``, but never longer than
``LONGEST_S``, and not at all once someone waits for what it writes. Meanwhile episodes are
durable in the journal; the rows are held in memory only (a crash loses those of the last
seconds, as it lost those of the last insert before). The passages' vectors wait on the same
clock by the embedder's own rule (:mod:`mnemo.daemon.indexing`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from contextlib import contextmanager

import anyio

QUIET_S = 0.3  # background work waits this long after the last question
LONGEST_S = 2.0  # and no longer than this, however often questions come


class QuietGate:
    """The questions' clock, which the background writers wait on."""

    def __init__(self, quiet_s: float = QUIET_S, longest_s: float = LONGEST_S) -> None:
        self.quiet_s = quiet_s
        self.longest_s = longest_s
        self._last = -math.inf

    def asked(self) -> None:
        """A question came (a hook's or a tool's recall)."""
        self._last = time.monotonic()

    def quiet_for(self) -> float:
        """Seconds since the last question."""
        return time.monotonic() - self._last

    def writer(self) -> QuietWriter:
        """A background writer's own wait on this clock (hurried apart from the others')."""
        return QuietWriter(self)


class QuietWriter:
    """One background writer's wait: on the gate's clock, unless someone waits for what it writes."""

    def __init__(self, gate: QuietGate) -> None:
        self._gate = gate
        self._hurried = 0
        self._hurry = anyio.Event()  # set while someone is inside hurried()

    @contextmanager
    def hurried(self) -> Iterator[None]:
        """While inside, this writer does not wait: someone is waiting for what it writes."""
        self._hurried += 1
        self._hurry.set()
        try:
            yield
        finally:
            self._hurried -= 1
            if not self._hurried:
                self._hurry = anyio.Event()

    async def wait(self) -> None:
        """Return once no question has come for the gate's ``quiet_s``, ``longest_s`` from now at
        most, or as soon as someone hurries this writer."""
        deadline = time.monotonic() + self._gate.longest_s
        while not self._hurried:
            left = min(self._gate.quiet_s - self._gate.quiet_for(), deadline - time.monotonic())
            if left <= 0:
                return
            with anyio.move_on_after(left):
                await self._hurry.wait()
