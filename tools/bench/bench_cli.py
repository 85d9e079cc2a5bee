"""How fast the ``mnemo`` command answers against a warm daemon, beside a bare Python start.

Starts a daemon in a fresh MNEMO_HOME holding one memory, then runs, interleaved round by round
(so that the machine's noise falls on all of them alike): ``python -c pass``, ``mnemo recall``,
``mnemo status``. Prints the median and p95 of each, in ms from spawn to exit, and how many
times a bare Python start each command takes.

    python -m tools.bench.bench_cli --runs 50 [--markdown]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from tools.stamp import stamp

BIN = os.path.join(os.path.dirname(sys.executable), "mnemo")
COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "mnemo recall": [BIN, "recall", "which day do we deploy?"],
    "mnemo status": [BIN, "status"],
}


def timed_ms(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return (time.perf_counter() - started) * 1000


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def commit() -> str:
    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    )
    return done.stdout.strip() or "unknown"


def main() -> None:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--markdown", action="store_true", help="print the table for docs/benchmarks.md")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mnemo-bench-", dir="/tmp") as home:
        env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_")}
        env["MNEMO_HOME"] = home
        remember = [BIN, "remember", "We deploy on Thursdays", "--type", "decision"]
        subprocess.run(remember, env=env, stdout=subprocess.DEVNULL, check=True)
        try:
            for argv in COMMANDS.values():  # warm: the daemon's index built, files in the page cache
                timed_ms(argv, env)
            times: dict[str, list[float]] = {name: [] for name in COMMANDS}
            for _ in range(args.runs):
                for name, argv in COMMANDS.items():
                    times[name].append(timed_ms(argv, env))
        finally:
            subprocess.run([BIN, "daemon", "stop"], env=env, stdout=subprocess.DEVNULL, check=False)
    bare = statistics.median(times["python -c pass"])
    rows = [
        (name, statistics.median(values), p95(values), statistics.median(values) / bare)
        for name, values in times.items()
    ]
    if args.markdown:
        print(f"{stamp()}:\n")
        print("| command | p50 ms | p95 ms | × bare Python |")
        print("|---|---|---|---|")
        for name, median, high, ratio in rows:
            print(f"| `{name}` | {median:.0f} | {high:.0f} | {ratio:.1f} |")
        return
    print(f"{stamp()}\n{args.runs} interleaved runs each (ms from spawn to exit)")
    for name, median, high, ratio in rows:
        print(f"  {name:<16} p50 {median:6.1f}  p95 {high:6.1f}  ({ratio:.1f}× bare Python)")


if __name__ == "__main__":
    main()
