"""The mnemo CLI in an arena's throwaway user (tools/arena/eval_arena.py, tools/arena/arena_replay.py): the
daemon the hooks start there, waited on until it has distilled and audited what it was given."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

BIN = Path(sys.executable).parent
WAIT_S = 1800


class Mnemo:
    """The mnemo CLI in the arena's user environment (the daemon the hooks start)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env

    def json(self, *args: str, cwd: Path | None = None, refused: str = "") -> Any:
        """``mnemo ARGS --json``'s answer; a failure raises, unless its answer holds ``refused``
        as true (a refusal the caller expects)."""
        done = subprocess.run(
            [str(BIN / "mnemo"), *args, "--json"],
            env=self.env,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if done.returncode != 0 and not (refused and json.loads(done.stdout or "{}").get(refused)):
            raise RuntimeError(f"mnemo {args[0]} failed ({done.returncode}): {done.stderr[-1000:]}")
        return json.loads(done.stdout)

    def settled(self) -> dict[str, Any]:
        """``mnemo status`` once no session is being distilled or waits to be."""
        deadline = time.monotonic() + WAIT_S
        while True:
            status = self.json("status")
            work = status["distillation"]
            if not work["asked"] and not work["running"]:
                return dict(status)
            if time.monotonic() > deadline:
                raise RuntimeError(f"distillation did not end within {WAIT_S} s: {work}")
            time.sleep(1)

    def distil(self, session: str, before: dict[str, Any]) -> dict[str, Any]:
        """Distil ``session`` (played since ``before``, a settled status) and wait: how long that
        took, and the model calls and tokens spent since ``before`` (a host's SessionEnd may have
        asked already; the usage audit of the session's turns is counted too)."""
        started = time.perf_counter()
        self.json("distill", session, refused="distilled")  # SessionEnd's request may have done it
        after = self.settled()
        spent, was = after["language_model"], before["language_model"]
        return {
            "seconds": round(time.perf_counter() - started, 1),
            "calls": spent["calls_today"] - was["calls_today"],
            "tokens": spent["tokens_today"] - was["tokens_today"],
            "added": after["distillation"]["memories_added"] - before["distillation"]["memories_added"],
        }

    def audited(self) -> dict[str, int]:
        """The usage verdicts so far, once every injected memory has one (or WAIT_S passed)."""
        deadline = time.monotonic() + WAIT_S
        while True:
            stats = self.json("stats", "--days", "1")
            verdicts = {k: stats[k] for k in ("used", "unused", "unclear")}
            if sum(verdicts.values()) >= stats["memories_injected"] or time.monotonic() > deadline:
                return {**verdicts, "injected": stats["memories_injected"]}
            time.sleep(2)

    def recall_top(self, question: str, cwd: Path) -> tuple[str, str]:
        """What ``mnemo recall`` puts first among the memories the hooks draw on there: the
        project's workspace and the person's (the CLI alone searches every namespace)."""
        hits = self.json("recall", question, "--limit", "50", cwd=cwd)["memories"]
        mine = [h["memory"] for h in hits if h["memory"]["namespace"] in (f"workspace:{cwd}", self.person)]
        if not mine:
            return "", ""
        text = " ".join(str(mine[0].get(k) or "") for k in ("what", "why", "how", "where"))
        return mine[0]["status"], text

    @functools.cached_property
    def person(self) -> str:
        return f"person:{self.json('status')['person']}"


def setting_lines(settings: Sequence[str]) -> list[str]:
    """TOML lines of KEY=VALUE settings: a number or true/false as such, anything else a string."""
    lines = []
    for setting in settings:
        key, _, value = setting.partition("=")
        try:
            json.loads(value)
            lines.append(f"{key.strip()} = {value}")
        except ValueError:
            lines.append(f"{key.strip()} = {json.dumps(value)}")
    return lines
