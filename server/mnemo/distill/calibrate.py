"""``mnemo writer calibrate``: the relation's step weights fitted for the model configured here.

The weights that ship (:mod:`mnemo.distill.weights`) are fitted on one model's answers
(Qwen2.5-Coder-1.5B); any other model is judged in one question, uncalibrated. This fits weights
for the model a person actually runs: every shipped labelled pair (:mod:`mnemo.distill.pairs`) is
put to it as the judge would put it in steps (:mod:`mnemo.distill.relation`: four yes/no questions
and the four-way question by word, read from the first token's log-probabilities, beside the
features that need no model), then the combination and its temperature are fitted
(:mod:`mnemo.distill.fitting`) and scored on the folds that did not see each pair.

The steps read log-probabilities, so an endpoint that gives none is refused at its first answer.
Calls are counted by this run alone (:class:`CountingMeter`): the embedded store may be held by a
running daemon, and a calibration asked for by hand is not the writer's daily budget. Nothing is
written until the fit is done; :func:`mnemo.distill.weights.store_calibrated` writes it whole.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import TracebackType

import numpy as np

from mnemo.clock import utc_now
from mnemo.config import Settings
from mnemo.distill.decide import RELATION, SYSTEM_WORD, DecisionModel
from mnemo.distill.fitting import FOLDS, fit_steps_held_out
from mnemo.distill.judge import guard_between, statement
from mnemo.distill.llm import LLM, Message
from mnemo.distill.pairs import FIT_FILES, LabelledPair
from mnemo.distill.relation import FEATURES, STEPS, features
from mnemo.distill.weights import StepWeights
from mnemo.embed import Embedder
from mnemo.errors import ModelError

QUESTIONS_PER_PAIR = len(STEPS) + 1  # the yes/no steps and the four-way question by word
_LABELS = RELATION.options
_WORD_FEATURES = [FEATURES.index(f"word_{o}") for o in _LABELS]
# A question every model answers with one word, to see whether the endpoint gives log-probabilities.
_PROBE = "Is seven larger than three? Answer with one word: yes or no."


class CountingMeter:
    """The tokens and calls of one run, counted in this process: no store, no cap."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.calls = 0
        self.tokens = 0

    def check(self) -> None:
        """Never refuses: a calibration is asked for by hand, after being told its size."""

    def record(self, model: str, purpose: str, prompt_tokens: int, completion_tokens: int) -> None:
        with self._lock:
            self.calls += 1
            self.tokens += prompt_tokens + completion_tokens


@dataclass(frozen=True, slots=True)
class Progress:
    """Pairs asked so far, of how many, and the time they took."""

    done: int
    total: int
    elapsed_s: float

    @property
    def left_s(self) -> float | None:
        """The time the remaining pairs will take at the pace of those asked so far."""
        return None if self.done == 0 else self.elapsed_s / self.done * (self.total - self.done)


@dataclass(frozen=True, slots=True)
class Calibrated:
    """The fitted weights, and how well they and the model's own answer do on the pairs."""

    weights: StepWeights
    pairs: int
    held_out_accuracy: float  # the fitted combination on the folds that did not see each pair
    answered_accuracy: float  # the model's own four-way answer by word, uncalibrated
    temperature: float
    seconds: float  # asking the pairs
    calls: int
    tokens: int
    unread_answers: int  # read from the word written, no alternative naming an option


