"""The UserPromptSubmit hook's wall time, spawn to exit, against a warm daemon with N memories.

What a host pays per prompt: starting ``mnemo-mcp hook UserPromptSubmit``, which records the
prompt (a durable episode), recalls on it within the session's workspace and person, and prints
the block. The store is bench_recall's synthetic one (``--memories``, default 100k; vectors are
each memory's template text embedded by the real model, plus noise), the daemon is started and
warmed before timing, and sessions of ``--prompts-per-session`` prompts rotate through the 40
workspaces (later prompts in a session inject less: the session's budget and no repeats). Also
printed, for scale: the same spawn of a bare ``python -c pass`` on this machine.

    python -m tools.bench.bench_hooks                       # 100k memories, 200 prompts
    python -m tools.bench.bench_hooks --memories 10000 --rounds 3
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
from pathlib import Path

import anyio

from mnemo.client.launcher import stop_daemon
from mnemo.client.typed import DaemonClient
from mnemo.config import load_settings
from mnemo.embed import load_embedder
from tools.bench.bench_recall import QUESTIONS, index_built, load_store, percentiles, synthetic
from tools.stamp import stamp

HOOK = Path(sys.executable).parent / "mnemo-mcp"


def spawn(command: list[str], payload: bytes, env: dict[str, str]) -> tuple[float, bytes]:
    started = time.perf_counter()
    done = subprocess.run(command, input=payload, env=env, capture_output=True, check=True)
    return (time.perf_counter() - started) * 1000, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--prompts", type=int, default=200)
    parser.add_argument("--prompts-per-session", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=1, help="repeat and print each round's p50/p95")
    parser.add_argument("--embedder", default="auto")
    parser.add_argument(
        "--gap-ms",
        type=float,
        default=0.0,
        help="pause between prompts (0: back to back, so each hook meets the background work the "
        "previous one left — embedding its episode, committing the journal; people pause longer)",
    )
    parser.add_argument("--markdown", action="store_true", help="also print the table for docs/benchmarks.md")
    args = parser.parse_args()

    env_base = {**os.environ, "MNEMO_EMBEDDER": args.embedder}
    embedder = load_embedder(load_settings(env_base))
    memories, vectors = synthetic(args.memories, embedder)
    model = embedder.model_id if embedder else "none"
    print(f"== {args.memories:,} memories, embedder {model}, {args.gap_ms:g} ms between prompts")

    with tempfile.TemporaryDirectory(prefix="mnemo-bench-", dir="/tmp") as home:
        # Bytecode as a user's install has it: written at a module's first import (round 0 here),
        # not compiled again at every spawn, as PYTHONDONTWRITEBYTECODE (set on some machines
        # of ours) would have it.
        env = {k: v for k, v in env_base.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env |= {"MNEMO_HOME": home, "MNEMO_DAEMON_IDLE_S": "3600"}
        settings = load_settings(env)
        load_store(settings, memories, vectors, embedder)

        async def warm() -> None:
            async with DaemonClient(settings) as client:
                started = time.perf_counter()
                await index_built(client)
                print(f"daemon start + index build {time.perf_counter() - started:.1f} s")

        try:
            anyio.run(warm)
            floor = [spawn([sys.executable, "-c", "pass"], b"", env)[0] for _ in range(30)]
            print("python -c pass, spawn to exit: p50 {:.1f} ms, p95 {:.1f} ms".format(*percentiles(floor)))
            per_round = []
            for round_number in range(args.rounds + 1):  # round 0 warms the daemon's paths up
                timings, injected = [], 0
                for i in range(args.prompts):
                    session = f"bench-{round_number}-{i // args.prompts_per_session}"
                    # bench_recall's memories live in workspace:repo-<n>; a cwd of "repo-<n>" (not a
                    # repository) is that workspace.
                    payload = {
                        "session_id": session,
                        "cwd": f"repo-{(7 * (i // args.prompts_per_session)) % 40}",
                        "transcript_path": f"/tmp/.claude/projects/bench/{session}.jsonl",
                        "hook_event_name": "UserPromptSubmit",
                        "prompt": f"{QUESTIONS[i % len(QUESTIONS)]} ({round_number}.{i})",
                    }
                    ms, out = spawn(
                        [str(HOOK), "hook", "UserPromptSubmit"], json.dumps(payload).encode(), env
                    )
                    timings.append(ms)
                    injected += bool(out)
                    time.sleep(args.gap_ms / 1000)
                if round_number:
                    per_round.append(percentiles(timings))
                    p50, p95 = per_round[-1]
                    print(
                        f"round {round_number}: UserPromptSubmit spawn to exit p50 {p50:.1f} ms, "
                        f"p95 {p95:.1f} ms; {injected}/{args.prompts} prompts got a block"
                    )
            p50, p95 = (statistics.median(v) for v in zip(*per_round, strict=True))
            print(
                f"UserPromptSubmit hook, spawn to exit: p50 {p50:.1f} ms, p95 {p95:.1f} ms (median of rounds)"
            )
            if args.markdown:
                rounds = ", ".join(f"{a:.1f} / {b:.1f}" for a, b in per_round)
                head = "| embedder | memories | between prompts | p50 | p95 | rounds (p50 / p95) |"
                print(f"\n{stamp()}:\n\n{head}\n|---|---|---|---|---|---|")
                gap = f"{args.gap_ms:g} ms"
                print(f"| {model} | {args.memories:,} | {gap} | {p50:.1f} ms | {p95:.1f} ms | {rounds} |")
            hooks_log = settings.log_dir / "hooks.log"
            if hooks_log.exists():
                print(
                    f"hooks.log has {len(hooks_log.read_text().splitlines())} lines: failures were timed too"
                )
        finally:
            stop_daemon(settings)


if __name__ == "__main__":
    main()
