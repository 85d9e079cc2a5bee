"""The judge: what a new memory means for the current memories near it.

For each candidate (up to 8 current memories in the same namespace, chosen by the caller: 3
nearest by vector, 3 by BM25, the rest by shared entities) the decision model says whether the new
memory is the **same**, **updates** it, **contradicts** it, or is **unrelated**; and it answers
three questions about the new memory alone: still true in a month? useful to another
conversation? does the source back its why? A model without log-probabilities (a host's CLI) is
asked all of them in one call, with a schema (:mod:`mnemo.distill.at_once`). Then, in this order:

1. useful = no with p ≥ 0.6 → **episodes only**: nothing is stored, the episodes keep it;
2. a candidate judged *same* with p ≥ 0.6, not vetoed by the guard → **merge**: the new
   memory's episodes are added to that one (the most probable, if several);
3. candidates judged *updates* or *contradicts*, with P(updates) + P(contradicts) ≥ 0.6 (either
   way the old one stops being current) → **close**: the new memory is stored
   and each of them is closed (``closed_by`` the new one, ``valid_to`` its start) — unless the
   new one waits for a person: then it names the likeliest (``replaces``), which its approval
   closes (:mod:`mnemo.distill.writer`); the guard
   does not stop this — a changed number is exactly what an update looks like. A candidate
   **too far apart** from the new memory is never closed by it (:func:`far_apart`: their
   embeddings' cosine under the embedder's floor, no value in common, few words of their *what*
   in common): a small model answers "updates" for "Commit changes to the project" against "the
   payout cap is now 2500", and the closed memory would vanish from recall;
4. otherwise → **add**: the new memory is stored and nothing else changes; a probability below
   0.6 changes nothing ("in doubt, both are kept").

The deterministic guard (:mod:`mnemo.distill.guard`), on what the two memories state and how (not
why, which may cite an old value as the reason for a change), vetoes *same* whatever the
probability:
"cuts at 120 s" and "cuts at 600 s" are never one memory. why_backed = no with p ≥ 0.6 drops the
new memory's why (it was not in the source). Everything asked and decided is kept in the
:class:`Judgement` for the judge table.

For a long source, the judge reads the fragments most similar to the memory, chosen by
embedding, up to ``SOURCE_CHARS`` characters in their original order, not the beginning.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

import numpy as np

from mnemo.distill.at_once import ask_at_once
from mnemo.distill.cues import words_change, words_correction
from mnemo.distill.decide import DURABLE, RELATION, USEFUL, WHY_BACKED, Decision, DecisionModel
from mnemo.distill.extract import ExtractedMemory
from mnemo.distill.frames import stand_apart, two_things
from mnemo.distill.guard import GuardVerdict, compare, overlap
from mnemo.distill.readings import facts
from mnemo.distill.relation import ask_in_steps
from mnemo.embed import Embedder
from mnemo.memories import Memory
from mnemo.store.distill import JudgeLogRow

THRESHOLD = 0.6
# The cosine of two statements' embeddings under which they share no subject, per embedder:
# chosen on labelled pairs and our own and the fit scenarios (docs/benchmarks/writer.md, "The writer on
# data it was not tuned on"). An embedder without one closes by the relation alone.
APART_COSINE = {"use-multilingual-v3": 0.3}
CLOSING = frozenset({"updates", "contradicts"})
MAX_CANDIDATES = 8
SOURCE_CHARS = 1_500
FRAGMENT_CHARS = 300


class Action(StrEnum):
    ADD = "add"
    MERGE = "merge"
    CLOSE = "close"
    EPISODES_ONLY = "episodes_only"


@dataclass(frozen=True, slots=True)
class Comparison:
    existing: str  # the candidate memory's id
    existing_text: str  # as the judge read it
    relation: Decision
    guard: GuardVerdict
    features: dict[str, float] | None = None  # what a relation asked in steps was combined from
    barred: tuple[str, ...] = ()  # why the two can never be one memory (the guard's reasons among them)
    apart: bool = False  # the new memory may never close this one (far_apart, frames.stand_apart)

    @property
    def closing(self) -> float:
        """The probability that the existing memory stops being current: updated or contradicted."""
        return sum(self.relation.probabilities.get(r, 0.0) for r in CLOSING)

    @property
    def verdict(self) -> tuple[str, float]:
        """The relation acted on, and its probability: never *same* when it is barred — then the
        likeliest of the others, with its own probability (so it closes only if that is likely
        enough; in doubt, both are kept)."""
        probabilities = self.relation.probabilities
        allowed = [o for o in probabilities if not (o == "same" and self.barred)]
        relation = max(allowed, key=lambda o: probabilities[o])
        return relation, probabilities[relation]


@dataclass(frozen=True, slots=True)
class Judgement:
    action: Action
    memory: ExtractedMemory  # as it will be stored (its why dropped when the source lacks it)
    merge_into: str | None = None
    closes: tuple[str, ...] = ()
    comparisons: tuple[Comparison, ...] = ()
    about_new: dict[str, Decision] = field(default_factory=dict)
    reason: str = ""
    source: str = ""  # what the judge read of the source (fragments of a long one)


def statement(what: str, why: str = "", how: str = "") -> str:
    """A memory as the judge reads it: what, then why and how when given."""
    parts = [what.strip()]
    if why.strip():
        parts.append(f"Why: {why.strip()}")
    if how.strip():
        parts.append(f"How: {how.strip()}")
    return " ".join(parts)


def judge(
    new: ExtractedMemory,
    candidates: Sequence[Memory],
    source: str,
    decisions: DecisionModel,
    embedder: Embedder | None,
) -> Judgement:
    """Decide what ``new`` does to ``candidates``, given the text it was extracted from."""
    new_text = statement(new.what, new.why, new.how)
    shown_source = source_fragments(source, new_text, embedder)
    candidates = candidates[:MAX_CANDIDATES]
    relations: dict[str, Decision] = {}
    if decisions.gives_logprobs:
        about = {"NEW memory": new_text, "SOURCE it comes from": shown_source}
        context = "\n".join(f"{k}: {v}" for k, v in about.items())
        about_new = {
            USEFUL.id: decisions.ask(USEFUL, context),
            DURABLE.id: decisions.ask(DURABLE, context),
        }
        if new.why.strip():
            about_new[WHY_BACKED.id] = decisions.ask(WHY_BACKED, context)
    else:  # one call for everything (mnemo.distill.at_once)
        existing = [(c.id, statement(c.what or c.content, c.why, c.how)) for c in candidates]
        about_new, relations = ask_at_once(
            decisions.llm,
            new_text,
            shown_source,
            existing,
            ask_why=bool(new.why.strip()),
            fallback=decisions.fallback,
        )
    stored = new
    why_backed = about_new.get(WHY_BACKED.id)
    if why_backed is not None and why_backed.probabilities["no"] >= THRESHOLD:
        stored = new.model_copy(update={"why": ""})
    if about_new[USEFUL.id].probabilities["no"] >= THRESHOLD:
        return Judgement(
            Action.EPISODES_ONLY,
            stored,
            about_new=about_new,
            reason="not useful to a later conversation",
            source=shown_source,
        )

    comparisons = [
        relate(stored, existing, decisions, embedder, relations.get(existing.id)) for existing in candidates
    ]
    action, target, closes, reason = act(comparisons)
    return Judgement(
        action,
        stored,
        merge_into=target,
        closes=closes,
        comparisons=tuple(comparisons),
        about_new=about_new,
        reason=reason,
        source=shown_source,
    )


def act(comparisons: Sequence[Comparison]) -> tuple[Action, str | None, tuple[str, ...], str]:
    """What the comparisons of a useful new memory call for (rules 2 to 4 above): the action, the
    memory it merges into, the memories it closes, and why."""
    same = [c for c in comparisons if c.verdict[0] == "same" and c.verdict[1] >= THRESHOLD]
    if same:
        target = max(same, key=lambda c: c.verdict[1])
        return Action.MERGE, target.existing, (), f"the same as {target.existing} (p {target.verdict[1]:.2f})"
    closing = [c for c in comparisons if c.verdict[0] in CLOSING and c.closing >= THRESHOLD and not c.apart]
    if closing:
        named = ", ".join(f"{c.verdict[0]} {c.existing} (p {c.verdict[1]:.2f})" for c in closing)
        named += f"; closing p {max(c.closing for c in closing):.2f}"
        return Action.CLOSE, None, tuple(c.existing for c in closing), named
    kept = [c for c in comparisons if c.relation.best[0] == "same" and c.barred]
    if kept:
        reasons = "; ".join(f"{c.existing}: {', '.join(c.barred)}" for c in kept)
        return Action.ADD, None, (), f"kept apart from {reasons}"
    return Action.ADD, None, (), "nothing current it repeats or replaces"


def bars_same(existing: Memory, new: ExtractedMemory, guard: GuardVerdict) -> tuple[str, ...]:
    """Why ``new`` can never be the same memory as ``existing``: the guard's reasons on what and
    how; a value that differs in their whole statements, the why included; and the new one
    wording a correction or a change the existing one does not ("was a typo", "en realidad",
    "now", "ya no"); and the two being two things (:func:`mnemo.distill.frames.two_things`:
    siblings that share a value or a sentence). Merging would leave the corrected or changed
    memory current and the correction gone, or lose one of two facts."""
    reasons = list(guard.reasons)
    old_text = statement(existing.what or existing.content, existing.why, existing.how)
    new_text = statement(new.what, new.why, new.how)
    if not guard.values_conflict:
        reasons += [r for r in compare(old_text, new_text).reasons if not r.startswith("negation")]
    if words_correction(new_text) and not words_correction(old_text):
        reasons.append("wording: the new memory words a correction")
    if words_change(new_text) and not words_change(old_text):
        reasons.append("wording: the new memory words a change")
    if apart := two_things(existing.what or existing.content, new.what):
        reasons.append(f"two things: {apart}")  # siblings (mnemo.distill.frames)
    return tuple(reasons)


def guard_between(existing: Memory, new: ExtractedMemory) -> GuardVerdict:
    """The guard's verdict on what each memory states and how (where the values set live:
    "idle_timeout = 120 in alb.tf"), not why: a why that cites the old value ("with 5 the queue
    grew") is the reason for a change, not more detail of the same fact."""
    old_text = f"{(existing.what or existing.content).strip()} {existing.how.strip()}".strip()
    return compare(old_text, f"{new.what.strip()} {new.how.strip()}".strip())


def relate(
    new: ExtractedMemory,
    existing: Memory,
    decisions: DecisionModel,
    embedder: Embedder | None = None,
    relation: Decision | None = None,
) -> Comparison:
    """The relation of ``new`` to one current memory: the decision model's answer (in one question,
    or in steps for a model family with fitted weights: :mod:`mnemo.distill.relation`; or
    ``relation``, already asked with the others at once), and the guard's verdict on the two texts."""
    new_text = statement(new.what, new.why, new.how)
    existing_text = statement(existing.what or existing.content, existing.why, existing.how)
    guard = guard_between(existing, new)
    barred = bars_same(existing, new, guard)
    existing_what = existing.what or existing.content
    apart = far_apart(existing_what, new.what, embedder) or bool(stand_apart(existing_what, new.what))
    if relation is not None:
        return Comparison(existing.id, existing_text, relation, guard, barred=barred, apart=apart)
    weights = decisions.steps
    if weights is not None:
        decision, values = ask_in_steps(decisions, existing_text, new_text, weights, embedder, guard)
        return Comparison(existing.id, existing_text, decision, guard, values, barred, apart)
    pair = f"EXISTING memory: {existing_text}\nNEW memory: {new_text}"
    return Comparison(
        existing.id, existing_text, decisions.ask(RELATION, pair), guard, barred=barred, apart=apart
    )


def far_apart(existing_what: str, new_what: str, embedder: Embedder | None) -> bool:
    """Whether two memories are too far apart for one to close the other, by what each states
    (the why and how a small model writes blend in the session's other work): the cosine of their
    embeddings under the embedder's floor (:data:`APART_COSINE`), less than half of the shorter
    one's words shared, and no value or identifier in common (numbers without a unit aside: "3
    PRs" and "2000 transfers" share no subject). False when the embedder has no floor."""
    floor = None if embedder is None else APART_COSINE.get(embedder.model_id)
    if embedder is None or floor is None:
        return False
    if overlap(existing_what, new_what) >= 0.5 or _values(existing_what) & _values(new_what):
        return False
    vectors = embedder.embed_documents([existing_what, new_what])
    return float(vectors[0] @ vectors[1]) < floor


def _values(text: str) -> set[str]:
    return {v for found in facts(text).values() for v in found if not v.startswith("number:")}


def source_fragments(source: str, memory: str, embedder: Embedder | None, limit: int = SOURCE_CHARS) -> str:
    """``source`` itself when short; else its fragments most similar to ``memory``, in order."""
    source = " ".join(source.split())
    if len(source) <= limit:
        return source
    fragments = _fragments(source)
    if embedder is None:
        order = list(range(len(fragments)))  # no model: the beginning, as much as fits
    else:
        vectors = embedder.embed_documents(fragments)
        query = embedder.embed_queries([memory])[0]
        order = [int(i) for i in np.argsort(-(vectors @ query), kind="stable")]
    chosen: list[int] = []
    used = 0
    for i in order:
        if used + len(fragments[i]) + 3 > limit:
            continue
        chosen.append(i)
        used += len(fragments[i]) + 3
    return " … ".join(fragments[i] for i in sorted(chosen))


def _fragments(text: str) -> list[str]:
    """Sentences, packed up to FRAGMENT_CHARS (a longer sentence is cut)."""
    out: list[str] = []
    for whole in re.split(r"(?<=[.!?])\s+|\n+", text):
        sentence = whole
        while len(sentence) > FRAGMENT_CHARS:
            out.append(sentence[:FRAGMENT_CHARS])
            sentence = sentence[FRAGMENT_CHARS:]
        if not sentence:
            continue
        if out and len(out[-1]) + 1 + len(sentence) <= FRAGMENT_CHARS:
            out[-1] += " " + sentence
        else:
            out.append(sentence)
    return out


def judge_log_row(
    batch: str, seq: int, session: str, namespace: str, memory_id: str, verdict: Judgement, now: datetime
) -> JudgeLogRow:
    """The judge log's row for one judged memory: the action, and every probability and guard
    reason the decision rested on."""

    def shown(decision: Decision) -> dict[str, object]:
        return {
            "probabilities": {k: round(v, 4) for k, v in decision.probabilities.items()},
            "method": decision.method,
            "calibrated": decision.calibrated,
        }

    detail = {
        "memory": verdict.memory.model_dump(),
        "source": verdict.source,
        "about_new": {k: shown(d) for k, d in verdict.about_new.items()},
        "comparisons": [
            {
                "existing": c.existing,
                "existing_text": c.existing_text,
                "relation": shown(c.relation),
                "guard": list(c.guard.reasons),
                **({"barred": list(c.barred)} if c.barred else {}),
                **({"apart": True} if c.apart else {}),
                **({"steps": {k: round(v, 4) for k, v in c.features.items()}} if c.features else {}),
            }
            for c in verdict.comparisons
        ],
    }
    return JudgeLogRow(
        batch=batch,
        seq=seq,
        at=now,
        session=session,
        namespace=namespace,
        memory=memory_id,
        action=verdict.action.value,
        target=verdict.merge_into or "",
        closes=list(verdict.closes),
        reason=verdict.reason,
        detail=json.dumps(detail, ensure_ascii=False, default=str),
    )
