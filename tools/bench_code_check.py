"""Code check benchmark: what checking anchored memories against HEAD adds to SessionStart.

    uv run --frozen python tools/bench_code_check.py [--commits 10000] [--memories 1000] [--rounds 30]

Generates a repository (git fast-import) of 1,000 files and ``--commits`` commits, each changing
one of the first 500 files; anchors ``--memories`` memories to one file each, at the commit 300
before HEAD (so that the files changed since are flagged, as after a few days' work), and times
``mnemo.code.check.check`` — the work the SessionStart hook waits for (at most 0.25 s; past that
it goes on in the background) — with median and p95 over ``--rounds`` runs, for:

- nothing changed since the anchors (anchored at HEAD): one ``rev-parse`` and one ``ls-tree``
  per 500 paths;
- anchored 300 commits back: the blob comparison, one ``cat-file --batch`` of the changed files,
  and at most 20 ``git log`` calls for the commits that changed them.

The git binary's speed decides most of it: the figures are this machine's (``git --version``).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from bench_store import percentile  # tools/bench_store.py, beside this script
from mnemo.code import git
from mnemo.code.check import check
from mnemo.memories import AnchoredFile, CodeAnchor, Memory, Origin
from mnemo.vocabulary import MemoryStatus, MemoryType
from stamp import stamp

FILES = 1_000
HOT = 500  # the files the commits change
BEHIND = 300


def make_repository(root: Path, commits: int) -> None:
    """``commits`` commits by fast-import: the first adds every file, each next changes one."""
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    lines: list[bytes] = []
    stamp_s = 1_700_000_000

    def data(text: str) -> None:
        raw = text.encode()
        lines.append(b"data %d\n%s\n" % (len(raw), raw))

    for n in range(commits):
        lines.append(b"commit refs/heads/main\n")
        lines.append(b"committer Bench <bench@example.com> %d +0000\n" % (stamp_s + n))
        data(f"commit {n}")
        if n == 0:
            for f in range(FILES):
                lines.append(f"M 100644 inline src/module_{f:04d}.py\n".encode())
                data(f"TIMEOUT_S = {f}\n\ndef handler_{f}(request):\n    return request\n")
        else:
            f = n % HOT
            lines.append(f"M 100644 inline src/module_{f:04d}.py\n".encode())
            data(f"TIMEOUT_S = {f + n}\n\ndef handler_{f}(request):\n    return request\n")
    subprocess.run(["git", "-C", str(root), "fast-import", "--quiet"], input=b"".join(lines), check=True)
    subprocess.run(["git", "-C", str(root), "checkout", "-q", "main"], check=True)


def anchored_memories(root: Path, commit: str, count: int) -> list[Memory]:
    paths = [f"src/module_{i % FILES:04d}.py" for i in range(count)]
    blobs = git.blobs(root, commit, sorted(set(paths)))
    assert blobs is not None
    now = datetime.now(UTC)
    return [
        Memory(
            id=f"mem_bench{i:06d}",
            version=1,
            type=MemoryType.FACT,
            status=MemoryStatus.ACTIVE,
            namespace="workspace:bench",
            content=f"handler_{i % FILES} in {path} times out after {i % FILES} s",
            what=f"handler_{i % FILES} in {path} times out after {i % FILES} s",
            who="",
            when="",
            where="",
            why="",
            how="",
            entities=[],
            sources=[],
            origin=Origin.EXPLICIT,
            created_at=now,
            updated_at=now,
            valid_from=now,
            code=CodeAnchor(
                commit=commit,
                files=[AnchoredFile(path=path, blob=blobs[path], symbols=[f"handler_{i % FILES}"])],
            ),
        )
        for i, path in enumerate(paths)
    ]


def timed(root: Path, memories: list[Memory], rounds: int) -> tuple[list[float], int]:
    times, flagged = [], 0
    for _ in range(rounds):
        started = time.perf_counter()
        result = check(root, memories, deadline_s=10.0)
        times.append(time.perf_counter() - started)
        assert result.complete
        flagged = len(result.flags)
    return times, flagged


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--commits", type=int, default=10_000)
    parser.add_argument("--memories", type=int, default=1_000)
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mnemo-bench-git-") as directory:
        root = Path(directory) / "repo"
        began = time.perf_counter()
        make_repository(root, args.commits)
        made_s = time.perf_counter() - began
        head = git.head(root)
        behind = subprocess.run(
            ["git", "-C", str(root), "rev-parse", f"HEAD~{BEHIND}"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        assert head is not None
        fresh, fresh_flagged = timed(root, anchored_memories(root, head, args.memories), args.rounds)
        old, old_flagged = timed(root, anchored_memories(root, behind, args.memories), args.rounds)
    version = subprocess.run(["git", "--version"], check=False, capture_output=True, text=True).stdout.strip()
    print(stamp())
    print(
        f"{args.memories} anchored memories, a repository of {FILES} files and {args.commits} commits "
        f"(made in {made_s:.1f} s), {version}, {args.rounds} rounds\n"
    )
    print("| anchors | flagged | check median | check p95 |")
    print("|---|---|---|---|")
    for label, times, flagged in (
        ("at HEAD: nothing changed", fresh, fresh_flagged),
        (f"{BEHIND} commits back", old, old_flagged),
    ):
        print(
            f"| {label} | {flagged} | {statistics.median(times) * 1000:.1f} ms "
            f"| {percentile(times, 0.95) * 1000:.1f} ms |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
