"""Code check benchmark: what checking anchored memories against HEAD adds to SessionStart.

    uv run --frozen python -m tools.bench.bench_code_check [--commits 10000] [--memories 1000] [--rounds 30]

Generates a repository (git fast-import) of 1,000 files and ``--commits`` commits, each changing
one of the first 500 files: an unrelated line (``RETRIES_n``), and at every 50th commit the value
the file's memory names (``TIMEOUT_S``) too. Anchors ``--memories`` memories to one file each —
the handler they name and the timeout they state — and times ``mnemo.code.check.check``, the work
the SessionStart hook waits for (at most 0.25 s; past that it goes on in the background), with
median and p95 over ``--rounds`` runs, for:

- nothing changed since the anchors (anchored at HEAD): one ``rev-parse`` and one ``ls-tree``
  per 500 paths;
- anchored 300 commits back, checked for the first time: the blob comparison, one
  ``cat-file --batch`` of the changed files' text then and now (the lines of the named values are
  compared), at most 5 ``git log`` calls for the commits that changed them; most files are
  refreshed (their value stands), those whose value changed are flagged;
- the same after a check 30 commits before HEAD (a session earlier that day): the refreshed files
  are followed from there, so only those changed since are read again.

The git binary's speed decides most of it: the figures are this machine's (``git --version``).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

from mnemo.code import git
from mnemo.code.check import Followed, FollowKey, check
from mnemo.memories import AnchoredFile, CodeAnchor, Memory
from mnemo.vocabulary import MemoryType
from tests.helpers import make_memory
from tools.bench.bench_store import percentile
from tools.stamp import stamp

FILES = 1_000
HOT = 500  # the files the commits change
BEHIND = 300
EARLIER = 30


def make_repository(root: Path, commits: int) -> None:
    """``commits`` commits by fast-import: the first adds every file, each next changes one."""
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    lines: list[bytes] = []
    stamp_s = 1_700_000_000
    timeouts = list(range(10, 10 + FILES))

    def data(text: str) -> None:
        raw = text.encode()
        lines.append(b"data %d\n%s\n" % (len(raw), raw))

    def module(f: int, retries: int) -> str:
        head = f"TIMEOUT_S = {timeouts[f]}\nRETRIES_{f} = {retries}\n"
        return head + f"\ndef handler_{f}(request):\n    return request\n"

    for n in range(commits):
        lines.append(b"commit refs/heads/main\n")
        lines.append(b"committer Bench <bench@example.com> %d +0000\n" % (stamp_s + n))
        data(f"commit {n}")
        if n == 0:
            for f in range(FILES):
                lines.append(f"M 100644 inline src/module_{f:04d}.py\n".encode())
                data(module(f, 0))
        else:
            f = n % HOT
            if n % 50 == 0:
                timeouts[f] += 1_000
            lines.append(f"M 100644 inline src/module_{f:04d}.py\n".encode())
            data(module(f, n))
    subprocess.run(["git", "-C", str(root), "fast-import", "--quiet"], input=b"".join(lines), check=True)
    subprocess.run(["git", "-C", str(root), "checkout", "-q", "main"], check=True)


def anchored_memories(root: Path, commit: str, count: int) -> list[Memory]:
    paths = [f"src/module_{i % FILES:04d}.py" for i in range(count)]
    blobs = git.blobs(root, commit, sorted(set(paths)))
    assert blobs is not None
    texts = git.contents(root, sorted(set(blobs.values())))
    timeout = {p: texts[blobs[p]].split("\n", 1)[0].split(" = ")[1] for p in set(paths)}
    now = datetime.now(UTC)
    memories = []
    for i, path in enumerate(paths):
        what = f"handler_{i % FILES} in {path} times out after {timeout[path]} s"
        named = AnchoredFile(
            path=path, blob=blobs[path], symbols=[f"handler_{i % FILES}"], values=[timeout[path]]
        )
        code = CodeAnchor(commit=commit, files=[named])
        memories.append(make_memory(f"mem_bench{i:06d}", what, now, type=MemoryType.FACT, code=code))
    return memories


def timed(
    root: Path, memories: list[Memory], rounds: int, followed: Mapping[FollowKey, Followed] | None = None
) -> tuple[list[float], int, int]:
    times, flagged, refreshed = [], 0, 0
    for _ in range(rounds):
        started = time.perf_counter()
        result = check(root, memories, deadline_s=10.0, followed=followed)
        times.append(time.perf_counter() - started)
        assert result.complete
        flagged = sum(f.stale for f in result.flags.values())
        refreshed = len(result.followed)
    return times, flagged, refreshed


def _rev(root: Path, name: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), "rev-parse", name], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


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
        assert head is not None
        fresh = timed(root, anchored_memories(root, head, args.memories), args.rounds)
        behind = anchored_memories(root, _rev(root, f"HEAD~{BEHIND}"), args.memories)
        old = timed(root, behind, args.rounds)
        earlier = check(root, behind, deadline_s=30.0, head=_rev(root, f"HEAD~{EARLIER}"))
        followed = timed(root, behind, args.rounds, earlier.followed)
    version = subprocess.run(["git", "--version"], check=False, capture_output=True, text=True).stdout.strip()
    print(stamp())
    print(
        f"{args.memories} anchored memories, a repository of {FILES} files and {args.commits} commits "
        f"(made in {made_s:.1f} s), {version}, {args.rounds} rounds\n"
    )
    print("| anchors | refreshed | flagged | check median | check p95 |")
    print("|---|---|---|---|---|")
    for label, (times, flagged, refreshed) in (
        ("at HEAD: nothing changed", fresh),
        (f"{BEHIND} commits back", old),
        (f"{BEHIND} commits back, followed {EARLIER} commits ago", followed),
    ):
        print(
            f"| {label} | {refreshed} | {flagged} | {statistics.median(times) * 1000:.1f} ms "
            f"| {percentile(times, 0.95) * 1000:.1f} ms |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
