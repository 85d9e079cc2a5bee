"""One writer at a time through 100 induced takeovers, on a real store (chDB).

Three writers share one lease. Each round the holder is made to fail in one of four ways — paused
between its check and its commit (a laptop lid closed), paused and committing before anyone took
over, its heartbeat stopped mid-work, gone after its check (a crash) — and the other two race for
the lease from two threads; whoever believes it holds the lease commits the round's batch, and the
one that failed commits too, late. The store must end with every batch's rows exactly once, each
from the writer that held the lease, and no writer may have been told its fenced-out commit
landed. Merges are stopped, so a double commit would stay visible as a second row. Then a claim
that becomes visible late (a test fixture around the store delays it): the writer that believed
it held the lease is fenced out from the moment it lands. (Killed processes mid-batch, on a
server: tests/daemon/test_lease_kills.py.)
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from datetime import UTC, datetime

import pytest

from mnemo.distill.lease import LeaseLostError, WriterLease
from mnemo.store import ClickHouseStore
from tests.helpers import make_memory

TTL_S = 0.8  # heartbeats every 160 ms: a stall of 640 ms (a slow chDB write) still keeps the lease
ROUNDS = 100
AT = datetime(2026, 12, 1, tzinfo=UTC)


def _rows(batch: str, writer: WriterLease) -> list:  # type: ignore[type-arg]
    return [make_memory(f"mem-{batch}-{k}", f"{batch} part {k} by {writer.holder}", AT) for k in range(2)]


def _race(contenders: list[WriterLease]) -> WriterLease:
    """The contenders claim at once, each from its own thread, until one holds the lease."""
    while True:
        won: list[bool] = [False] * len(contenders)

        def claim(i: int, won: list[bool] = won) -> None:
            won[i] = contenders[i].acquire()

        threads = [threading.Thread(target=claim, args=(i,)) for i in range(len(contenders))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sum(won) <= 1, "two writers hold the lease at once"
        if any(won):
            return contenders[won.index(True)]


def test_a_hundred_takeovers_commit_every_batch_once_by_its_holder(store: ClickHouseStore) -> None:
    store._db.command("SYSTEM STOP MERGES memories")
    writers = [WriterLease(store, f"daemon-{i}", ttl_s=TTL_S, settle_s=0.05) for i in range(3)]
    holder = writers[0]
    assert holder.acquire()
    landed: Counter[str] = Counter()
    expected: dict[str, str] = {}
    restarts = 0

    def commit(writer: WriterLease, batch: str) -> bool:
        try:
            writer.commit(_rows(batch, writer), batch=batch)
        except LeaseLostError:
            return False
        landed[batch] += 1
        expected[batch] = writer.holder
        return True

    for round_ in range(ROUNDS):
        batch, fault = f"b{round_:03d}", round_ % 4
        others = [w for w in writers if w is not holder]
        if fault == 2:  # working with a heartbeat: nobody can take the lease
            with holder.heartbeat():
                deadline = time.monotonic() + TTL_S * 1.5
                while time.monotonic() < deadline:
                    assert not any(w.acquire() for w in others)
                    time.sleep(TTL_S / 6)
        holder.check()
        time.sleep(TTL_S + 0.05)  # then the holder stalls: paused, heartbeat stopped, or dead
        if fault == 1:  # it wakes before anyone took over, and commits on an expired lease
            assert not commit(holder, batch)
        failed = holder
        holder = _race(others)
        assert commit(holder, batch)
        if fault in (0, 2):  # it wakes after the takeover, and commits
            assert not commit(failed, batch)
        if fault == 3:  # it died: a new daemon takes its place among the writers
            restarts += 1
            writers[writers.index(failed)] = WriterLease(
                store, f"daemon-r{restarts}", ttl_s=TTL_S, settle_s=0.05
            )
        with pytest.raises(LeaseLostError):
            failed.check()

    assert set(landed.values()) == {1} and len(landed) == ROUNDS
    rows = store._db.query("SELECT distill_batch, id, version, what FROM memories").result_rows
    per_key = Counter((str(b), str(i), int(v)) for b, i, v, _ in rows)
    assert set(per_key.values()) == {1}, "a memory version committed twice"
    assert {str(b) for b, _, _, _ in rows} == set(expected)
    for batch, _, _, what in rows:
        assert str(what).endswith(f"by {expected[str(batch)]}"), (batch, what)
    assert len(rows) == 2 * ROUNDS


class LateClaims:
    """A test fixture around the real store: lease claims from ``late`` become visible only
    ``delay_s`` after they are made (a replica behind, a slow insert), everything else at once."""

    def __init__(self, store: ClickHouseStore, late: str, delay_s: float) -> None:
        self._store, self._late, self._delay_s = store, late, delay_s
        self.pending: list[threading.Timer] = []

    def __getattr__(self, name: str) -> object:
        return getattr(self._store, name)

    def write_lease(self, name: str, holder: str, token: int, ttl_s: float) -> None:
        if holder != self._late:
            self._store.write_lease(name, holder, token, ttl_s)
            return
        timer = threading.Timer(self._delay_s, self._store.write_lease, (name, holder, token, ttl_s))
        self.pending.append(timer)
        timer.start()


def test_a_claim_that_lands_late_fences_out_the_writer_that_thought_it_held_the_lease(
    store: ClickHouseStore,
) -> None:
    # b's claim becomes visible only after both settle windows: a believes it holds the lease, b
    # believes it lost. Once b's claim lands it is the newest: a's commits are refused by the
    # store from then on, whatever a believes, and b takes the lease back on its next try.
    late = LateClaims(store, "daemon-b", delay_s=1.0)
    a = WriterLease(late, "daemon-a", ttl_s=5.0, settle_s=0.05)  # type: ignore[arg-type]
    b = WriterLease(late, "daemon-b", ttl_s=5.0, settle_s=0.05)  # type: ignore[arg-type]
    store.write_lease("writer", "daemon-gone", 1, 0.0)  # an expired holder: both may claim
    assert not b.acquire()  # b claims first; reading back, it sees the old holder: it lost
    assert a.acquire()  # a claims, and sees itself (b's claim is not visible yet)
    a.commit(_rows("b-early", a), batch="b-early")  # a holds it alone: this one lands
    for timer in late.pending:
        timer.join()
    with pytest.raises(LeaseLostError, match="nothing was written"):
        a.commit(_rows("b-late", a), batch="b-late")
    assert b.acquire()  # b's own claim is the lease: it renews it
    b.commit(_rows("b-late", b), batch="b-late")
    rows = store._db.query("SELECT distill_batch, what FROM memories FINAL ORDER BY id").result_rows
    assert {(str(batch), str(what).rsplit(" by ", 1)[1]) for batch, what in rows} == {
        ("b-early", "daemon-a"),
        ("b-late", "daemon-b"),
    }
    for timer in late.pending:  # b's renewal, late too, lands before the store closes
        timer.join()