class Calibration:
    """One calibration of the configured model: :meth:`ask` the pairs, then :meth:`fit`.

    A context manager: it holds the connection to the model. ``settings`` are the user's; the
    embedder must be the one the daemon judges with (its cosine is a feature).
    """

    def __init__(self, settings: Settings, pairs: Sequence[LabelledPair], embedder: Embedder | None) -> None:
        if len(pairs) < FOLDS:
            raise ValueError(f"calibration needs at least {FOLDS} pairs (one per fold), got {len(pairs)}")
        self.meter = CountingMeter()
        self._llm = LLM(settings, self.meter)
        try:
            # The steps are asked by word whatever the settings say of the relation: "one" here
            # keeps the decision model from looking for weights this run is about to fit.
            one = settings.model_copy(update={"relation_method": "one"})
            self._decisions = DecisionModel(self._llm, one)
        except BaseException:
            self._llm.close()
            raise
        self._pairs = tuple(pairs)
        self._embedder = embedder
        self._rows: list[list[float]] = []
        self._unread = 0  # answers read from the word written: no alternative named an option
        self._asking_s = 0.0

    @property
    def model(self) -> str:
        return self._llm.model

    @property
    def endpoint(self) -> str:
        return self._llm.endpoint

    @property
    def total(self) -> int:
        return len(self._pairs)

    @property
    def seconds_asking(self) -> float:
        """The time the pairs asked so far took (the probe and the fit aside)."""
        return self._asking_s

    def __enter__(self) -> Calibration:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._llm.close()

    def check_logprobs(self) -> None:
        """One question; ModelError when the endpoint answers it without log-probabilities."""
        reply = self._llm.chat(
            [Message("system", SYSTEM_WORD), Message("user", _PROBE)],
            purpose="calibrate:probe",
            max_tokens=1,
            top_logprobs=5,
        )
        if reply.top_logprobs is None:
            raise ModelError(
                f"the model {self.model!r} at {self.endpoint} answers without log-probabilities, and "
                "calibration reads every answer from them: serve it where the OpenAI-compatible API "
                "gives logprobs (llama.cpp's llama-server and vLLM do); nothing was stored"
            )

    def ask(self, progress: Callable[[Progress], None] | None = None, *, until: int | None = None) -> None:
        """Ask the pairs not asked yet, up to ``until`` of them in all (all by default), calling
        ``progress`` after each. Stopping in between (Ctrl-C) loses only the pair being asked."""
        stop = self.total if until is None else min(until, self.total)
        for pair in self._pairs[len(self._rows) : stop]:
            started = time.perf_counter()
            self._rows.append(self._features(pair))
            self._asking_s += time.perf_counter() - started
            if progress is not None:
                progress(Progress(len(self._rows), self.total, self._asking_s))

    def _features(self, pair: LabelledPair) -> list[float]:
        existing, new = pair.existing_memory(), pair.new_memory()
        values, asked = features(
            self._decisions,
            statement(existing.what, existing.why, existing.how),
            statement(new.what, new.why, new.how),
            self._embedder,
            guard_between(existing, new),
        )
        # An answer none of whose alternatives names an option is read from the word it wrote, as
        # the judge reads it (mnemo.distill.decide): so it is fitted, and counted.
        self._unread += sum(d.method != "logprobs" for d in asked)
        return [values[f] for f in FEATURES]

    def fit(self) -> Calibrated:
        """The weights fitted on every pair (all must have been asked), and their scores."""
        if len(self._rows) < self.total:
            raise RuntimeError(f"{self.total - len(self._rows)} pairs are not asked yet")
        x = np.array(self._rows, dtype=np.float64)
        labels = np.array([_LABELS.index(p.label) for p in self._pairs], dtype=np.int64)
        w, b, held_out, temperature = fit_steps_held_out(x, labels, len(_LABELS))
        held_out_accuracy = float((held_out.argmax(axis=1) == labels).mean())
        answered_accuracy = float((x[:, _WORD_FEATURES].argmax(axis=1) == labels).mean())
        embedder = self._embedder.model_id if self._embedder is not None else "none"
        fitted_on = (
            f"{self.total} labelled pairs shipped with mnemo ({', '.join(FIT_FILES)}), asked of "
            f"{self.model} on {utc_now():%Y-%m-%d} by `mnemo writer calibrate` with the embedder "
            f"{embedder}; {FOLDS}-fold held-out relation accuracy {held_out_accuracy:.3f}"
        )
        weights = StepWeights(
            family=f"^{re.escape(self.model)}$",
            fitted_on=fitted_on,
            features=list(FEATURES),
            weights={o: [round(float(v), 4) for v in w[:, i]] for i, o in enumerate(_LABELS)},
            bias={o: round(float(b[i]), 4) for i, o in enumerate(_LABELS)},
            model=self.model,
        )
        return Calibrated(
            weights,
            self.total,
            held_out_accuracy,
            answered_accuracy,
            temperature,
            self._asking_s,
            self.meter.calls,
            self.meter.tokens,
            self._unread,
        )
