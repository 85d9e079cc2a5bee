"""Store and daemon benchmark: append rates, import throughput, cold start, recall latency.

    uv run --frozen python -m tools.bench.bench_store [--appends 500] [--import-lines 20000] [--starts 5]

Everything runs against a fresh MNEMO_HOME in /tmp on the embedded store, through the real
daemon over its unix socket (what the MCP server and hooks do). Prints a Markdown table with the
median and p95 where an operation is repeated. With ``--locomo DIR`` it also imports the LoCoMo
dev turns (read from DIR, never copied) as a real-text import.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio

from mnemo.api.recall import RecallRequest
from mnemo.client.launcher import stop_daemon
from mnemo.client.typed import DaemonClient
from mnemo.config import Settings, load_settings
from mnemo.episodes import EpisodeIn
from mnemo.memories import RememberRequest
from mnemo.vocabulary import MemoryType
from tools.stamp import stamp

BIN = Path(sys.executable).parent
WORDS = (
    "gateway timeout balancer stream deploy thursday staging cluster bluebird migration schema "
    "index roaring bitmap vector embedding judge distill episode memory session hook codex claude"
).split()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def sentence(i: int, length: int = 24) -> str:
    return " ".join(WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(length)) + f" #{i}"


def fresh_home() -> tuple[Path, dict[str, str], Settings]:
    home = Path(tempfile.mkdtemp(prefix="mnemo-bench-", dir="/tmp"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_")}
    env.update(MNEMO_HOME=str(home), MNEMO_DAEMON_IDLE_S="600", MNEMO_PERSON="bench")
    return home, env, load_settings(env)


async def bench_appends(settings: Settings, count: int, rows: list[tuple[str, str, str]]) -> None:
    async with DaemonClient(settings) as client:
        await client.ensure_started()
        await client.append([EpisodeIn(id="warm", text="warm up", session="w")])

        latencies = []
        started = time.perf_counter()
        for i in range(count):
            t = time.perf_counter()
            await client.append([EpisodeIn(id=f"s-{i}", text=sentence(i), session="single", turn=i)])
            latencies.append((time.perf_counter() - t) * 1000)
        elapsed = time.perf_counter() - started
        rows.append(
            (
                "append, 1 episode per call, sequential",
                f"{count / elapsed:,.0f} episodes/s",
                f"latency median {statistics.median(latencies):.1f} ms, "
                f"p95 {percentile(latencies, 0.95):.1f} ms",
            )
        )

        tasks, per_task = 16, max(1, count // 16)

        async def worker(w: int) -> None:
            for i in range(per_task):
                await client.append([EpisodeIn(id=f"c-{w}-{i}", text=sentence(i), session=f"c{w}", turn=i)])

        started = time.perf_counter()
        async with anyio.create_task_group() as tg:
            for w in range(tasks):
                tg.start_soon(worker, w)
        elapsed = time.perf_counter() - started
        rows.append(
            (
                f"append, 1 episode per call, {tasks} concurrent callers (group commit)",
                f"{tasks * per_task / elapsed:,.0f} episodes/s",
                "",
            )
        )

        batch, batches = 500, 20
        started = time.perf_counter()
        for b in range(batches):
            await client.append(
                [EpisodeIn(id=f"b-{b}-{i}", text=sentence(i), session=f"b{b}", turn=i) for i in range(batch)]
            )
        elapsed = time.perf_counter() - started
        rows.append(
            (
                f"append, {batch} episodes per call",
                f"{batch * batches / elapsed:,.0f} episodes/s",
                f"{batches} calls",
            )
        )


def bench_import(env: dict[str, str], path: Path, label: str, rows: list[tuple[str, str, str]]) -> None:
    lines = sum(1 for _ in path.open("rb"))
    for attempt in ("first", "again (all present)"):
        started = time.perf_counter()
        subprocess.run(
            [str(BIN / "mnemo"), "import", "--quiet", str(path)], env=env, check=True, capture_output=True
        )
        elapsed = time.perf_counter() - started
        rows.append(
            (
                f"`mnemo import` {label}, {attempt}",
                f"{lines / elapsed:,.0f} lines/s",
                f"{lines:,} lines in {elapsed:.2f} s (CLI start included)",
            )
        )


def write_synthetic(path: Path, count: int) -> None:
    with path.open("w") as out:
        for i in range(count):
            out.write(
                json.dumps(
                    {
                        "id": f"imp-{i}",
                        "session": f"s{i // 200}",
                        "time": "2026-05-01T10:00:00Z",
                        "who": "Ana" if i % 2 else "assistant",
                        "role": "user" if i % 2 else "assistant",
                        "text": sentence(i, 40),
                        "turn": i % 200,
                    }
                )
                + "\n"
            )


def write_locomo(source: Path, path: Path) -> None:
    with (source / "locomo_dev_turns.jsonl").open() as turns, path.open("w") as out:
        for line in turns:
            t = json.loads(line)
            out.write(
                json.dumps(
                    {
                        "id": f"{t['sample_id']}-{t['dia_id']}",
                        "session": f"{t['sample_id']}-s{t['session']}",
                        "time": "2023-05-08T13:56:00Z",
                        "who": t["speaker"],
                        "role": "user",
                        "text": t["text"],
                        "namespace": f"person:{t['sample_id']}",
                        "turn": t["turn_index"],
                    }
                )
                + "\n"
            )


async def first_recall(settings: Settings) -> float:
    started = time.perf_counter()
    async with DaemonClient(settings) as client:
        await client.recall(RecallRequest(query="gateway timeout"))
    return (time.perf_counter() - started) * 1000


def bench_cold_start(settings: Settings, starts: int, rows: list[tuple[str, str, str]]) -> None:
    stop_daemon(settings)
    shutil.rmtree(settings.run_dir.parent / "store", ignore_errors=True)
    first = anyio.run(first_recall, settings)
    rows.append(("cold start → first answered recall, new store (migrations)", f"{first:,.0f} ms", "1 run"))
    times = []
    for _ in range(starts):
        stop_daemon(settings)
        times.append(anyio.run(first_recall, settings))
    rows.append(
        (
            "cold start → first answered recall, existing store",
            f"median {statistics.median(times):,.0f} ms",
            f"p95 {percentile(times, 0.95):,.0f} ms over {starts} starts",
        )
    )


async def bench_recall(
    settings: Settings, memories: int, queries: int, rows: list[tuple[str, str, str]]
) -> None:
    async with DaemonClient(settings) as client:
        for i in range(memories):
            await client.remember(RememberRequest(content=sentence(i, 16), type=MemoryType.FACT))
        latencies = []
        for i in range(queries):
            t = time.perf_counter()
            await client.recall(RecallRequest(query=f"{WORDS[i % len(WORDS)]} {WORDS[(i * 5) % len(WORDS)]}"))
            latencies.append((time.perf_counter() - t) * 1000)
    rows.append(
        (
            f"recall over {memories:,} memories (in-RAM index, installed embedder, client round trip)",
            f"median {statistics.median(latencies):.1f} ms",
            f"p95 {percentile(latencies, 0.95):.1f} ms",
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--appends", type=int, default=500)
    parser.add_argument("--import-lines", type=int, default=20_000)
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--memories", type=int, default=1_000)
    parser.add_argument("--locomo", type=Path, default=None)
    args = parser.parse_args()

    home, env, settings = fresh_home()
    rows: list[tuple[str, str, str]] = []
    try:
        print(
            f"# mnemo store benchmark ({os.cpu_count()} cores, Python {sys.version.split()[0]})", flush=True
        )
        bench_cold_start(settings, args.starts, rows)
        anyio.run(bench_appends, settings, args.appends, rows)
        synthetic = home / "synthetic.jsonl"
        write_synthetic(synthetic, args.import_lines)
        bench_import(env, synthetic, f"{args.import_lines:,} synthetic lines", rows)
        if args.locomo is not None:
            locomo = home / "locomo.jsonl"
            write_locomo(args.locomo, locomo)
            bench_import(env, locomo, "LoCoMo dev turns", rows)
        anyio.run(bench_recall, settings, args.memories, 200, rows)
    finally:
        stop_daemon(settings)
        shutil.rmtree(home, ignore_errors=True)
    print(f"\n{stamp()}:\n\n| operation | rate / time | detail |\n|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
