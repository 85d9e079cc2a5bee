"""The code check in the daemon: which memories' files changed since they were written.

At SessionStart the session's workspace memories are checked against its checkout's HEAD
(:mod:`mnemo.code.check`), on a worker thread, and the hook waits for it at most
:data:`HOOK_WAIT_S`: a check that takes longer finishes in the background and its flags apply
from the next hook on. Each memory's latest flag is kept, so a session's later hooks, and recall
from any client, weigh a possibly stale memory down (:data:`STALE_WEIGHT`) and mark it when
injected; a memory's flag is that of the latest check of a checkout it is anchored in. A file
that changed but still holds everything its memory names is followed from its new blob on, per
checkout (a worktree's HEAD is its own): nothing is flagged, and the next check starts from
there. Follows and flags live in the daemon, not in the store. What new flags call for
(:mod:`mnemo.daemon.code_proposals`) is done after the hook has its answer.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import anyio

from mnemo.code import git
from mnemo.code.check import CheckResult, CodeFlag, Followed, FollowKey, check
from mnemo.memories import Memory
from mnemo.workspace import repo_root

logger = logging.getLogger(__name__)
HOOK_WAIT_S = 0.25
CHECK_DEADLINE_S = 2.0
# A possibly stale memory ranks as if its score were this share of it: behind current hits that
# answer about as well, never behind one that answers far worse (tools/evals/eval_code_rank.py).
STALE_WEIGHT = 0.7
T = TypeVar("T")
Flagged = tuple[Memory, CodeFlag]


class CodeChecks:
    def __init__(self) -> None:
        self._flags: dict[str, CodeFlag] = {}  # memory id → its flag, from the latest checks
        self._followed: dict[Path, dict[FollowKey, Followed]] = {}  # per checkout
        self._last: dict[Path, tuple[tuple[str | None, frozenset[tuple[str, int]]], CheckResult]] = {}
        self._lock = threading.Lock()
        # Told of each memory newly flagged at a HEAD, on the check's thread once the hook has its
        # answer (mnemo.daemon.code_proposals).
        self.on_stale: Callable[[Path, str, list[Flagged]], object] | None = None
        self._told: set[tuple[str, int, str]] = set()

    def flag(self, memory_id: str) -> CodeFlag | None:
        """The memory's flag when its code changed (None: unchanged, unchecked or not anchored)."""
        found = self._flags.get(memory_id)
        return found if found is not None and found.stale else None

    def grade(self, memory_id: str) -> CodeFlag | None:
        """The memory's latest grade when its code changed, stale or followed (None: unchanged,
        unchecked or not anchored)."""
        return self._flags.get(memory_id)

    def notes(self, memories: Sequence[Memory]) -> dict[str, str]:
        """{memory id: 'lb.tf changed in 3f2a1c9 since'} for the flagged ones of ``memories``."""
        return {m.id: f.note() for m in memories if (f := self.flag(m.id)) is not None}

    def weight(self, memory_id: str) -> float:
        """What the memory's score counts for: :data:`STALE_WEIGHT` when it is possibly stale."""
        return STALE_WEIGHT if self.flag(memory_id) is not None else 1.0

    def weighed(
        self, ranked: Sequence[T], memory_id: Callable[[T], str], score: Callable[[T], float]
    ) -> list[T]:
        """``ranked`` (best first) with each possibly stale memory's score weighed down."""
        return weighed(ranked, lambda item: self.flag(memory_id(item)) is not None, score)

    async def check(
        self, cwd: str, memories: Sequence[Memory], *, wait_s: float = HOOK_WAIT_S, settle: bool = False
    ) -> CheckResult | None:
        """Check ``memories`` against the HEAD of the checkout holding ``cwd``; wait at most
        ``wait_s`` for it (past that the check goes on, on its own thread, and a result with
        ``complete`` False and no flags is returned) — and with ``settle``, for what its new
        flags call for too (``mnemo check-code``: the proposals are in the queue when it answers).
        None outside a repository or with nothing anchored."""
        root = repo_root(Path(cwd)) if cwd else None
        anchored = [m for m in memories if m.code is not None]
        if root is None or not anchored:
            return None
        done, box = threading.Event(), list[CheckResult]()

        def work() -> None:
            try:
                result, fresh = self._run(root, anchored)
                box.append(result)
                if not settle:
                    done.set()  # the hook waits no longer: what the flags call for is written after
                if fresh and self.on_stale is not None and result.head is not None:
                    self.on_stale(root, result.head, fresh)
            except Exception:  # a check never fails a hook; it only finds nothing
                logger.exception("the code check of %s failed", root)
            finally:
                done.set()

        threading.Thread(target=work, name="mnemo-code-check", daemon=True).start()
        with anyio.move_on_after(wait_s):
            while not done.is_set():
                await anyio.sleep(0.005)
        if not box:
            logger.info("the code check of %s goes on past the %.2f s waited for it", root, wait_s)
            return CheckResult(None, complete=False)
        return box[0]

    def _run(self, root: Path, memories: Sequence[Memory]) -> tuple[CheckResult, list[Flagged]]:
        """The check, and the memories it newly found possibly stale at its HEAD."""
        with self._lock:  # one check at a time; a hook's second check waits for the first
            head = git.head(root)
            key = (head, frozenset((m.id, m.version) for m in memories))
            last = self._last.get(root)
            if last is not None and last[0] == key and last[1].complete:
                result = last[1]  # the same HEAD and memories as the last check here
            else:
                followed = self._followed.get(root, {})
                result = check(root, memories, deadline_s=CHECK_DEADLINE_S, head=head, followed=followed)
                # Follows of the memories checked, as they stand now: a new version starts from its anchor.
                versions = {(m.id, m.version) for m in memories}
                kept = {k: v for k, v in followed.items() if k[:2] in versions}
                self._followed[root] = kept | result.followed
                self._last[root] = (key, result)
            # The flags are this checkout's now (a check of another may have set others): swapped
            # whole, so that a reader on another thread never sees a stale memory unflagged.
            checked = {m.id for m in memories}
            self._flags = {k: v for k, v in self._flags.items() if k not in checked} | result.flags
            if head is None:
                return result, []
            fresh = [
                (m, f)
                for m in memories
                if (f := result.flags.get(m.id)) is not None
                and f.stale
                and (m.id, m.version, head) not in self._told
            ]
            self._told.update((m.id, m.version, head) for m, _ in fresh)
            return result, fresh


def weighed(
    ranked: Sequence[T],
    is_stale: Callable[[T], bool],
    score: Callable[[T], float],
    weight: float = STALE_WEIGHT,
) -> list[T]:
    """``ranked`` (best first) in the order of their scores, a stale one's times ``weight``; ties
    keep their order."""
    return sorted(ranked, key=lambda item: score(item) * (weight if is_stale(item) else 1.0), reverse=True)
