"""The fitted weights of the relation asked in steps, one JSON file per model family.

Each file (``<family>.json``) is what ``tools/fit_calibration.py --steps`` prints: the model names
it applies to (a regular expression), what it was fitted on, and per relation option a weight per
feature of :data:`mnemo.distill.relation.FEATURES` and a bias. A model whose family has weights is
judged in steps (setting ``relation_method`` auto), and its closed questions are answered by word.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict

WEIGHTS_DIR = Path(__file__).parent


class StepWeights(BaseModel):
    """A fitted combination: per option, a weight per feature and a bias."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    family: str  # a regular expression the model's name matches (case-insensitive)
    fitted_on: str  # what it was fitted on, shown by `mnemo status`
    weights: dict[str, list[float]]  # option → one weight per FEATURES entry
    bias: dict[str, float]

    def matches(self, model: str) -> bool:
        return re.search(self.family, model, re.IGNORECASE) is not None


@cache
def shipped_weights() -> tuple[StepWeights, ...]:
    return tuple(StepWeights.model_validate_json(p.read_text()) for p in sorted(WEIGHTS_DIR.glob("*.json")))


def weights_for(model: str) -> StepWeights | None:
    """The shipped weights of ``model``'s family, if any."""
    return next((w for w in shipped_weights() if w.matches(model)), None)
