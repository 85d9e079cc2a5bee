"""Re-judging a memory whose code changed: the model reads the file as it is now.

A memory flagged by the code check (:mod:`mnemo.code.check`) is asked about, with one closed
question (:data:`CODE`), against the current text of its changed file — the stretches of lines
that share most words with the memory, at most :data:`CODE_CHARS` characters:

- **still** true: the memory's next version carries an anchor refreshed to HEAD (not flagged
  again until the file changes again);
- **updated** or **contradicted**: the memory is closed by the check (``closed_by`` names the
  commit), and where the new value is plain — a number the memory names stood on a line whose
  start is unchanged and now holds another number ("timeout_sec = 600" → "timeout_sec = 900") —
  the memory with that value is proposed as a candidate, for review;
- below the judge's threshold, or a file that is gone: unclear, and the memory stays flagged.

Every decision goes to the judge log (batch ``code:<commit>``). The writer does this while it
holds the lease, and commits through the same fence as its batches.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from mnemo.code import git
from mnemo.code.anchors import anchor_at
from mnemo.code.check import CodeFlag
from mnemo.distill.decide import CODE, DecisionModel
from mnemo.distill.judge import THRESHOLD
from mnemo.index.live import RecallEngine
from mnemo.memories import Memory
from mnemo.store import Store
from mnemo.store.distill import JudgeLogRow
from mnemo.vocabulary import MemoryStatus

logger = logging.getLogger(__name__)
CODE_CHARS = 1_500
_WINDOW_LINES = 8
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}|\d+(?:\.\d+)?")


@dataclass(frozen=True, slots=True)
class Reviewed:
    memory: str
    verdict: str  # still | updated | contradicted | unclear
    candidate: str = ""  # the proposed memory with the new value, if any


def code_fragments(text: str, memory: str, limit: int = CODE_CHARS) -> str:
    """The windows of lines of ``text`` that share most words with ``memory``, in file order."""
    lines = text.splitlines()
    if len(text) <= limit:
        return text
    wanted = {w.lower() for w in _WORD.findall(memory)}
    windows = [lines[i : i + _WINDOW_LINES] for i in range(0, len(lines), _WINDOW_LINES)]
    scores = [sum(w.lower() in wanted for line in win for w in _WORD.findall(line)) for win in windows]
    chosen, used = [], 0
    for i in sorted(range(len(windows)), key=lambda i: -scores[i]):
        size = sum(len(line) + 1 for line in windows[i]) + 4
        if used + size <= limit:
            chosen.append(i)
            used += size
    return "\n…\n".join("\n".join(windows[i]) for i in sorted(chosen))


def new_values(old: str, new: str, values: Sequence[str]) -> dict[str, str]:
    """{old value: new value} for each of ``values`` that stood on a line of ``old`` whose start is
    unchanged in ``new`` and now holds another number there (once, unambiguously)."""
    found: dict[str, str] = {}
    for value in values:
        pattern = re.compile(rf"(?<![\w.]){re.escape(value)}(?![\w.])")
        guesses = set()
        for line in old.splitlines():
            match = pattern.search(line)
            if match is None or not line[: match.start()].strip():
                continue
            prefix = line[: match.start()]
            for other in new.splitlines():
                if other.startswith(prefix) and (number := re.match(r"\d+(?:\.\d+)?", other[len(prefix) :])):
                    guesses.add(number.group())
        guesses.discard(value)
        if len(guesses) == 1:
            found[value] = guesses.pop()
    return found


class CodeReview:
    def __init__(
        self,
        store: Store,
        engine: RecallEngine,
        decisions: DecisionModel,
        commit: Callable[..., None],
        clock: Callable[[], datetime],
    ) -> None:
        self._store, self._engine, self._decisions = store, engine, decisions
        self._commit, self._clock = commit, clock

    def review(self, root: Path, head: str, flagged: Sequence[tuple[Memory, CodeFlag]]) -> list[Reviewed]:
        """Judge each flagged memory against HEAD's text of its changed file; write the outcome."""
        done = []
        for seq, (memory, flag) in enumerate(flagged):
            path = flag.new_path or flag.path
            blob = (git.blobs(root, head, [path]) or {}).get(path)
            text = git.content(root, blob) if blob else None
            if text is None:
                self._log(head, seq, memory, "unclear", flag, {"reason": f"{path} is not in HEAD"})
                done.append(Reviewed(memory.id, "unclear"))
                continue
            shown = code_fragments(text, memory.what)
            context = f"MEMORY: {memory.what}\n\nCODE ({path} at commit {head[:7]}):\n{shown}"
            decision = self._decisions.ask(CODE, context)
            verdict, probability = decision.best
            detail: dict[str, object] = {
                "probabilities": {k: round(v, 4) for k, v in decision.probabilities.items()},
                "method": decision.method,
                "calibrated": decision.calibrated,
                "file": path,
                "head": head,
            }
            if probability < THRESHOLD:
                verdict = "unclear"
            done.append(self._apply(root, head, seq, memory, flag, verdict, text, detail))
        return done

    def _apply(
        self,
        root: Path,
        head: str,
        seq: int,
        memory: Memory,
        flag: CodeFlag,
        verdict: str,
        text: str,
        detail: dict[str, object],
    ) -> Reviewed:
        now = self._clock()
        with self._store.versions_lock:
            current = self._store.get_memory(memory.id)
            if (
                current is None
                or current.version != memory.version
                or current.status is not MemoryStatus.ACTIVE
            ):
                return Reviewed(memory.id, "moved on")  # a person or the writer changed it meanwhile
            rows: list[Memory] = []
            candidate = None
            if verdict == "still":
                texts = [memory.what, memory.where, memory.how]
                files = memory.code.files if memory.code else []
                paths = [flag.new_path if f.path == flag.path and flag.new_path else f.path for f in files]
                code = anchor_at(root, head, texts, paths)
                rows.append(
                    memory.model_copy(update={"version": memory.version + 1, "code": code, "updated_at": now})
                )
            elif verdict in ("updated", "contradicted"):
                reason = f"the code check: {flag.note()}; the model read it as {verdict}"
                rows.append(
                    memory.model_copy(
                        update={
                            "version": memory.version + 1,
                            "status": MemoryStatus.CLOSED,
                            "closed_by": f"code:{head}",
                            "valid_to": now,
                            "updated_at": now,
                            "status_reason": reason,
                        }
                    )
                )
                candidate = self._proposed(root, head, memory, flag, text, now)
                if candidate is not None:
                    rows.append(candidate)
            self._log(head, seq, memory, verdict, flag, detail, candidate)
            if rows:
                self._commit(rows, batch=f"code:{head[:12]}:{memory.id}")
                for row in rows:
                    if row.version > 1:
                        self._engine.set_memory_status(row)
                    else:
                        self._engine.add_memories([row])
        return Reviewed(memory.id, verdict, candidate.id if candidate else "")

    def _proposed(
        self, root: Path, head: str, memory: Memory, flag: CodeFlag, text: str, now: datetime
    ) -> Memory | None:
        """The memory with its value changed as the code changed it, as a candidate; None unless plain."""
        anchored = next((f for f in (memory.code.files if memory.code else []) if f.path == flag.path), None)
        old = git.content(root, anchored.blob) if anchored is not None else None
        if anchored is None or old is None:
            return None
        changes = new_values(old, text, anchored.values)
        if not changes:
            return None

        def changed(field: str) -> str:
            out = field
            for before, after in changes.items():
                out = re.sub(rf"(?<![\w.]){re.escape(before)}(?![\w.])", after, out)
            return out

        what = changed(memory.what)
        path = flag.new_path or flag.path
        return memory.model_copy(
            update={
                "id": "mem_" + hashlib.sha256(f"{memory.id}\0{head}".encode()).hexdigest()[:24],
                "version": 1,
                "status": MemoryStatus.CANDIDATE,
                "content": what,
                "what": what,
                "how": changed(memory.how),
                "where": changed(memory.where),
                "has_human_backing": False,
                "created_at": now,
                "updated_at": now,
                "valid_from": now,
                "valid_to": None,
                "closed_by": "",
                "status_reason": f"proposed by the code check: {flag.note()}",
                "code": anchor_at(root, head, [what], [path]),
            }
        )

    def _log(
        self,
        head: str,
        seq: int,
        memory: Memory,
        verdict: str,
        flag: CodeFlag,
        detail: dict[str, object],
        candidate: Memory | None = None,
    ) -> None:
        action = {"still": "confirmed", "updated": "closed", "contradicted": "closed"}.get(verdict, "unclear")
        row = JudgeLogRow(
            batch=f"code:{head[:12]}",
            seq=seq,
            at=self._clock(),
            session="",
            namespace=memory.namespace,
            memory=memory.id,
            action=action,
            target=candidate.id if candidate is not None else "",
            closes=[memory.id] if action == "closed" else [],
            reason=flag.note(),
            detail=json.dumps({"verdict": verdict, **detail}),
        )
        self._store.put_judge_log([row])
