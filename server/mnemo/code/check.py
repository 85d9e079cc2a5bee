"""Whether the code a memory is about moved on: its anchored files compared with HEAD, graded.

One ``git ls-tree`` of HEAD for every anchored path of the memories checked (not one per
memory); then, only for files whose blob differs, what changed: the new content (are the symbols
and values the memory names still there, and where a value is not, what its line holds now:
:mod:`mnemo.code.sites`), the commits since the anchor that touched the file, and for files gone
from HEAD whether they were renamed (one ``git diff -M`` per anchor commit). Each changed file is
graded:

- **refreshed**: it changed, but still holds everything the memory names: the check follows the
  new blob from then on (the caller keeps it: :class:`Followed`), and nothing is flagged;
- **moved**: renamed, and still holding everything: followed to its new path, nothing flagged;
- **changed** (or moved and changed): a named symbol or value is gone, or a value's line now
  holds another number (a :class:`~mnemo.code.sites.Reading`): possibly stale;
- **deleted**: possibly stale.

The check stops at its deadline with what it has found; when git cannot answer, it finds nothing
(a memory is never flagged because git failed).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from mnemo.code import git
from mnemo.code.named import holds_symbol
from mnemo.code.sites import Reading, read_value
from mnemo.memories import AnchoredFile, Memory

# At most this many distinct anchor commits per check get the history questions (one `git log`
# and one `git diff -M` each); the others' changed files are flagged without their commits.
MAX_HISTORY_CALLS = 5
MAX_RENAME_CALLS = 5
COMMITS_SHOWN = 3
STALE_KINDS = ("changed", "moved and changed", "deleted")


@dataclass(frozen=True, slots=True)
class CodeFlag:
    """How a memory's anchored file changed: possibly stale (``stale``), or followed."""

    kind: str  # refreshed | moved (followed, not stale) | changed | moved and changed | deleted
    path: str
    since: str  # the commit the check compared with: the anchor's, or where it was last followed
    new_path: str = ""
    commits: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()  # named symbols and values the file no longer holds
    readings: tuple[Reading, ...] = ()  # named values whose lines now hold another number
    blob: str = ""  # refreshed or moved: the blob followed from now on
    anchored: str = ""  # the path the memory was anchored to ('' when it is ``path``)

    @property
    def stale(self) -> bool:
        return self.kind in STALE_KINDS

    def note(self) -> str:
        """What an injected line carries: 'infra/lb.tf now has timeout_sec = 900 (was 600);
        changed in 3f2a1c9', 'lb.tf changed in 3f2a1c9 since; 600 no longer in it'."""
        if self.kind == "deleted":
            return f"{self.path} was deleted since {self.since[:7]}"
        if self.kind == "moved":
            return f"{self.path} moved to {self.new_path}"
        if self.kind == "refreshed":
            return (
                f"{self.path} changed since {self.since[:7]} and still holds all the memory names: followed"
            )
        where = f"{self.path} (now {self.new_path})" if self.new_path else self.path
        gone = f"; {', '.join(self.missing)} no longer in it" if self.missing else ""
        change = (
            f"changed in {', '.join(self.commits)}" if self.commits else f"changed since {self.since[:7]}"
        )
        if self.readings:
            has = ", ".join(f"{r.line} (was {r.value})" for r in self.readings)
            return f"{where} now has {has}; {change}{gone}"
        return f"{where} {change}{' since' if self.commits else ''}{gone}"


@dataclass(frozen=True, slots=True)
class Followed:
    """Where the check of an anchored file starts from once it has been refreshed or followed:
    the path and blob last seen holding everything the memory names, at commit ``since``."""

    path: str
    blob: str
    since: str


# A memory's anchored file, as a key of the follows: (memory id, version, anchored path).
FollowKey = tuple[str, int, str]


@dataclass(slots=True)
class CheckResult:
    head: str | None
    flags: dict[str, CodeFlag] = field(default_factory=dict)  # memory id → its flag, stale first
    followed: dict[FollowKey, Followed] = field(default_factory=dict)  # refreshed or moved now
    complete: bool = True  # False: the deadline or a git failure cut it short


def check(
    root: Path,
    memories: Sequence[Memory],
    *,
    deadline_s: float = 1.0,
    head: str | None = None,
    followed: Mapping[FollowKey, Followed] | None = None,
) -> CheckResult:
    """Grades for those of ``memories`` whose anchored files changed since they were written, or
    since ``followed`` (earlier checks' refreshes) says they were last seen right (``head``:
    HEAD's commit, when the caller has just asked)."""
    ends = time.monotonic() + deadline_s
    head = head or git.head(root)
    follows = followed or {}
    # Each anchored file where its check starts: where it was last followed, else its anchor.
    anchored = [
        (m, f, follows.get((m.id, m.version, f.path)) or f)
        for m in memories
        if m.code is not None
        for f in m.code.files
    ]
    result = CheckResult(head)
    if head is None or not anchored:
        result.complete = head is not None
        return result
    current = git.blobs(root, head, sorted({start.path for _, _, start in anchored}))
    if current is None:
        result.complete = False
        return result
    changed = [
        (m, f, start if isinstance(start, Followed) else Followed(f.path, f.blob, m.code.commit))
        for m, f, start in anchored
        if m.code is not None and current.get(start.path) != start.blob
    ]
    # Read ahead, at once (git runs in its own processes): the new content of every changed file
    # and the content the check starts from where the memory names values (their lines are
    # compared), and — while the files are graded — the commits since each start that changed one.
    present = [(f, start) for _, f, start in changed if start.path in current]
    blobs = sorted({current[s.path] for _, s in present} | {s.blob for f, s in present if f.values})
    since = list(dict.fromkeys(s.since for _, s in present))[:MAX_HISTORY_CALLS]
    with ThreadPoolExecutor(max_workers=1 + len(since)) as pool:
        texts = pool.submit(git.contents, root, blobs)
        history = {commit: pool.submit(git.changes_since, root, commit) for commit in since}
        asked = _Questions(root, head, texts.result(), history)
        return _graded(result, changed, current, asked, ends)


