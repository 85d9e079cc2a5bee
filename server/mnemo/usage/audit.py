"""After a turn: was each memory injected for it used in the answer?

A memory whose id the answer cites is **used**. Otherwise the decision model is asked (closed
question ``used``, see :mod:`mnemo.distill.decide`) and its probability of "yes" decides: used at
``USED_AT`` (0.08) or more, **clearly unused** below ``UNUSED_BELOW`` (0.03), **unclear** between.
The thresholds are low on purpose: on blind labels the model tells used from unused apart well,
but gives even used memories a low probability of "yes".

Without a model (no ``llm_url``) verdicts come from citations alone: cited → used, anything else
→ unclear (method ``no-model``). Unclear never counts towards suppression, so without a model
nothing is ever suppressed. An endpoint that gives no log-probabilities gives no probability
either, only its letter: "yes" is used, "no" is unclear (method ``answer``) — a bare "no" is not
evidence enough to stop injecting a memory.
"""

from __future__ import annotations

from dataclasses import dataclass

from mnemo.distill.decide import USED, DecisionModel
from mnemo.memories import Memory
from mnemo.store.usage import Verdict

USED_AT = 0.08
UNUSED_BELOW = 0.03
MAX_PROMPT_CHARS = 1_500
MAX_ANSWER_CHARS = 4_000
NO_PROBABILITY = -1.0


@dataclass(frozen=True, slots=True)
class Judgement:
    verdict: Verdict
    probability: float  # of "used"; NO_PROBABILITY when no model was asked
    method: str  # citation | logprobs | answer | no-model


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

    def judge(self, memory: Memory, prompt: str, answer: str) -> Judgement:
        if cited(answer, memory.id):
            return Judgement("used", 1.0, "citation")
        if self._decisions is None:
            return Judgement("unclear", NO_PROBABILITY, "no-model")
        context = "\n".join(
            [
                f"MEMORY: {memory.content}" + (f" Why: {memory.why}" if memory.why else ""),
                "",
                f"THE PERSON ASKED: {_cut(prompt, MAX_PROMPT_CHARS)}",
                "",
                f"ANSWER: {_cut(answer, MAX_ANSWER_CHARS)}",
            ]
        )
        decision = self._decisions.ask(USED, context)
        probability = decision.probabilities["yes"]
        if decision.method == "answer":  # no probabilities: only the letter the model wrote
            return Judgement("used" if decision.answered == "yes" else "unclear", probability, "answer")
        return Judgement(verdict_of(probability), probability, decision.method)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
