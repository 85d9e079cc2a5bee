"""Writers killed mid-batch (SIGKILL) on a shared server: every batch still lands exactly once.

Each writer is a real process on the server (the test fixture of :mod:`tests.clickhouse_http`,
chDB behind ClickHouse's HTTP interface) that waits for the lease, then commits the batches not
yet in the store one by one with its heartbeat running, saying each one it starts. The test
kills it at a random moment inside one of those commits (before the rows are staged, between
staging and the fenced copy, or after), takes over itself once the lease expires, commits the
next batch, and starts another writer. Merges are stopped, so a batch committed twice would stay
visible as a second row. The fixture runs one query at a time; a real server's concurrency is not
shown.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from mnemo.distill.lease import WriterLease
from mnemo.store import ClickHouseStore, open_store
from tests.clickhouse_http import clickhouse_http_server
from tests.helpers import make_memory

BATCHES = [f"b{i:02d}" for i in range(24)]
TTL_S = 2.0  # the heartbeat renews every 0.4 s: a loaded machine's pauses stay well inside it
KILLS = 6
AT = datetime(2026, 12, 1, tzinfo=UTC)

_WRITER = """
import sys, time
from datetime import UTC, datetime
from mnemo.distill.lease import LeaseLostError, WriterLease
from mnemo.store import open_store
from tests.helpers import make_memory

url, name, batches = sys.argv[1], sys.argv[2], sys.argv[3:]
store = open_store(url)
lease = WriterLease(store, name, ttl_s=float({ttl}), settle_s=0.1)
at = datetime(2026, 12, 1, tzinfo=UTC)
while True:  # as the daemon's writer loop: a lost lease is waited for again, the batch redone
    while not lease.acquire():
        time.sleep(0.1)
    try:
        with lease.heartbeat():
            for batch in batches:
                if store.batch_applied(batch):
                    continue
                rows = [make_memory(f"mem-{{batch}}-{{k}}", f"{{batch}} by {{name}}", at) for k in range(3)]
                print("committing", batch, flush=True)
                lease.check()
                lease.commit(rows, batch=batch)
                print("committed", batch, flush=True)
                time.sleep(0.02)
        break
    except LeaseLostError as exc:
        print("lost", exc, flush=True)
print("all done", flush=True)
"""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, ClickHouseStore]]:
    with (
        tempfile.TemporaryDirectory(prefix="mnemo-ch-") as directory,
        clickhouse_http_server(Path(directory)) as url,
    ):
        store = open_store(url)
        store._db.command("SYSTEM STOP MERGES memories")
        try:
            yield url, store
        finally:
            store.close()


def _writer(url: str, name: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _WRITER.format(ttl=TTL_S), url, name, *BATCHES],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )


def _pending(store: ClickHouseStore) -> list[str]:
    return [b for b in BATCHES if not store.batch_applied(b)]


def test_writers_killed_mid_batch_leave_every_batch_committed_once(
    server: tuple[str, ClickHouseStore],
) -> None:
    url, store = server
    chance = random.Random(20261202)
    takeover = WriterLease(store, "test-takeover", ttl_s=TTL_S, settle_s=0.1)

    for kill in range(KILLS):
        child = _writer(url, f"writer-{kill}")
        assert child.stdout is not None
        starts = chance.randint(1, 3)
        seen = 0
        for line in child.stdout:
            seen += line.startswith("committing")
            if seen == starts:
                break
        time.sleep(chance.uniform(0, 0.03))  # somewhere inside that commit
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        child.stdout.close()
        batch = _pending(store)[0]
        rows = [make_memory(f"mem-{batch}-{k}", f"{batch} by test-takeover", AT) for k in range(3)]
        deadline = time.monotonic() + 10 * TTL_S
        while not takeover.acquire():  # the killed writer's lease runs out
            assert time.monotonic() < deadline
            time.sleep(0.1)
        takeover.commit(rows, batch=batch)

    final = _writer(url, "writer-last")  # waits out the takeover's lease, then finishes
    out, _ = final.communicate(timeout=120)
    assert final.returncode == 0 and "all done" in out
    assert _pending(store) == []
    rows = store._db.query("SELECT distill_batch, id, version FROM memories").result_rows
    per_key = Counter((str(b), str(i), int(v)) for b, i, v in rows)
    assert set(per_key.values()) == {1}, [k for k, n in per_key.items() if n > 1]
    assert {str(b) for b, _, _ in rows} == set(BATCHES) and len(rows) == 3 * len(BATCHES)
