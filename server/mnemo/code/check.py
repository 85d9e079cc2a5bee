"""Whether the code a memory is about moved on: its anchored files compared with HEAD.

One ``git ls-tree`` of HEAD for every anchored path of the memories checked (not one per
memory); then, only for files whose blob differs, what changed: the commits since the anchor
that touched the file and whether the symbols and values the memory names are still in it; for
files gone from HEAD, whether they were renamed (one ``git diff -M`` per anchor commit). A file
renamed with the same content is followed, not flagged. The check stops at its deadline with
what it has found; when git cannot answer, it finds nothing (a memory is never flagged because
git failed).
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from mnemo.code import git
from mnemo.memories import AnchoredFile, Memory

# At most this many distinct anchor commits per check get the history questions (one `git log`
# and one `git diff -M` each); the others' changed files are flagged without their commits.
MAX_HISTORY_CALLS = 5
MAX_RENAME_CALLS = 5
COMMITS_SHOWN = 3


@dataclass(frozen=True, slots=True)
class CodeFlag:
    """Why a memory may be outdated (``stale``), or that its file was followed to a new path."""

    kind: str  # changed | deleted | moved (same content: not stale) | moved and changed
    path: str
    since: str  # the anchor's commit
    new_path: str = ""
    commits: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()  # named symbols and values the file no longer holds

    @property
    def stale(self) -> bool:
        return self.kind != "moved"

    def note(self) -> str:
        """The marker an injected line carries: 'lb.tf changed in 3f2a1c9 since'."""
        if self.kind == "deleted":
            return f"{self.path} was deleted since {self.since[:7]}"
        where = f"{self.path} (now {self.new_path})" if self.new_path else self.path
        if self.kind == "moved":
            return f"{self.path} moved to {self.new_path}"
        change = (
            f"changed in {', '.join(self.commits)} since"
            if self.commits
            else f"changed since {self.since[:7]}"
        )
        gone = f"; {', '.join(self.missing)} no longer in it" if self.missing else ""
        return f"{where} {change}{gone}"


@dataclass(slots=True)
class CheckResult:
    head: str | None
    flags: dict[str, CodeFlag] = field(default_factory=dict)  # memory id → its first flag
    complete: bool = True  # False: the deadline or a git failure cut it short


def check(
    root: Path, memories: Sequence[Memory], *, deadline_s: float = 1.0, head: str | None = None
) -> CheckResult:
    """Flags for those of ``memories`` whose anchored files changed since they were written
    (``head``: HEAD's commit, when the caller has just asked)."""
    ends = time.monotonic() + deadline_s
    head = head or git.head(root)
    anchored = [(m.id, m.code) for m in memories if m.code is not None]
    result = CheckResult(head)
    if head is None or not anchored:
        result.complete = head is not None
        return result
    current = git.blobs(root, head, sorted({f.path for _, code in anchored for f in code.files}))
    if current is None:
        result.complete = False
        return result
    # Read ahead, at once (git runs in its own processes): the new content of every changed file
    # (what the memory names is looked up there), and the commits since each anchor that changed one.
    changed = [(code.commit, f) for _, code in anchored for f in code.files if current.get(f.path) != f.blob]
    blobs = sorted({current[f.path] for _, f in changed if f.path in current})
    since = list(dict.fromkeys(commit for commit, f in changed if f.path in current))[:MAX_HISTORY_CALLS]
    with ThreadPoolExecutor(max_workers=1 + len(since)) as pool:
        texts = pool.submit(git.contents, root, blobs)
        history = {commit: pool.submit(git.changes_since, root, commit) for commit in since}
        asked = _Questions(root, head, texts.result(), {c: h.result() or {} for c, h in history.items()})
    for memory_id, code in anchored:
        for anchored_file in code.files:
            if current.get(anchored_file.path) == anchored_file.blob:
                continue
            if time.monotonic() > ends:
                result.complete = False
                return result
            flag = asked.flag(anchored_file, code.commit, current.get(anchored_file.path))
            if flag is not None:
                result.flags.setdefault(memory_id, flag)
                if flag.stale:
                    result.flags[memory_id] = flag
                    break
    return result


def _holds(text: str, token: str) -> bool:
    """``token`` in ``text`` as a whole word or number (600 is not in 6000)."""
    return re.search(rf"(?<![\w.]){re.escape(token)}(?![\w])", text) is not None


class _Questions:
    """The slower git questions, each asked once per check and within their bounds."""

    def __init__(
        self, root: Path, head: str, texts: dict[str, str], history: dict[str, dict[str, list[str]]]
    ) -> None:
        self._root, self._head = root, head
        self._history = history  # anchor commit → {path: commits since that changed it}
        self._renames: dict[str, dict[str, str]] = {}
        self._texts = texts  # blob → text, read ahead for the changed files

    def flag(self, anchored: AnchoredFile, since: str, blob: str | None) -> CodeFlag | None:
        if blob is None:
            moved_to = self._renamed(since).get(anchored.path)
            if not moved_to:
                return CodeFlag("deleted", anchored.path, since)
            now = (git.blobs(self._root, self._head, [moved_to]) or {}).get(moved_to)
            if now == anchored.blob:
                return CodeFlag("moved", anchored.path, since, new_path=moved_to)
            path, blob, kind = moved_to, now, "moved and changed"
        else:
            path, kind = anchored.path, "changed"
        text = self._text(blob)
        missing = tuple(v for v in (*anchored.symbols, *anchored.values) if not _holds(text, v))
        return CodeFlag(
            kind,
            anchored.path,
            since,
            new_path=path if path != anchored.path else "",
            commits=self._commits(since, path),
            missing=missing,
        )

    def _commits(self, since: str, path: str) -> tuple[str, ...]:
        if since not in self._history and len(self._history) < MAX_HISTORY_CALLS:
            self._history[since] = git.changes_since(self._root, since) or {}
        return tuple(self._history.get(since, {}).get(path, ())[:COMMITS_SHOWN])

    def _renamed(self, since: str) -> dict[str, str]:
        if since not in self._renames and len(self._renames) < MAX_RENAME_CALLS:
            self._renames[since] = git.renames(self._root, since) or {}
        return self._renames.get(since, {})

    def _text(self, blob: str | None) -> str:
        if blob is None:
            return ""
        if blob not in self._texts:  # a renamed file's new blob: not read ahead
            self._texts[blob] = git.content(self._root, blob) or ""
        return self._texts[blob]
