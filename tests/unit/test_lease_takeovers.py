"""One writer at a time through 100 induced takeovers, on a real store (chDB).

Three writers share one lease. Each round the holder is made to fail in one of four ways — paused
between its check and its commit (a laptop lid closed), paused and committing before anyone took
over, its heartbeat stopped mid-work, gone after its check (a crash) — and the other two race for
the lease from two threads; whoever believes it holds the lease commits the round's batch, and the
one that failed commits too, late. The store must end with every batch's rows exactly once, each
from the writer that held the lease, and no writer may have been told its fenced-out commit
landed. Merges are stopped, so a double commit would stay visible as a second row. (Killed
processes mid-batch, on a server: tests/daemon/test_lease_kills.py.)
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

TTL_S = 0.3
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
