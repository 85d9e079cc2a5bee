"""How fast a new mnemo-mcp answers a host: initialize, tools/list, and a first real request.

Spawns ``mnemo-mcp`` as a host does, in a fresh MNEMO_HOME: the first start has no start record
(mnemo.mcpserver.relay: everything waits for the MCP SDK to load); the next ones answer initialize and
tools/list from the record while the SDK loads. Prints the first start, then median and p95 of
``--starts`` more, in ms from spawn.

    python -m tools.bench.bench_mcp_start --starts 20
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

from tools.stamp import stamp

BIN = os.path.join(os.path.dirname(sys.executable), "mnemo-mcp")
HELLO = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}


def one_start(env: dict[str, str]) -> tuple[float, float, float]:
    """Milliseconds from spawn to the answers to initialize, tools/list and a ping."""
    started = time.perf_counter()
    pipe = subprocess.PIPE
    with subprocess.Popen([BIN], stdin=pipe, stdout=pipe, stderr=subprocess.DEVNULL, env=env) as process:
        assert process.stdin is not None and process.stdout is not None

        def ask(message: dict[str, Any]) -> float:
            assert process.stdin is not None and process.stdout is not None
            process.stdin.write(json.dumps(message).encode() + b"\n")
            process.stdin.flush()
            if "id" in message:
                json.loads(process.stdout.readline())
            return (time.perf_counter() - started) * 1000

        initialize = ask({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": HELLO})
        ask({"jsonrpc": "2.0", "method": "notifications/initialized"})
        tools = ask({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        ping = ask({"jsonrpc": "2.0", "id": 2, "method": "ping"})
        process.stdin.close()
        process.wait(timeout=30)
    return initialize, tools, ping


def main() -> None:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--starts", type=int, default=20)
    parser.add_argument("--markdown", action="store_true", help="print the table for docs/benchmarks.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mnemo-bench-") as home:
        env = {**os.environ, "MNEMO_HOME": home}
        first = one_start(env)
        init, tools, ping = first
        print(f"first start (no record): initialize {init:.0f} ms, tools/list {tools:.0f} ms, ", end="")
        print(f"first ping {ping:.0f} ms")
        runs = [one_start(env) for _ in range(args.starts)]
        labels = ("initialize", "tools/list", "first ping")
        rows = []
        for label, values in zip(labels, zip(*runs, strict=True), strict=True):
            ordered = sorted(values)
            p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
            rows.append((label, statistics.median(ordered), p95))
            print(f"next {args.starts} starts, {label}: median {rows[-1][1]:.0f} ms, p95 {p95:.0f} ms")
        if args.markdown:
            print(f"\n{stamp()}:\n")
            print("| answer (ms from spawn) | first start | later starts, median | p95 |\n|---|---|---|---|")
            for (label, median, p95), first_ms in zip(rows, first, strict=True):
                print(f"| {label} | {first_ms:.0f} | {median:.0f} | {p95:.0f} |")


if __name__ == "__main__":
    main()
