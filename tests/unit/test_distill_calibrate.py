"""Calibrating the judge for the configured model (mnemo.distill.calibrate), through the real openai
client against the scripted server: a model whose step answers follow the labels is fitted well,
its own four-way answer is scored as it is, the judge then reads it by the weights stored for it,
and an endpoint without log-probabilities is refused at its first answer."""

from __future__ import annotations

import pytest

from mnemo.config import Settings
from mnemo.distill.calibrate import QUESTIONS_PER_PAIR, Calibration, CountingMeter, Progress
from mnemo.distill.decide import DecisionModel
from mnemo.distill.llm import LLM
from mnemo.distill.pairs import LabelledPair, shipped_pairs, spread
from mnemo.distill.relation import ABOUT, CHANGED, SAME, WORD, WRONG
from mnemo.distill.weights import calibrated_dir, store_calibrated
from mnemo.errors import ModelError
from tests.helpers import Home
from tests.llm_server import LLMServer

MODEL = "tiny-coder:0.5b"  # no weights ship for it
YES = {"yes": 0.95, "no": 0.05}
NO = {"no": 0.95, "yes": 0.05}
UNRELATED = {"un": 0.7, "same": 0.1, "updates": 0.1, "contr": 0.1}  # "un" is unrelated's first token
# Which labels a model that reads the pairs right says yes to, per step.
SAYS_YES = {
    ABOUT.text: {"same", "updates", "contradicts"},
    SAME.text: {"same"},
    CHANGED.text: {"updates"},
    WRONG.text: {"contradicts"},
}


def _settings(home: Home, server: LLMServer) -> Settings:
    return home.with_env(MNEMO_LLM_URL=server.url, MNEMO_LLM_MODEL=MODEL).settings


def _script_a_model_that_reads_the_pairs_right(server: LLMServer, pairs: tuple[LabelledPair, ...]) -> None:
    """Steps answered as the labels say; the four-way question always answered *unrelated*."""
    label_of = {p.new.what: p.label for p in pairs}

    def label(prompt: str) -> str:
        return next(value for what, value in label_of.items() if what in prompt)

    for text, labels in SAYS_YES.items():
        server.answer(contains=lambda p, t=text, ls=labels: t in p and label(p) in ls, choices=YES)
        server.answer(contains=text, choices=NO)
    server.answer(contains=WORD.text, choices=UNRELATED)
    server.answer(contains=lambda _: True, choices=YES)  # the first question: are there logprobs?


def test_a_model_whose_step_answers_follow_the_labels_is_fitted_well_and_judged_by_its_weights(
    home: Home, llm_server: LLMServer
) -> None:
    pairs = spread(shipped_pairs(), 30)
    _script_a_model_that_reads_the_pairs_right(llm_server, pairs)
    settings = _settings(home, llm_server)
    shown: list[Progress] = []
    with Calibration(settings, pairs, None) as run:
        run.check_logprobs()
        run.ask(shown.append, until=3)
        assert [p.done for p in shown] == [1, 2, 3]
        run.ask(shown.append)
        calibrated = run.fit()
    assert [p.done for p in shown] == list(range(1, 31)) and {p.total for p in shown} == {30}
    assert shown[0].left_s is not None and shown[0].left_s > 0 and shown[-1].left_s == 0
    assert len(llm_server.requests) == calibrated.calls == 1 + QUESTIONS_PER_PAIR * 30
    assert calibrated.pairs == 30 and calibrated.tokens > 0
    assert calibrated.held_out_accuracy >= 0.9  # the steps carry the label: the fit reads them
    unrelated = sum(p.label == "unrelated" for p in pairs) / 30
    assert calibrated.answered_accuracy == pytest.approx(unrelated)  # its own answer, as it is
    weights = calibrated.weights
    assert weights.model == MODEL and weights.origin == "calibrated" and weights.matches(MODEL)
    assert weights.fitted_on.startswith("30 labelled pairs shipped with mnemo (judge_pairs_fit.jsonl")
    assert f"asked of {MODEL}" in weights.fitted_on and "held-out relation accuracy" in weights.fitted_on
    # Yes to "the same, with the same values?" speaks for same; yes to "changed?" for updates.
    same_at, changed_at = weights.features.index("same"), weights.features.index("changed")
    assert weights.weights["same"][same_at] > max(
        weights.weights[o][same_at] for o in ("updates", "unrelated")
    )
    assert weights.weights["updates"][changed_at] > weights.weights["same"][changed_at]

    assert DecisionModel(LLM(settings, CountingMeter()), settings).steps is None  # nothing stored yet
    store_calibrated(weights, calibrated_dir(settings))  # type: ignore[arg-type]
    decisions = DecisionModel(LLM(settings, CountingMeter()), settings)
    assert decisions.steps == weights
    assert decisions.describe().startswith(
        "relation in steps, calibrated weights fitted on 30 labelled pairs"
    )


def test_an_endpoint_without_log_probabilities_is_refused_at_its_first_answer(
    home: Home, llm_server: LLMServer
) -> None:
    llm_server.supports_logprobs = False
    llm_server.answer(contains=lambda _: True, choices=YES)
    with (
        Calibration(_settings(home, llm_server), spread(shipped_pairs(), 10), None) as run,
        pytest.raises(ModelError, match="answers without log-probabilities.*nothing was stored"),
    ):
        run.check_logprobs()
    assert len(llm_server.requests) == 1


def test_the_fit_waits_for_every_pair_and_needs_one_per_fold(home: Home, llm_server: LLMServer) -> None:
    settings = _settings(home, llm_server)
    with pytest.raises(ValueError, match="at least 5 pairs"):
        Calibration(settings, shipped_pairs()[:4], None)
    llm_server.answer(contains=WORD.text, choices=UNRELATED)
    llm_server.answer(contains=lambda _: True, choices=NO)
    with Calibration(settings, spread(shipped_pairs(), 6), None) as run:
        run.ask(until=2)
        with pytest.raises(RuntimeError, match="4 pairs are not asked yet"):
            run.fit()


def test_answers_read_without_log_probabilities_after_the_first_are_counted(
    home: Home, llm_server: LLMServer
) -> None:
    llm_server.answer(contains=WORD.text, choices={"unrelated": 0.8, "same": 0.2})
    llm_server.answer(contains=lambda _: True, choices=NO)
    with Calibration(_settings(home, llm_server), spread(shipped_pairs(), 5), None) as run:
        run.check_logprobs()
        run.ask(until=1)
        llm_server.supports_logprobs = False  # an endpoint that stops giving them midway
        run.ask()
        calibrated = run.fit()
    assert calibrated.unread_answers == 4 * QUESTIONS_PER_PAIR  # the last four pairs, every answer
