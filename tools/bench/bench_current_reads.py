"""What reading a memory's newest version costs since versions fold per writer (migration 15).

    uv run --frozen python -m tools.bench.bench_current_reads [--memories 100000] [--rounds 30]

A memory's versions fold per writer (``written_by`` is in the sorting key), so the store's reads of
current memories keep each memory's newest version with a condition, ``(id, version) IN (SELECT id,
max(version) …)``, and ``LIMIT 1 BY id``. This times, on an embedded store of ``--memories``
synthetic memories (bench_recall's, in 40 workspaces), the reads the hooks and tools make — the
SessionStart hook's active memories of a workspace and person, one memory by id, the count — as the
store makes them now and as it made them before (``FINAL`` alone), interleaved round by round,
median and p95 of ``--rounds``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from mnemo.store import open_store
from mnemo.store.memories import MEMORY_COLUMNS
from tools.bench.bench_recall import synthetic
from tools.bench.bench_store import percentile
from tools.stamp import stamp


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    memories, _ = synthetic(args.memories, None)
    with tempfile.TemporaryDirectory(prefix="mnemo-bench-reads-") as directory:
        store = open_store(f"chdb://{Path(directory) / 'store'}")
        try:
            for i in range(0, len(memories), 20_000):
                store.put_memories(memories[i : i + 20_000])
            db = store._db
            namespaces = [memories[0].namespace, "person:bench"]
            some_id = memories[len(memories) // 2].id
            columns = ", ".join(MEMORY_COLUMNS)
            active = "namespace IN {ns:Array(String)} AND status = 'active'"
            before = {
                "SessionStart's active memories (200)": lambda: db.query(
                    f"SELECT {columns} FROM memories FINAL WHERE {active} "
                    "ORDER BY updated_at DESC, id LIMIT 200",
                    parameters={"ns": namespaces},
                ),
                "one memory by id": lambda: db.query(
                    f"SELECT {columns} FROM memories FINAL WHERE id = {{id:String}} LIMIT 1",
                    parameters={"id": some_id},
                ),
                "the count": lambda: db.command("SELECT count() FROM memories FINAL"),
            }
            now: dict[str, Callable[[], object]] = {
                "SessionStart's active memories (200)": lambda: store.active_memories(namespaces, 200),
                "one memory by id": lambda: store.get_memory(some_id),
                "the count": store.memory_count,
            }
            times: dict[tuple[str, str], list[float]] = {}
            for _ in range(args.rounds):
                for name, current in now.items():
                    for form, read in (("before", before[name]), ("now", current)):
                        started = time.perf_counter()
                        read()
                        times.setdefault((name, form), []).append(time.perf_counter() - started)
        finally:
            store.close()
    print(stamp())
    print(f"{args.memories:,} memories on the embedded store, {args.rounds} interleaved rounds\n")
    print("| read | before (FINAL) median / p95 | now (newest version) median / p95 |")
    print("|---|---|---|")
    for name in now:
        cells = []
        for form in ("before", "now"):
            taken = times[(name, form)]
            cells.append(f"{statistics.median(taken) * 1000:.1f} / {percentile(taken, 0.95) * 1000:.1f} ms")
        print(f"| {name} | {cells[0]} | {cells[1]} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