def _graded(
    result: CheckResult,
    changed: list[tuple[Memory, AnchoredFile, Followed]],
    current: dict[str, str],
    asked: _Questions,
    ends: float,
) -> CheckResult:
    assert result.head is not None
    stale: set[str] = set()
    for memory, anchored_file, start in changed:
        if memory.id in stale:
            continue
        if time.monotonic() > ends:
            result.complete = False
            return result
        flag = asked.flag(memory, anchored_file, start, current.get(start.path))
        if flag is None:  # git could not give the file's text: nothing is said of it
            result.complete = False
            continue
        if flag.stale:
            result.flags[memory.id] = flag
            stale.add(memory.id)
            continue
        result.flags.setdefault(memory.id, flag)
        result.followed[(memory.id, memory.version, anchored_file.path)] = Followed(
            flag.new_path or start.path, flag.blob, result.head
        )
    return result


class _Questions:
    """The slower git questions, each asked once per check and within their bounds."""

    def __init__(
        self,
        root: Path,
        head: str,
        texts: dict[str, str],
        history: dict[str, Future[dict[str, list[str]] | None]],
    ) -> None:
        self._root, self._head = root, head
        self._asked = history  # anchor commit → its `git log`, running beside the grading
        self._history: dict[str, dict[str, list[str]]] = {}  # anchor commit → {path: commits since}
        self._renames: dict[str, dict[str, str]] = {}
        self._texts = texts  # blob → text, read ahead for the changed files

    def flag(
        self, memory: Memory, anchored: AnchoredFile, start: Followed, blob: str | None
    ) -> CodeFlag | None:
        """The grade of ``anchored`` (a file of ``memory``), whose check starts from ``start``,
        where HEAD has ``blob`` at its path (None: not there)."""
        since, moved_to = start.since, ""
        if blob is None:
            moved_to = self._renamed(since).get(start.path, "")
            if not moved_to:
                return CodeFlag("deleted", start.path, since)
            blob = (git.blobs(self._root, self._head, [moved_to]) or {}).get(moved_to)
            if blob is None:
                return CodeFlag("deleted", start.path, since)
            if blob == start.blob:
                return CodeFlag("moved", start.path, since, new_path=moved_to, blob=blob)
        new = self._text(blob)
        if new is None:
            return None
        missing = [s for s in anchored.symbols if not holds_symbol(new, s)]
        readings = []
        if anchored.values:
            old = self._text(start.blob) or ""  # not known: the values are read by presence
            said = " ".join((memory.content, memory.what, memory.where, memory.how))
            for value in anchored.values:
                reading = read_value(old, new, value, said)
                if reading.state == "changed":
                    readings.append(reading)
                elif reading.state == "gone":
                    missing.append(value)
        if not missing and not readings:
            kind = "moved" if moved_to else "refreshed"
            return CodeFlag(kind, start.path, since, new_path=moved_to, blob=blob)
        return CodeFlag(
            "moved and changed" if moved_to else "changed",
            start.path,
            since,
            new_path=moved_to,
            commits=self._commits(since, moved_to or start.path),
            missing=tuple(missing),
            readings=tuple(readings),
            anchored=anchored.path if anchored.path != start.path else "",
        )

    def _commits(self, since: str, path: str) -> tuple[str, ...]:
        if since not in self._history and since in self._asked:
            self._history[since] = self._asked[since].result() or {}
        elif (
            since not in self._history and len(self._asked.keys() | self._history.keys()) < MAX_HISTORY_CALLS
        ):
            self._history[since] = git.changes_since(self._root, since) or {}
        return tuple(self._history.get(since, {}).get(path, ())[:COMMITS_SHOWN])

    def _renamed(self, since: str) -> dict[str, str]:
        if since not in self._renames and len(self._renames) < MAX_RENAME_CALLS:
            self._renames[since] = git.renames(self._root, since) or {}
        return self._renames.get(since, {})

    def _text(self, blob: str) -> str | None:
        """The blob's text; None when git cannot give it."""
        if blob not in self._texts:  # a renamed file's blobs, or one the read ahead missed
            text = git.content(self._root, blob)
            if text is None:
                return None
            self._texts[blob] = text
        return self._texts[blob]
