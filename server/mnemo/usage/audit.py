"""After a turn: was each memory injected for it used?

A memory whose id the answer cites is **used**. Otherwise, by default, the turn itself tells
(:mod:`mnemo.usage.signal`, no model call): how much of the memory's distinctive content — its
values, identifiers, names, terms — the agent's answer and acts hold. At ``signal.USED_AT`` or more
it is used, below ``signal.UNUSED_BELOW`` **clearly unused**, between **unclear** (method
``signal``).

With ``usage_audit = "model"`` and a writer's endpoint, the decision model is asked instead
(closed question ``used``, see :mod:`mnemo.distill.decide`) and its probability of "yes" decides:
used at ``USED_AT`` (0.08) or more, clearly unused below ``UNUSED_BELOW`` (0.03), unclear between.
Those thresholds are low on purpose: the model gives even used memories a low probability of
"yes". An endpoint that gives no log-probabilities gives only its letter: "yes" is used, "no" is
unclear (method ``answer``) — a bare "no" is not evidence enough to stop injecting a memory.
"""

from __future__ import annotations

from dataclasses import dataclass

from mnemo.distill.decide import USED, DecisionModel
from mnemo.memories import Memory
from mnemo.store.usage import Verdict
from mnemo.usage import signal
from mnemo.usage.signal import TurnActs

USED_AT = 0.08
UNUSED_BELOW = 0.03
MAX_PROMPT_CHARS = 1_500
MAX_ANSWER_CHARS = 4_000


@dataclass(frozen=True, slots=True)
class Judgement:
    verdict: Verdict
    probability: float  # of "used" (the model's), or the signal's score
    method: str  # citation | signal | logprobs | answer


def cited(answer: str, memory_id: str) -> bool:
    return memory_id in answer


def verdict_of(probability: float) -> Verdict:
    if probability >= USED_AT:
        return "used"
    return "unused" if probability < UNUSED_BELOW else "unclear"


class Auditor:
    def __init__(self, decisions: DecisionModel | None) -> None:
        self._decisions = decisions

    @property
    def has_model(self) -> bool:
        return self._decisions is not None

    def judge(self, memory: Memory, turn: TurnActs) -> Judgement:
        if cited(turn.answer, memory.id):
            return Judgement("used", 1.0, "citation")
        if self._decisions is None:
            value = signal.score(signal_text(memory), turn)
            verdict: Verdict = (
                "used" if value >= signal.USED_AT else "unused" if value < signal.UNUSED_BELOW else "unclear"
            )
            return Judgement(verdict, value, "signal")
        decision = self._decisions.ask(USED, question(memory.content, memory.why, turn))
        probability = decision.probabilities["yes"]
        if decision.method == "answer":  # no probabilities: only the letter the model wrote
            return Judgement("used" if decision.answered == "yes" else "unclear", probability, "answer")
        return Judgement(verdict_of(probability), probability, decision.method)


def question(content: str, why: str, turn: TurnActs) -> str:
    """What the decision model reads to say whether a turn used a memory."""
    return "\n".join(
        [
            f"MEMORY: {content}" + (f" Why: {why}" if why else ""),
            "",
            f"THE PERSON ASKED: {_cut(turn.prompt, MAX_PROMPT_CHARS)}",
            "",
            f"ANSWER: {_cut(turn.answer, MAX_ANSWER_CHARS)}",
        ]
    )


def signal_text(memory: Memory) -> str:
    """What of a memory the signal looks for in a turn: what it says, how and where."""
    return "\n".join(part for part in (memory.content, memory.how, memory.where) if part)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
