"""The writer lease: only its holder distils and judges ("one writer per database").

On the embedded store only one process can open the store, so its daemon always holds the lease.
Against a ClickHouse server several daemons share the store; the lease is a row with a holder, an
expiry and a fencing token. ClickHouse has no compare-and-swap, so a claim is: read the lease; if it
is free (expired) or ours, write a claim (the token goes up by one when the holder changes); wait
``SETTLE_S`` for concurrent claims to land; read back — the newest row wins, and a claimant that
does not see itself there has lost.

Time is the **store's**: a claim's expiry is the server's clock plus the TTL, its row's version the
server's clock when it is inserted, and whether a lease is live is asked of the server — so a
daemon whose clock runs fast or slow neither blocks the lease for longer nor loses "newest row
wins". While the holder works (extraction and judging alike), :meth:`WriterLease.heartbeat`
renews it from a thread every ``ttl / 5``; the holder checks it before each commit, and the commit
itself is fenced by the store (:meth:`WriterLease.commit`): the batch's rows are staged, then
copied into memories by one query that copies them only while the lease is still this writer's.
A writer that lost the lease — it stalled past the expiry, or paused between its check and its
commit (a laptop put to sleep), and another daemon took over — raises :class:`LeaseLostError`
and has written nothing.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from mnemo.errors import MnemoError
from mnemo.memories import Memory
from mnemo.store import Store

logger = logging.getLogger(__name__)
NAME = "writer"
# A dead writer's work moves to another daemon after at most this long; a live one renews it every
# fifth of it, extraction or not.
TTL_S = 300.0
SETTLE_S = 0.5


class LeaseLostError(MnemoError):
    """Another daemon holds the writer lease; this one must not write."""


class WriterLease:
    def __init__(
        self, store: Store, holder: str | None = None, ttl_s: float = TTL_S, settle_s: float = SETTLE_S
    ) -> None:
        self._store = store
        self.holder = holder or f"{socket.gethostname()}:{os.getpid()}:{os.urandom(3).hex()}"
        self.ttl_s = ttl_s
        self._settle_s = settle_s
        self.token: int | None = None
        self._lock = threading.Lock()  # the heartbeat's thread and the writer's

    def acquire(self) -> bool:
        """Claim or renew the lease; True if this writer holds it now."""
        with self._lock:
            return self._acquire(force_renew=False)

    def renew(self) -> bool:
        """Renew a lease this writer holds, whatever time it has left; False if it is lost."""
        with self._lock:
            return self.token is not None and self._acquire(force_renew=True)

    def _acquire(self, *, force_renew: bool) -> bool:
        current = self._store.read_lease(NAME)
        if current is not None and current.holder != self.holder and current.remaining_s > 0:
            self.token = None
            return False
        is_ours = current is not None and current.holder == self.holder and current.token == self.token
        if is_ours and not force_renew and current is not None and current.remaining_s > self.ttl_s / 2:
            return True  # renewed recently enough
        token = (
            current.token
            if current is not None and current.holder == self.holder
            else ((current.token if current is not None else 0) + 1)
        )
        self._store.write_lease(NAME, self.holder, token, self.ttl_s)
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
            or current.remaining_s <= 0
        ):
            self.token = None
            holder = current.holder if current is not None and current.remaining_s > 0 else "nobody"
            raise LeaseLostError(f"the writer lease is held by {holder}, not by this daemon ({self.holder})")

    def commit(self, rows: Sequence[Memory], *, batch: str) -> None:
        """A batch's memory rows, committed through the store's fence: copied in only if this
        writer's lease is still current when the store runs the copy. LeaseLostError otherwise."""
        lease = (NAME, self.holder, self.token or 0)
        if not self._store.put_memories_fenced(rows, batch=batch, lease=lease):
            self.token = None
            raise LeaseLostError(
                f"the writer lease moved on before {self.holder}'s commit; nothing was written"
            )

    @contextmanager
    def heartbeat(self) -> Iterator[None]:
        """Renew the lease every ``ttl / 5`` from a thread while the block runs (a long extraction
        on a CPU model keeps it). A renewal that finds the lease lost stops the heartbeat; the
        writer's next check raises."""
        stop = threading.Event()

        def beat() -> None:
            while not stop.wait(self.ttl_s / 5):
                try:
                    if not self.renew():
                        logger.warning("the writer lease was lost while %s worked", self.holder)
                        return
                except MnemoError as exc:
                    logger.warning("renewing the writer lease failed: %s", exc)

        thread = threading.Thread(target=beat, name="mnemo-lease-heartbeat", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()
