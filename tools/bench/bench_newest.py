"""What grouping by the newest word costs recall and the hooks (mnemo.distill.newest.newest_led):
groups of N memories whose texts are drawn from the labelled pairs, each timed cold (the rules'
caches emptied: a daemon just started) and warm (the same texts asked again).

    python -m tools.bench.bench_newest --sizes 10 24 60 200 --rounds 50
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta

from mnemo.distill import cues, frames, readings, replaced, subjects
from mnemo.distill.newest import newest_first
from mnemo.memories import Memory, Origin
from mnemo.vocabulary import MemoryStatus, MemoryType
from tools import REPO

DATA = REPO / "tests" / "data"
NOW = datetime(2026, 12, 1, tzinfo=UTC)


def texts() -> list[str]:
    out = []
    for name in ("judge_pairs_test.jsonl", "judge_pairs_blind.jsonl"):
        for line in (DATA / name).read_text(encoding="utf-8").splitlines():
            pair = json.loads(line)
            out += [pair["old"]["what"], pair["new"]["what"]]
    return out


def memory(i: int, text: str) -> Memory:
    at = NOW - timedelta(days=i)
    return Memory(
        id=f"m{i:04d}", version=1, type=MemoryType.FACT, status=MemoryStatus.ACTIVE, namespace="workspace:b",
        content=text, what=text, who="", when="", where="", why="", how="", entities=[], sources=[],
        origin=Origin.DISTILLED, created_at=at, updated_at=at, valid_from=at,
    )  # fmt: skip


def forget() -> None:
    """Empty every cache of the rules' modules: what a daemon just started has."""
    for module in (frames, readings, replaced, subjects, cues):
        for value in vars(module).values():
            if hasattr(value, "cache_clear"):
                value.cache_clear()


def timed(memories: Sequence[Memory], *, cold: bool) -> float:
    if cold:
        forget()
    started = time.perf_counter()
    newest_first(memories)
    return (time.perf_counter() - started) * 1000


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 24, 60, 200])
    parser.add_argument("--rounds", type=int, default=50)
    args = parser.parse_args(argv)
    pool, rng = texts(), random.Random(7)
    print("| memories | cold p50 / p95 ms | warm p50 / p95 ms |\n|---|---|---|")
    for size in args.sizes:
        cold, warm = [], []
        for _ in range(args.rounds):
            group = [memory(i, t) for i, t in enumerate(rng.sample(pool, size))]
            cold.append(timed(group, cold=True))
            warm.append(timed(group, cold=False))
        print(f"| {size} | {_p(cold)} | {_p(warm)} |")
    return 0


def _p(values: list[float]) -> str:
    ordered = sorted(values)
    return f"{statistics.median(ordered):.2f} / {ordered[int(0.95 * (len(ordered) - 1))]:.2f}"


if __name__ == "__main__":
    raise SystemExit(main())
