"""The fitted weights of the relation asked in steps, one JSON file per model family.

Each file (``<family>.json``) is what ``tools/fit_calibration.py --steps`` prints: the model names
it applies to (a regular expression), what it was fitted on, the names of the features it was
fitted on (:data:`mnemo.distill.relation.FEATURES` then; a test checks the shipped files still
match), and per relation option a weight per feature and a bias. A model whose family has weights is
judged in steps (setting ``relation_method`` auto), and its closed questions are answered by word.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, model_validator

WEIGHTS_DIR = Path(__file__).parent


class StepWeights(BaseModel):
    """A fitted combination: per option, a weight per feature and a bias."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    family: str  # a regular expression the model's name matches (case-insensitive)
    fitted_on: str  # what it was fitted on, shown by `mnemo status`
    features: list[str]  # the features the weights are for, in order: FEATURES when fitted
    weights: dict[str, list[float]]  # option → one weight per feature
    bias: dict[str, float]

    @model_validator(mode="after")
    def _one_weight_per_feature(self) -> StepWeights:
        wrong = sorted(o for o, w in self.weights.items() if len(w) != len(self.features))
        if wrong:
            raise ValueError(f"weights of {', '.join(wrong)} do not give one per feature")
        return self

    def matches(self, model: str) -> bool:
        return re.search(self.family, model, re.IGNORECASE) is not None


@cache
def shipped_weights() -> tuple[StepWeights, ...]:
    return tuple(StepWeights.model_validate_json(p.read_text()) for p in sorted(WEIGHTS_DIR.glob("*.json")))


def weights_for(model: str) -> StepWeights | None:
    """The shipped weights of ``model``'s family, if any."""
    return next((w for w in shipped_weights() if w.matches(model)), None)
