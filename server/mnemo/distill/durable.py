"""Whether a line states something that lasts: a classifier over sentence embeddings, no model call.

A small model cannot tell a stretch of chores from one that holds a decision when asked, and a
list of cue words ("from now on", "because", "siempre") misses what people write without them
("staging is qa-eu now, the old name confused people") and passes chores that use them ("never
mind, just rerun it"). So for a small model the writer asks a logistic model over the embedding of
each line and three signals of its form (:data:`SIGNALS`: the cue words or a value, a question,
its length), fitted on lines labelled *durable* or *passing* written by several authors, in
English and Spanish (``tools/fit/fit_durable.py``, which prints the weights file to ship and the AUC
on lines it did not see).

A **person's line**: does it state a decision, a rule, a preference, a fact about the project, a
rename, a correction, a refusal and its reason — or only this session's work ("run the tests", "ok
push it", "bump axios")? A stretch is extracted when a person's line is durable by it, or by the
cue words, or asks (:func:`mnemo.distill.extract.states_something`): the classifier adds what
people write without cue words; on our own lines it is not sure enough of "From now on we deploy
the shop on Tuesdays" to stand alone (docs/benchmarks.md).

It was fitted on **drafted notes** too (the ``note`` kind and threshold), to keep a small model's
chores and work logs ("Upgraded axios to 1.7.2") as episodes only; on our own scenarios that veto
dropped right memories (the Thursday deploys, the release procedure), so the writer does not use
it; nor, on blind scenarios, did a draft resting on a person's command (the sentence it is
nearest not durable) generalise as a reason to wait for a person (docs/benchmarks/writer.md, "The
writer on data it was not tuned on").

Weights are per embedder (``weights/durable/<model id>.json``): a vector is only meaningful to
the model that made it. With no weights for the configured embedder, the cue-word rule of
:mod:`mnemo.distill.said` stands alone, and `mnemo status` says so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Literal

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, model_validator

from mnemo.distill.said import is_question, states_lasting
from mnemo.embed import Embedder

DURABLE_DIR = Path(__file__).parent / "weights" / "durable"
Kind = Literal["person", "note"]
SIGNALS = ("states_lasting", "question", "length")  # what signals() gives, in order


def signals(texts: Sequence[str]) -> npt.NDArray[np.float64]:
    """Each person's line's form, beside its embedding: cue words or a value (:func:`states_lasting`),
    a question, and its length in words (log); scaled ×3 to weigh like the embedding's strongest
    dimensions under the same L2 penalty."""
    rows = [
        (float(states_lasting(t, bare_numbers=True)), float(is_question(t)), math.log1p(len(t.split())) / 3)
        for t in texts
    ]
    return 3 * np.array(rows, dtype=np.float64).reshape(len(rows), len(SIGNALS))


class DurableWeights(BaseModel):
    """A fitted logistic model: a weight per embedding dimension, one for the kind of line, a bias,
    and the threshold each kind is cut at."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    embedder: str  # the embedder's model id the weights are for
    fitted_on: str  # what they were fitted on, shown by `mnemo status`
    weights: list[float]  # one per embedding dimension
    signal_weights: list[float]  # one per SIGNALS
    kind_weight: float  # added for a drafted note, subtracted for a person's line
    bias: float
    thresholds: dict[str, float]  # kind → the P(durable) below which a line is passing

    @model_validator(mode="after")
    def _both_kinds(self) -> DurableWeights:
        missing = sorted({"person", "note"} - set(self.thresholds))
        if missing:
            raise ValueError(f"no threshold for {', '.join(missing)}")
        if len(self.signal_weights) != len(SIGNALS):
            raise ValueError(f"signal_weights has {len(self.signal_weights)} weights, not {len(SIGNALS)}")
        return self


@cache
def shipped_durable() -> tuple[DurableWeights, ...]:
    return tuple(
        DurableWeights.model_validate_json(p.read_text()) for p in sorted(DURABLE_DIR.glob("*.json"))
    )


class Durability:
    """The classifier for one embedder."""

    def __init__(self, embedder: Embedder, weights: DurableWeights) -> None:
        if len(weights.weights) != embedder.dim:
            raise ValueError(
                f"durable weights for {weights.embedder} have {len(weights.weights)} dimensions, "
                f"the embedder {embedder.dim}"
            )
        self._embedder = embedder
        self.weights = weights
        self._w = np.asarray(weights.weights, dtype=np.float64)
        self._signals = np.asarray(weights.signal_weights, dtype=np.float64)

    @classmethod
    def for_embedder(cls, embedder: Embedder | None) -> Durability | None:
        """The shipped classifier for ``embedder``, or None when none was fitted for it."""
        if embedder is None:
            return None
        found = next((w for w in shipped_durable() if w.embedder == embedder.model_id), None)
        return None if found is None else cls(embedder, found)

    def probabilities(self, texts: Sequence[str], kind: Kind) -> list[float]:
        """P(durable) of each text read as ``kind``."""
        if not texts:
            return []
        vectors = self._embedder.embed_documents(list(texts)).astype(np.float64)
        sign = 1.0 if kind == "note" else -1.0
        logits = vectors @ self._w + self.weights.bias + sign * self.weights.kind_weight
        if kind == "person":  # a drafted note's form says little: the model wrote it
            logits += signals(texts) @ self._signals
        return [1.0 / (1.0 + math.exp(-float(z))) for z in logits]

    def durable(self, texts: Sequence[str], kind: Kind) -> list[bool]:
        """Whether each text is durable at its kind's threshold."""
        cut = self.weights.thresholds[kind]
        return [p >= cut for p in self.probabilities(texts, kind)]


def describe(embedder: Embedder | None) -> str:
    """Which durable-line rule is in force, for `mnemo status`."""
    found = Durability.for_embedder(embedder)
    if found is None:
        model = "no embedder" if embedder is None else embedder.model_id
        return f"durable lines by cue words (no classifier for {model})"
    return (
        f"durable lines by the classifier for {found.weights.embedder}, fitted on {found.weights.fitted_on}"
    )
