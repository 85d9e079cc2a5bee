"""The health of a store: what `mnemo audit` finds among its open memories (active, or waiting
for a person), each finding with the action it calls for (:mod:`mnemo.api.audit`).

- **junk**: a distilled memory that is no memory — by its form a question, a request, a command,
  a work log, a transient state, something about a session, a host's wrapper text; or naming what
  none of its sources holds, or saying it in words its (English) sources never use; or resting
  on tool output alone (the writer's own rules, :mod:`mnemo.distill.gate`, applied to what was
  stored before them);
- **duplicate**: two open memories of one namespace that say the same thing: the same words
  once spacing and case are set aside, or embeddings at a cosine of at least ``SAME_COSINE`` with
  most of their words shared and no value, version, identifier or negation apart (the judge's
  guard, :mod:`mnemo.distill.guard`) — an active one is kept before one waiting, then the
  older, and the other folds into it;
- **superseded**: two current memories of one namespace where the newer replaces the older by the
  rules the writer closes with (:mod:`mnemo.distill.frames`: it names the value it replaces, or
  the two say the same thing at different values and nothing else differs): the older is to be
  closed by it;
- **code**: a memory whose files changed since it was written and no longer hold what it names
  (the code check's flag, :mod:`mnemo.daemon.code_checks`): to be read against the code;
- **unused**: an active memory older than the window that was never injected in it while others
  of its namespace were, or was injected ``UNUSED_AFTER`` times or more and never used;
- **credential**: a memory whose text holds something that looks like a credential.

Detection reads only what it is given (:class:`Evidence`); the daemon gathers it and applies the
actions (:mod:`mnemo.daemon.auditing`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import numpy as np
import numpy.typing as npt

from mnemo.api.audit import ACTIONS, Finding, FindingKind
from mnemo.distill.forms import FORM_WORDS, junk_form
from mnemo.distill.frames import candidate_pairs, replaces
from mnemo.distill.gate import AGENTS_DOING, agents_doing, ungrounded, unsaid
from mnemo.distill.guard import compare, overlap
from mnemo.distill.repeats import normal
from mnemo.episodes import Episode, Role
from mnemo.injected import strip_injected
from mnemo.memories import Memory, Origin
from mnemo.secrets import find_secrets, redact
from mnemo.vocabulary import MemoryStatus

SAME_COSINE = 0.92
SAME_WORDS = 0.6
UNUSED_AFTER = 3
MAX_SHARING = 200  # a word this many memories of a namespace share says nothing of a pair


@dataclass(frozen=True, slots=True)
class Evidence:
    """What the audit reads: open memories, their sources, their usage and code flags."""

    memories: Sequence[Memory]
    sources: dict[str, Episode]
    injected: dict[str, int]  # memory id → injections within the window
    used: dict[str, int]  # memory id → turns that used it (ever)
    code_flags: dict[str, str]  # memory id → what changed in its code
    now: datetime
    days: int
    # Each memory's neighbours (ids) in its namespace, by the index: candidates for duplicates.
    neighbours: Callable[[Memory], Sequence[str]] = lambda _m: ()
    # Unit vectors of texts, for the cosine of two statements (None: words alone decide).
    embed: Callable[[Sequence[str]], npt.NDArray[np.float32]] | None = None
    by_id: dict[str, Memory] = field(default_factory=dict)


def audit(evidence: Evidence, kinds: Sequence[FindingKind]) -> list[Finding]:
    """Every finding of ``kinds``, in the order of :data:`mnemo.api.audit.FINDING_KINDS`."""
    found: list[Finding] = []
    detectors = {"junk": _junk, "duplicate": _duplicates, "superseded": _superseded,
                 "code": _code, "unused": _unused, "credential": _credentials}  # fmt: skip
    for kind in kinds:
        found += detectors[kind](evidence)
    return found


def _finding(kind: FindingKind, memories: Sequence[Memory], reason: str) -> Finding:
    texts = [m.what or m.content for m in memories]
    return Finding(
        kind=kind,
        memories=[m.id for m in memories],
        texts=[redact(t) for t in texts] if kind == "credential" else texts,  # never shown again
        statuses=[m.status.value for m in memories],
        namespace=memories[0].namespace,
        reason=reason,
        action=ACTIONS[kind],
    )


def junk_reason(memory: Memory, sources: Sequence[Episode]) -> str:
    """Why a distilled memory is likely junk ('' when it is not)."""
    form = junk_form(memory.what or memory.content)
    if form:
        return f"reads as {FORM_WORDS[form]}"
    if sources and all(e.role == Role.TOOL for e in sources):
        return "rests on tool output alone"
    said = [strip_injected(e.text) for e in sources]  # memories injected into a turn are not its words
    missing = ungrounded(memory.what or memory.content, said) if sources else []
    if missing:
        return f"names what none of its sources holds: {', '.join(missing[:3])}"
    if sources and unsaid(memory.what or memory.content, said):
        return "its words are not in its sources: a summary no one gave"
    person = [text for e, text in zip(sources, said, strict=True) if e.role == Role.USER]
    if sources and agents_doing(memory.what or memory.content, memory.type, person):
        return AGENTS_DOING
    return ""


def _junk(evidence: Evidence) -> list[Finding]:
    found = []
    for memory in evidence.memories:
        if memory.origin is not Origin.DISTILLED:  # a person's own words (remember, keep, files)
            continue
        reason = junk_reason(memory, [evidence.sources[s] for s in memory.sources if s in evidence.sources])
        if reason:
            found.append(_finding("junk", [memory], reason))
    return found


def _duplicates(evidence: Evidence) -> list[Finding]:
    by_id = evidence.by_id or {m.id: m for m in evidence.memories}
    pairs: dict[tuple[str, str], tuple[Memory, Memory]] = {}
    for memory in evidence.memories:
        for other_id in evidence.neighbours(memory):
            other = by_id.get(other_id)
            if other is None or other.id == memory.id or other.namespace != memory.namespace:
                continue
            # The one kept: an active one before one still waiting, then the older.
            first, second = sorted((memory, other), key=_kept_first)
            pairs.setdefault((first.id, second.id), (first, second))
    candidates = list(pairs.values())
    texts = [(a.what or a.content, b.what or b.content) for a, b in candidates]
    cosines = [1.0] * len(candidates)
    worded = [(a, b) for a, b in texts if overlap(a, b) >= SAME_WORDS]  # only these can be the same
    if evidence.embed is not None and worded:
        distinct = sorted({t for pair in worded for t in pair})
        vectors = dict(zip(distinct, evidence.embed(distinct), strict=True))  # each text embedded once
        cosines = [
            float(np.dot(vectors[a], vectors[b])) if a in vectors and b in vectors else 0.0 for a, b in texts
        ]
    found = []
    for (first, second), (a, b), cosine in zip(candidates, texts, cosines, strict=True):
        if normal(a) == normal(b):
            found.append(_finding("duplicate", [first, second], "the same statement"))
        elif cosine >= SAME_COSINE and overlap(a, b) >= SAME_WORDS and not compare(a, b).blocks:
            reason = f"the same statement in other words (cosine {cosine:.2f}, no value apart)"
            found.append(_finding("duplicate", [first, second], reason))
    return found


def _kept_first(memory: Memory) -> tuple[bool, datetime, str]:
    return memory.status is not MemoryStatus.ACTIVE, memory.created_at, memory.id


def _superseded(evidence: Evidence) -> list[Finding]:
    """Pairs of active memories of one namespace where the newer replaces the older by the rules
    of :mod:`mnemo.distill.frames`; only pairs that share a word are read."""
    groups: dict[str, list[Memory]] = {}
    for memory in evidence.memories:
        if memory.status is MemoryStatus.ACTIVE:
            groups.setdefault(memory.namespace, []).append(memory)
    found = []
    for group in groups.values():
        ordered = sorted(group, key=lambda m: (m.valid_from, m.created_at, m.id))
        for i, j in sorted(candidate_pairs([m.what or m.content for m in ordered], MAX_SHARING)):
            older, newer = ordered[i], ordered[j]
            evidence_ = replaces(newer.what or newer.content, older.what or older.content)
            if evidence_:
                reason = f"the newer ({newer.valid_from:%Y-%m-%d}) replaces it: {evidence_}"
                found.append(_finding("superseded", [newer, older], reason))
    return found


def _code(evidence: Evidence) -> list[Finding]:
    return [
        _finding("code", [m], f"its code changed: {evidence.code_flags[m.id]}")
        for m in evidence.memories
        if m.id in evidence.code_flags
    ]


def _unused(evidence: Evidence) -> list[Finding]:
    since = evidence.now - timedelta(days=evidence.days)
    # A project nobody opened in the window says nothing of its memories: only those of a namespace
    # whose other memories were injected in it are judged.
    in_use = {m.namespace for m in evidence.memories if evidence.injected.get(m.id)}
    found = []
    for memory in evidence.memories:
        if (
            memory.status is not MemoryStatus.ACTIVE
            or memory.created_at > since
            or memory.namespace not in in_use
        ):
            continue
        injected = evidence.injected.get(memory.id, 0)
        if evidence.used.get(memory.id, 0):
            continue
        if not injected:
            found.append(_finding("unused", [memory], f"never injected in {evidence.days} days"))
        elif injected >= UNUSED_AFTER:
            reason = f"injected {injected} times in {evidence.days} days and never used"
            found.append(_finding("unused", [memory], reason))
    return found


def _credentials(evidence: Evidence) -> list[Finding]:
    found = []
    for memory in evidence.memories:
        text = "\n".join((memory.content, memory.what, memory.why, memory.how))
        secrets = find_secrets(text)
        if secrets:
            kinds = sorted({s.kind for s in secrets})
            found.append(_finding("credential", [memory], f"looks like a credential ({', '.join(kinds)})"))
    return found
