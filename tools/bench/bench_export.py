"""Export and import benchmark, and what keeping every memory version costs a write.

    uv run --frozen python -m tools.bench.bench_export [--memories 20000] [--writes 300]

1. A store of ``--memories`` memories (a fifth of them with a second version, a closed or
   forgotten one) and one note episode each is written directly, then, through the real CLI and
   daemon: ``mnemo export`` JSONL and Markdown with history and episodes; ``mnemo import
   --memories`` of each into an empty store, then again (all present); an export of the restored
   store, compared byte for byte with the first.
2. The memory-history view (migration 13) on the write path: ``--writes`` single-memory inserts
   (what a remember or a review step writes) and bulk inserts of 500, into a store with the view
   and one whose view was dropped, interleaved, median and p95.

Everything runs in fresh MNEMO_HOMEs under /tmp on the embedded store. Prints Markdown tables.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from mnemo.client.launcher import stop_daemon
from mnemo.config import Settings, load_settings
from mnemo.episodes import EpisodeIn, EpisodeIntake, EpisodeKind
from mnemo.memories import EntityRef, Memory, Origin, forgotten
from mnemo.secrets import SecretRedactor
from mnemo.store import open_store
from mnemo.store.migrations import MIGRATIONS
from mnemo.vocabulary import MemoryStatus, MemoryType
from tools.stamp import stamp

BIN = Path(sys.executable).parent
WORDS = "gateway timeout balancer deploy thursday staging cluster migration schema index vector judge".split()
AT = datetime(2026, 11, 1, tzinfo=UTC)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def fresh_home() -> tuple[Path, dict[str, str], Settings]:
    home = Path(tempfile.mkdtemp(prefix="mnemo-bench-", dir="/tmp"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_")}
    env.update(MNEMO_HOME=str(home), MNEMO_DAEMON_IDLE_S="600", MNEMO_PERSON="bench", MNEMO_EMBEDDER="none")
    return home, env, load_settings(env)


def memory(i: int, version: int = 1) -> Memory:
    text = " ".join(WORDS[(i * 5 + k) % len(WORDS)] for k in range(12)) + f" #{i}"
    return Memory(
        id=f"mem_bench_{i:07d}", version=version, type=list(MemoryType)[i % len(MemoryType)],
        status=MemoryStatus.ACTIVE, namespace=f"workspace:bench/{i % 4}", content=text, what=text,
        who="", when="", where="", why="because the benchmark says so" if i % 3 == 0 else "", how="",
        entities=[EntityRef(name=WORDS[i % len(WORDS)], role="subject")], sources=[f"ep_bench_{i:07d}"],
        origin=Origin.DISTILLED, created_at=AT + timedelta(seconds=i), updated_at=AT + timedelta(seconds=i),
        valid_from=AT, confidence=0.8, seen_count=1,
    )  # fmt: skip


def seed(settings: Settings, count: int) -> None:
    store = open_store(settings.store)
    try:
        intake = EpisodeIntake(
            max_chars=10_000, default_namespace="workspace:bench/0", redactor=SecretRedactor()
        )
        for start in range(0, count, 5_000):
            numbers = range(start, min(count, start + 5_000))
            store.append_episodes(
                [
                    intake.accept(
                        EpisodeIn(id=f"ep_bench_{i:07d}", text=memory(i).content, kind=EpisodeKind.NOTE)
                    )
                    for i in numbers
                ]
            )
            store.put_memories([memory(i) for i in numbers], batch="batch_bench")
            store.put_memories([forgotten(memory(i), "benchmark") for i in numbers if i % 5 == 0])
    finally:
        store.close()


def timed(env: dict[str, str], *args: str) -> float:
    started = time.perf_counter()
    subprocess.run([str(BIN / "mnemo"), *args], env=env, check=True, capture_output=True)
    return time.perf_counter() - started


def bench_exchange(count: int, rows: list[tuple[str, str, str]]) -> None:
    home, env, settings = fresh_home()
    target, target_env, target_settings = fresh_home()
    try:
        seed(settings, count)
        timed(env, "status")  # the daemon up, its index built
        files = {fmt: home / f"export.{ext}" for fmt, ext in (("jsonl", "jsonl"), ("markdown", "md"))}
        for fmt, path in files.items():
            took = timed(env, "export", str(path), "--with-history", "--with-episodes", "--quiet")
            size = path.stat().st_size / 1e6
            label = f"`mnemo export` {fmt}, with history and episodes"
            rows.append((label, f"{count / took:,.0f} memories/s", f"{took:.1f} s, {size:,.1f} MB"))
        for fmt, path in files.items():
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir()
            timed(target_env, "status")  # the daemon up: its start is not the import's
            first = timed(target_env, "import", "--memories", str(path), "--quiet")
            again = timed(target_env, "import", "--memories", str(path), "--quiet")
            label = f"`mnemo import --memories` {fmt}, into an empty store"
            detail = f"{first:.1f} s; again (all present) {again:.1f} s"
            rows.append((label, f"{count / first:,.0f} memories/s", detail))
            back = target / f"back.{path.suffix}"
            timed(target_env, "export", str(back), "--with-history", "--with-episodes", "--quiet")
            same = back.read_bytes() == path.read_bytes()
            rows.append((f"{fmt}: export → import → export", "byte-identical" if same else "DIFFERENT", ""))
            stop_daemon(target_settings)
    finally:
        for s in (settings, target_settings):
            stop_daemon(s)
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(target, ignore_errors=True)


def bench_history_view(writes: int, rows: list[tuple[str, str, str]]) -> None:
    """One store (chDB opens one path per process), its view dropped and made again between
    blocks of writes, so that both conditions see the same store, interleaved."""
    directory = Path(tempfile.mkdtemp(prefix="mnemo-bench-view-", dir="/tmp"))
    store = open_store(f"chdb://{directory}")
    view = next(s for m in MIGRATIONS if m.version == 13 for s in m.statements if "MATERIALIZED VIEW" in s)
    names = ("with the view", "view dropped")
    single: dict[str, list[float]] = {n: [] for n in names}
    bulk: dict[str, list[float]] = {n: [] for n in names}
    block = 20
    try:
        for start in range(0, writes, block):
            for name in names:
                store._db.command(view if name == names[0] else "DROP VIEW IF EXISTS memory_history_copy")
                for i in range(start, min(writes, start + block)):
                    one = memory(1_000_000 + i + (0 if name == names[0] else writes))
                    started = time.perf_counter()
                    store.put_memory(one)
                    single[name].append((time.perf_counter() - started) * 1000)
                batch = [
                    memory(2_000_000 + start * 1_000 + i + (0 if name == names[0] else 500))
                    for i in range(500)
                ]
                started = time.perf_counter()
                store.put_memories(batch)
                bulk[name].append((time.perf_counter() - started) * 1000)
        for name in names:
            values = single[name]
            median, p95 = statistics.median(values), percentile(values, 0.95)
            rows.append((f"insert 1 memory version, {name}", f"median {median:.2f} ms", f"p95 {p95:.2f} ms"))
        for name in names:
            values = bulk[name]
            median, p95 = statistics.median(values), percentile(values, 0.95)
            rows.append(
                (f"insert 500 memory versions, {name}", f"median {median:.1f} ms", f"p95 {p95:.1f} ms")
            )
    finally:
        store.close()
        shutil.rmtree(directory, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=20_000)
    parser.add_argument("--writes", type=int, default=300)
    args = parser.parse_args()
    rows: list[tuple[str, str, str]] = []
    bench_exchange(args.memories, rows)
    bench_history_view(args.writes, rows)
    print(stamp())
    print()
    print("| operation | rate / time | detail |")
    print("|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
