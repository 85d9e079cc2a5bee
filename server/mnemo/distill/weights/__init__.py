"""The fitted weights of the relation asked in steps: shipped per model family, or calibrated here.

Each shipped file (``<family>.json``) is what ``tools/fit/fit_calibration.py --steps`` prints: the
model names it applies to (a regular expression), what it was fitted on, the names of the features
it was fitted on (:data:`mnemo.distill.relation.FEATURES` then; a test checks the shipped files
still match), and per relation option a weight per feature and a bias. A model whose family has
weights is judged in steps (setting ``relation_method`` auto), and its closed questions are
answered by word.

``mnemo writer calibrate`` (:mod:`mnemo.distill.calibrate`) fits the same kind of weights for the
one model it is configured with and stores them in the user's data directory
(``weights/<model>-<hash>.json`` beside ``store/``, ``index/`` and ``models/``), naming that
model exactly. Those come first: a model calibrated here is judged by its own weights even when
its family ships some, since they were fitted on its own answers (and with the embedder in use).
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from mnemo.config import Settings
from mnemo.errors import ConfigError

WEIGHTS_DIR = Path(__file__).parent
CALIBRATED_DIR_NAME = "weights"


class StepWeights(BaseModel):
    """A fitted combination: per option, a weight per feature and a bias."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    family: str  # a regular expression the model's name matches (case-insensitive)
    fitted_on: str  # what it was fitted on, shown by `mnemo status`
    features: list[str]  # the features the weights are for, in order: FEATURES when fitted
    weights: dict[str, list[float]]  # option → one weight per feature
    bias: dict[str, float]
    # The one model `mnemo writer calibrate` fitted these for, exactly as llm_model names it;
    # "" for the family weights that ship with mnemo.
    model: str = ""

    @model_validator(mode="after")
    def _one_weight_per_feature(self) -> StepWeights:
        wrong = sorted(o for o, w in self.weights.items() if len(w) != len(self.features))
        if wrong:
            raise ValueError(f"weights of {', '.join(wrong)} do not give one per feature")
        return self

    @property
    def origin(self) -> Literal["shipped", "calibrated"]:
        """Whether these weights ship with mnemo or were calibrated for one model on this machine."""
        return "calibrated" if self.model else "shipped"

    def matches(self, model: str) -> bool:
        if self.model:
            return model == self.model
        return re.search(self.family, model, re.IGNORECASE) is not None


@cache
def shipped_weights() -> tuple[StepWeights, ...]:
    return tuple(StepWeights.model_validate_json(p.read_text()) for p in sorted(WEIGHTS_DIR.glob("*.json")))


def calibrated_dir(settings: Settings) -> Path | None:
    """Where ``mnemo writer calibrate`` keeps its weights: ``weights/`` in the user's data directory,
    beside ``index/`` (None for settings made in code, which have no such directory)."""
    return None if settings.index_dir is None else settings.index_dir.parent / CALIBRATED_DIR_NAME


def calibrated_path(directory: Path, model: str) -> Path:
    """The file of ``model``'s calibrated weights: its name made safe for a file name, and a hash of
    the exact name, so that two models whose names differ only in what was replaced
    (``qwen2.5-coder:0.5b``, ``qwen2.5-coder/0.5b``) never share a file."""
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", model).strip("._") or "model"
    digest = hashlib.sha256(model.encode("utf-8")).hexdigest()[:8]
    return directory / f"{readable[:80]}-{digest}.json"


def calibrated_weights(model: str, directory: Path) -> StepWeights | None:
    """The weights calibrated here for exactly ``model``, if any; ConfigError naming the file when
    it is not weights (a file the daemon cannot use is said, not silently passed over)."""
    path = calibrated_path(directory, model)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(f"cannot read the calibrated weights {path}: {exc.strerror}") from None
    try:
        weights = StepWeights.model_validate_json(text)
    except ValidationError as exc:
        raise ConfigError(
            f"{path} holds no calibrated weights ({exc.error_count()} problems, first: "
            f"{exc.errors()[0]['msg']}); run `mnemo writer calibrate` again or delete the file"
        ) from None
    return weights if weights.model == model else None


def store_calibrated(weights: StepWeights, directory: Path) -> Path:
    """Write ``weights`` (calibrated for ``weights.model``) whole or not at all: to a temporary file
    in the same directory, then renamed over the old one."""
    if not weights.model:
        raise ValueError("only weights calibrated for one model are stored here")
    directory.mkdir(parents=True, exist_ok=True)
    path = calibrated_path(directory, weights.model)
    fd, temporary = tempfile.mkstemp(prefix=".calibrating-", suffix=".json", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(weights.model_dump_json(indent=1) + "\n")
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path


def weights_for(model: str, settings: Settings | None = None) -> StepWeights | None:
    """The weights ``model`` is judged in steps by: those calibrated here for exactly this model
    (in the data directory ``settings`` name), else the shipped weights of its family, if any."""
    directory = None if settings is None else calibrated_dir(settings)
    if directory is not None:
        calibrated = calibrated_weights(model, directory)
        if calibrated is not None:
            return calibrated
    return next((w for w in shipped_weights() if w.matches(model)), None)
