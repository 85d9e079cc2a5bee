"""Team benchmark: several daemons on one ClickHouse server, how soon each sees the others' writes.

    uv run --frozen python -m tools.bench.bench_team [--daemons 3] [--writes 40] [--store URL]

Without ``--store`` the server is the test fixture (tests/clickhouse_http.py: chDB behind
ClickHouse's HTTP interface, one query at a time; no real server installs here), in a fresh
directory. Each daemon runs in its own fresh MNEMO_HOME, as on its own machine, with words-only
recall (no embedding model: the figure is the store's, not the model's). Printed, as a Markdown
table with the median and p95:

- staleness: a memory remembered through one daemon (the writers take turns), the time until
  every other daemon's recall returns it, asked every 20 ms through each daemon's own client;
  and an episode recorded through one, the time until every other daemon's ``recall_episode``
  (by query) returns it;
- the poll on an idle store: one poll's queries (the memory versions and the episodes committed
  since now), from this process;
- an idle daemon's CPU: its user + system time over ``--idle-s`` seconds with nothing written;
- a takeover (``--takeovers`` of them): a holder stops renewing; from its lease's expiry (by the
  server's clock) until the next holder's first batch is committed through the fence, with the
  contender trying every 5 s as the daemon's writer loop does (starting at a random phase), the
  real claim (its 0.5 s settle), the recovery check and a 3-row commit. A shortened 2 s lease
  stands in for the 5-minute one: the expiry itself comes at most 5 minutes after the dead
  holder's last renewal, and is not in the figure.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import anyio

from mnemo.api.recall import RecallEpisodeRequest, RecallRequest
from mnemo.client.launcher import stop_daemon
from mnemo.client.typed import DaemonClient
from mnemo.config import Settings, load_settings
from mnemo.daemon.distilling import POLL_S
from mnemo.distill.lease import WriterLease
from mnemo.episodes import EpisodeIn
from mnemo.memories import RememberRequest
from mnemo.store import open_store
from mnemo.vocabulary import MemoryType
from tools.bench.bench_store import fresh_home, percentile
from tools.stamp import stamp

NS = "workspace:bench"


@contextlib.contextmanager
def fixture_server() -> Iterator[str]:
    from tests.clickhouse_http import clickhouse_http_server

    with (
        tempfile.TemporaryDirectory(prefix="mnemo-bench-ch-") as directory,
        clickhouse_http_server(Path(directory)) as url,
    ):
        yield url


def daemon_settings(store: str, count: int) -> list[Settings]:
    """Fresh homes on ``store``, words-only recall."""
    made = []
    for _ in range(count):
        _, env, _ = fresh_home()
        env.update(MNEMO_STORE=store, MNEMO_EMBEDDER="none")
        made.append(load_settings(env))
    return made


async def staleness(settings: list[Settings], writes: int) -> tuple[list[float], list[float]]:
    """Seconds from a remember's answer until every other daemon recalls the memory; and from an
    episode's append until every other daemon's episode recall finds it."""
    waits: list[float] = []
    episode_waits: list[float] = []
    async with contextlib.AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(DaemonClient(s)) for s in settings]
        for client in clients:
            await client.ensure_started()
            while not (await client.status()).index_ready:
                await anyio.sleep(0.05)
        for i in range(writes):
            writer = clients[i % len(clients)]
            token = f"teamtoken{i:04d}x"
            memory = await writer.remember(
                RememberRequest(content=f"The {token} setting is on", type=MemoryType.FACT, namespace=NS)
            )
            written = time.perf_counter()
            for reader in clients:
                if reader is writer:
                    continue
                while True:
                    found = await reader.recall(RecallRequest(query=token, namespace=NS, limit=3))
                    if any(m.memory.id == memory.id for m in found.memories):
                        break
                    await anyio.sleep(0.02)
            waits.append(time.perf_counter() - written)
            said = f"episodetoken{i:04d}y"
            [appended] = await writer.append(
                [EpisodeIn(text=f"we turned {said} on today", session=f"bench-{i}", namespace=NS)]
            )
            recorded = time.perf_counter()
            for reader in clients:
                if reader is writer:
                    continue
                while True:
                    hits = await reader.recall_episodes(RecallEpisodeRequest(query=said, namespace=NS))
                    if any(h.episode.id == appended.id for h in hits.episodes):
                        break
                    await anyio.sleep(0.02)
            episode_waits.append(time.perf_counter() - recorded)
    return waits, episode_waits


def poll_query(store_url: str, repeats: int) -> list[float]:
    store = open_store(store_url)
    try:
        clock = store.store_clock()
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            store.memory_changes((clock, "", 0), 1_000)
            store.episode_changes((clock, ""), 1_000)
            times.append(time.perf_counter() - started)
        return times
    finally:
        store.close()


def takeovers(store_url: str, rounds: int) -> list[float]:
    """Seconds from a dead holder's expiry to the next holder's first fenced commit."""
    from tests.helpers import make_memory

    chance = random.Random(7)
    stores = [open_store(store_url), open_store(store_url)]
    try:
        leases = [WriterLease(store, f"bench-{i}", ttl_s=2.0) for i, store in enumerate(stores)]
        holder = 0
        while not leases[holder].acquire():
            time.sleep(0.5)
        out = []
        for n in range(rounds):
            dead, next_ = leases[holder], leases[1 - holder]
            assert dead.renew()
            current = stores[0].read_lease("writer")
            assert current is not None
            expires = time.perf_counter() + current.remaining_s  # the server's expiry, here
            time.sleep(chance.uniform(0, POLL_S))  # the contender's loop, at a random phase
            while not next_.acquire():
                time.sleep(POLL_S)
            stores[1 - holder].started_batches()  # the recovery's check on gaining the lease
            at = datetime.now(UTC)
            rows = [make_memory(f"mem-bench-{n}-{k}", f"takeover {n} row {k}", at) for k in range(3)]
            next_.commit(rows, batch=f"bench-takeover-{n}")
            out.append(time.perf_counter() - expires)
            holder = 1 - holder
        return out
    finally:
        for store in stores:
            store.close()


def daemon_cpu_s(settings: Settings, seconds: float) -> float:
    pid = int(settings.pid_path.read_text().split()[0])
    ticks = os.sysconf("SC_CLK_TCK")

    def cpu() -> float:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / ticks

    before = cpu()
    time.sleep(seconds)
    return cpu() - before


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--daemons", type=int, default=3)
    parser.add_argument("--writes", type=int, default=40)
    parser.add_argument("--idle-s", type=float, default=20.0)
    parser.add_argument("--takeovers", type=int, default=20)
    parser.add_argument("--store", default="", help="a ClickHouse server's DSN (default: the test fixture)")
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        url = args.store or stack.enter_context(fixture_server())
        settings = daemon_settings(url, args.daemons)
        try:
            waits, episode_waits = anyio.run(staleness, settings, args.writes)
            polls = poll_query(url, 200)
            idle = daemon_cpu_s(settings[0], args.idle_s)
            taken = takeovers(url, args.takeovers)
        finally:
            for s in settings:
                stop_daemon(s)
                if s.home is not None:
                    shutil.rmtree(s.home, ignore_errors=True)
    where = "a ClickHouse server" if args.store else "the test fixture (chDB behind the HTTP interface)"
    print(stamp())
    print(
        f"{args.daemons} daemons on {where}, store_poll_s {settings[0].store_poll_s:g}, "
        f"{args.writes} writes\n"
    )
    print("| measure | median | p95 |")
    print("|---|---|---|")
    print(
        "| staleness: remembered on one, recalled by all the others "
        f"| {statistics.median(waits) * 1000:,.0f} ms "
        f"| {percentile(waits, 0.95) * 1000:,.0f} ms |"
    )
    print(
        "| staleness: an episode recorded on one, found by every other's recall_episode "
        f"| {statistics.median(episode_waits) * 1000:,.0f} ms "
        f"| {percentile(episode_waits, 0.95) * 1000:,.0f} ms |"
    )
    print(
        f"| one poll's queries on an idle store | {statistics.median(polls) * 1000:.1f} ms "
        f"| {percentile(polls, 0.95) * 1000:.1f} ms |"
    )
    print(f"| an idle daemon's CPU | {idle / args.idle_s * 100:.2f} % of a core over {args.idle_s:g} s | |")
    print(
        f"| takeover: the dead holder's expiry to the next holder's first commit ({args.takeovers}) "
        f"| {statistics.median(taken):.2f} s | {percentile(taken, 0.95):.2f} s |"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
