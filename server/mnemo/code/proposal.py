"""The memory with the value its code now has, proposed for review by rule.

When the code check reads a new value on the line that held one a memory names
(``timeout_sec = 600`` → ``timeout_sec = 900``; :mod:`mnemo.code.sites`) and nothing else the
memory names is gone, the memory with that value in its place is proposed as a candidate: its
text with the number replaced, anchored to HEAD, ``replaces`` naming the memory, so that a person
approving it closes the old one. No model is asked. The candidate's id comes from the memory's id
and version, the file and the values it had, so that the same change — seen again at a later
commit, by another checkout, by another daemon — proposes the same candidate, and a later new
value updates it rather than queue a second one.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime
from pathlib import Path

from mnemo.code.anchors import anchor_at
from mnemo.code.check import CodeFlag
from mnemo.memories import Memory
from mnemo.vocabulary import MemoryStatus


def _is_readable(flag: CodeFlag) -> bool:
    """Whether the check read what the code says now and nothing else is missing: a proposal can
    be made by rule."""
    return flag.stale and bool(flag.readings) and not flag.missing


def _proposal_id(memory: Memory, flag: CodeFlag) -> str:
    """From the memory's id and version, the path it was anchored to (not where its file was
    followed: a daemon that starts again reads the same change from the anchor) and the values
    that changed — not their new values: a later one updates the same proposal."""
    was = "\0".join(sorted(r.value for r in flag.readings))
    key = f"{memory.id}\0{memory.version}\0{flag.anchored or flag.path}\0{was}"
    return "mem_" + hashlib.sha256(key.encode()).hexdigest()[:24]


def proposed(memory: Memory, flag: CodeFlag, root: Path, head: str, now: datetime) -> Memory | None:
    """The candidate with the values ``flag`` read in the code in place of the old ones; None when
    the flag reads none, or the memory's text does not state them."""
    if not _is_readable(flag):
        return None
    changes = {r.value: r.now for r in flag.readings}

    def changed(text: str) -> str:
        for before, after in changes.items():
            text = re.sub(rf"(?<![\w.]){re.escape(before)}(?![\d])(?!\.\d)", after, text)
        return text

    what = changed(memory.what)
    if what == memory.what:
        return None
    path = flag.new_path or flag.path
    return memory.model_copy(
        update={
            "id": _proposal_id(memory, flag),
            "version": 1,
            "status": MemoryStatus.CANDIDATE,
            "content": changed(memory.content),
            "what": what,
            "how": changed(memory.how),
            "where": changed(memory.where),
            "why": memory.why,
            "has_human_backing": False,
            "created_at": now,
            "updated_at": now,
            "valid_from": now,
            "valid_to": None,
            "closed_by": "",
            "replaces": memory.id,
            "status_reason": f"proposed by the code check: {flag.note()}",
            "code": anchor_at(root, head, [what, changed(memory.content)], [path]),
        }
    )
