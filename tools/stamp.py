"""The line that stamps a benchmark's table for docs/benchmarks.md: the date, the commit measured
(``+changes`` when the tree differs from it), the machine, and the command."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from datetime import UTC, datetime


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], capture_output=True, text=True, check=False)
    return done.stdout.strip()


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def stamp() -> str:
    commit = _git("rev-parse", "--short", "HEAD") or "unknown"
    if _git("status", "--porcelain", "--untracked-files=no"):
        commit += "+changes"
    spec = getattr(sys.modules["__main__"], "__spec__", None)  # run as `python -m tools.<group>.<tool>`
    program = ["-m", spec.name] if spec is not None else sys.argv[:1]
    command = " ".join(["python", *program, *sys.argv[1:]])
    return (
        f"{datetime.now(UTC):%Y-%m-%d}, commit {commit}, {_cpu()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}; `{command}`"
    )
