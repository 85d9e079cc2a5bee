"""The relation of a new memory to an existing one, asked in steps: for small models.

A large model answers the judge's four-way question (same, updates, contradicts, unrelated) well
in one go (:data:`mnemo.distill.decide.RELATION`). A 1.5B model does not: its four-way answers are
little better than its prior for a position. It does answer narrower questions well — "do both say
the same, with the same values?" separates *same* from the rest with an AUC of about 0.94 — so
for a model family with fitted weights the relation is asked in steps:

- four yes/no questions (about the same thing? the same, with the same values? changed since?
  says the old one is wrong?) and the four-way question answered by word, each read from the
  first token's log-probabilities;
- signals that need no model: what the deterministic guard (:mod:`mnemo.distill.guard`) found
  in the two *what* and *how* (a conflicting value, a value only one of them states, a negation
  only one of them has), the two texts' embedding cosine, the share of words they have in common, and
  whether the new text words a correction ("wrong", "never", "en realidad", "RS256, not HS256")
  or a change ("now", "moved", "ya no");

and a multinomial logistic model over those features, fitted on labelled pairs by
``tools/fit/fit_calibration.py --steps`` and shipped per model family (``weights/*.json``), turns them
into the four probabilities (the weights carry a temperature fitted on cross-validated
predictions). The guard still vetoes *same* afterwards, and the 0.6 rule still
applies: this replaces only how the relation's probabilities are obtained.
"""

from __future__ import annotations

import math

import numpy as np

from mnemo.distill.cues import cue_change, cue_correction
from mnemo.distill.decide import RELATION, ClosedQuestion, Decision, DecisionModel, yes_no
from mnemo.distill.guard import GuardVerdict, overlap
from mnemo.distill.weights import StepWeights
from mnemo.embed import Embedder

ABOUT = yes_no(
    "relation_about",
    "Are both notes about the same thing (the same setting, component, rule or choice)?",
    by_word=True,
)
SAME = yes_no("relation_same", "Do both notes say the same thing, with the same values?", by_word=True)
CHANGED = yes_no(
    "relation_changed",
    "Does the NEW note say that something changed since the EXISTING note was written?",
    by_word=True,
)
WRONG = yes_no(
    "relation_wrong", "Does the NEW note say the EXISTING note is wrong or was never true?", by_word=True
)
WORD = ClosedQuestion(
    "relation_word",
    "Which word describes the NEW note?",
    RELATION.options,
    (
        "same - it says the same thing as the EXISTING note, perhaps in other words or another language",
        "updates - the same thing has changed since: the NEW note gives its newer state",
        "contradicts - the NEW note says the EXISTING note is wrong",
        "unrelated - it is about something else, or both can be true at once",
    ),
    by_word=True,
)
STEPS = (ABOUT, SAME, CHANGED, WRONG)

FEATURES = (
    "about", "same", "changed", "wrong",
    "word_same", "word_updates", "word_contradicts", "word_unrelated",
    "values_conflict", "values_only_old", "values_only_new", "negated_old", "negated_new",
    "cosine", "cue_correction", "cue_change", "overlap",
)  # fmt: skip


def _logit(p: float) -> float:
    p = min(max(p, 1e-4), 1 - 1e-4)
    return math.log(p / (1 - p))


def features(
    decisions: DecisionModel, existing: str, new: str, embedder: Embedder | None, guard: GuardVerdict
) -> tuple[dict[str, float], list[Decision]]:
    """The features of one pair of statements (see FEATURES) given the guard's verdict on their
    *what* and *how*, and the decisions asked for them."""
    context = f"EXISTING note: {existing}\nNEW note: {new}"
    asked = [decisions.ask(q, context) for q in (*STEPS, WORD)]
    out = {
        name: _logit(d.raw["yes"])
        for name, d in zip(("about", "same", "changed", "wrong"), asked, strict=False)
    }
    word = asked[-1].raw
    out |= {f"word_{o}": math.log(max(word[o], 1e-6)) for o in RELATION.options}
    cosine = 0.0
    if embedder is not None:
        vectors = embedder.embed_documents([existing, new])
        cosine = float(vectors[0] @ vectors[1])
    out["cosine"] = 5 * cosine  # on the scale of the log-odds beside it
    return out | text_features(existing, new, guard), asked


def text_features(existing: str, new: str, guard: GuardVerdict) -> dict[str, float]:
    """The features that need no model: the guard's findings (on what and how), the correction
    and change cues of the new text, the words both texts share."""
    return {
        "values_conflict": float(guard.values_conflict),
        "values_only_old": float(guard.values_only_in[0]),
        "values_only_new": float(guard.values_only_in[1]),
        "negated_old": float(guard.negated[0] and not guard.negated[1]),
        "negated_new": float(guard.negated[1] and not guard.negated[0]),
        "cue_correction": float(cue_correction(new)),
        "cue_change": float(cue_change(new)),
        "overlap": 3 * overlap(existing, new),
    }


def combine(values: dict[str, float], weights: StepWeights) -> dict[str, float]:
    x = np.array([values[f] for f in weights.features])
    logits = {o: float(np.dot(weights.weights[o], x) + weights.bias[o]) for o in RELATION.options}
    top = max(logits.values())
    exp = {o: math.exp(v - top) for o, v in logits.items()}
    total = sum(exp.values())
    return {o: v / total for o, v in exp.items()}


def ask_in_steps(
    decisions: DecisionModel,
    existing: str,
    new: str,
    weights: StepWeights,
    embedder: Embedder | None,
    guard: GuardVerdict,
) -> tuple[Decision, dict[str, float]]:
    """The relation as a Decision (method ``steps``; its ``raw`` is the model's own four-way
    answer by word, before the fitted combination), and the features it was combined from."""
    values, asked = features(decisions, existing, new, embedder, guard)
    probabilities = combine(values, weights)
    answered = max(probabilities, key=lambda o: probabilities[o])
    return Decision(RELATION.id, probabilities, dict(asked[-1].raw), answered, "steps", True), values
