"""The writer lease: only its holder distils and judges ("one writer per database").

On the embedded store only one process can open the store, so its daemon always holds the lease.
Against a ClickHouse server several daemons share the store; the lease is a row with a holder, an
expiry and a fencing token. ClickHouse has no compare-and-swap, so a claim is: read the lease; if it
is free (expired) or ours, write a claim (the token goes up by one when the holder changes); wait
``SETTLE_S`` for concurrent claims to land; read back — the newest row wins, and a claimant that
does not see itself there has lost. The holder renews it well before it expires, and checks it
right before each commit: a writer that lost the lease (it stalled past the expiry and another
daemon took over) raises :class:`LeaseLostError` before writing anything.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from datetime import datetime, timedelta

from mnemo.clock import utc_now
from mnemo.errors import MnemoError
from mnemo.store import Store
from mnemo.store.distill import Lease

NAME = "writer"
# Long enough for one memory's judging on a slow local model (up to 11 calls of ~7 s), renewed
# before each; a dead writer's work moves to another daemon after at most this long.
TTL = timedelta(minutes=5)
SETTLE_S = 0.5


class LeaseLostError(MnemoError):
    """Another daemon holds the writer lease; this one must not write."""


class WriterLease:
    def __init__(
        self,
        store: Store,
        holder: str | None = None,
        clock: Callable[[], datetime] = utc_now,
        settle_s: float = SETTLE_S,
    ) -> None:
        self._store = store
        self.holder = holder or f"{socket.gethostname()}:{os.getpid()}:{os.urandom(3).hex()}"
        self._clock = clock
        self._settle_s = settle_s
        self.token: int | None = None

    def acquire(self) -> bool:
        """Claim or renew the lease; True if this writer holds it now."""
        now = self._clock()
        current = self._store.read_lease(NAME)
        if current is not None and current.holder != self.holder and current.expires_at > now:
            self.token = None
            return False
        is_ours = current is not None and current.holder == self.holder and current.token == self.token
        if is_ours and current is not None and current.expires_at - now > TTL / 2:
            return True  # renewed recently enough
        token = (
            current.token
            if current is not None and current.holder == self.holder
            else ((current.token if current is not None else 0) + 1)
        )
        self._store.write_lease(NAME, Lease(self.holder, token, now + TTL))
        if current is None or current.holder != self.holder:
            time.sleep(self._settle_s)  # let a concurrent claim land before reading who won
        won = self._store.read_lease(NAME)
        self.token = token if won is not None and won.holder == self.holder and won.token == token else None
        return self.token is not None

    def check(self) -> None:
        """Raise LeaseLostError unless this writer still holds the lease (call before a commit)."""
        current = self._store.read_lease(NAME)
        if (
            self.token is None
            or current is None
            or current.holder != self.holder
            or current.token != self.token
            or current.expires_at <= self._clock()
        ):
            self.token = None
            holder = current.holder if current is not None else "nobody"
            raise LeaseLostError(f"the writer lease is held by {holder}, not by this daemon ({self.holder})")
