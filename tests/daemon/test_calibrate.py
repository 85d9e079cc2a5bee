"""`mnemo writer calibrate` as a person runs it, against the scripted model server: it says what it
will do and how long it will take, stores the weights where the daemon finds them (and `mnemo
status` says they are calibrated here), and stops with nothing stored on Ctrl-C, on an endpoint
without log-probabilities, and when there is no one to ask and no --yes."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

from mnemo.distill.calibrate import QUESTIONS_PER_PAIR
from mnemo.distill.weights import StepWeights, calibrated_path
from mnemo.embed.fallback import FALLBACK_ID
from tests.helpers import BIN, Home
from tests.llm_server import LLMServer

MODEL = "tiny-coder:0.5b"  # no weights ship for it
YES = {"yes": 0.9, "no": 0.1}


def _configured(home: Home, server: LLMServer) -> Home:
    server.answer(contains="Which word describes the NEW note?", choices={"un": 0.8, "same": 0.2})
    server.answer(contains=lambda _: True, choices=YES)
    return home.with_env(MNEMO_LLM_URL=server.url, MNEMO_LLM_MODEL=MODEL, MNEMO_EMBEDDER=FALLBACK_ID)


def _stored(home: Home) -> list[Path]:
    directory = home.path / "weights"
    return sorted(directory.iterdir()) if directory.exists() else []


def test_calibrate_says_what_it_will_do_stores_the_weights_and_the_daemon_judges_by_them(
    home: Home, llm_server: LLMServer
) -> None:
    configured = _configured(home, llm_server)
    before = json.loads(configured.mnemo("status", "--json").stdout)["language_model"]["judging"]
    assert before.startswith("relation in one question")
    configured.mnemo("daemon", "stop")

    done = configured.mnemo("writer", "calibrate", "--limit", "8", "--yes", timeout=300)
    out = done.stdout
    assert f"calibrating how the judge reads {MODEL} at {llm_server.url}:" in out
    assert f"8 labelled pairs, {8 * QUESTIONS_PER_PAIR} questions (5 a pair)" in out
    assert f"with the embedder {FALLBACK_ID}" in out
    path = calibrated_path(home.path / "weights", MODEL)
    assert f"the weights will be stored in {path}" in out
    assert "for the 5 pairs left (" in out and "s a pair on the first 3)" in out
    assert "relation accuracy of the fitted steps, 5-fold held out: " in out
    assert "the model's own four-way answer, by word, uncalibrated: " in out
    assert f"stored in {path}; the daemon judges by them from its next start" in out
    assert "calibrating [" in done.stderr  # the progress bar
    assert len(llm_server.requests) == 1 + 8 * QUESTIONS_PER_PAIR
    assert _stored(home) == [path]
    weights = StepWeights.model_validate_json(path.read_text())
    assert weights.model == MODEL and weights.fitted_on.startswith("8 labelled pairs shipped with mnemo")

    after = json.loads(configured.mnemo("status", "--json").stdout)["language_model"]["judging"]
    assert after.startswith("relation in steps, calibrated weights fitted on 8 labelled pairs shipped")
    assert f"asked of {MODEL}" in after


def test_ctrl_c_stops_calibration_with_nothing_stored(home: Home, llm_server: LLMServer) -> None:
    configured = _configured(home, llm_server)
    started: list[subprocess.Popen[str]] = []

    def interrupt_midway(body: dict[str, Any]) -> None:
        if len(llm_server.requests) == 1 + 6 * QUESTIONS_PER_PAIR:  # the seventh pair's first question
            started[0].send_signal(signal.SIGINT)

    llm_server.on_request = interrupt_midway
    # Ctrl-C as at a terminal: a shell that runs this suite in the background hands it SIGINT
    # ignored, which its children inherit, and Python then never raises KeyboardInterrupt. A
    # handler of ours is reset to the default in the child.
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        process = subprocess.Popen(
            [str(BIN / "mnemo"), "writer", "calibrate", "--limit", "40", "--yes"],
            env=configured.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
    finally:
        signal.signal(signal.SIGINT, before)
    started.append(process)
    out, err = process.communicate(timeout=300)
    assert process.returncode == 130, err
    assert "calibration stopped: nothing stored" in err and "mnemo: interrupted" in err
    assert "stored in" not in out.replace("will be stored in", "")
    assert _stored(home) == []
    assert len(llm_server.requests) < 1 + 40 * QUESTIONS_PER_PAIR


def test_an_endpoint_without_log_probabilities_is_refused_at_its_first_answer(
    home: Home, llm_server: LLMServer
) -> None:
    llm_server.supports_logprobs = False
    configured = _configured(home, llm_server)
    done = configured.mnemo("writer", "calibrate", "--limit", "8", "--yes", check=False)
    assert done.returncode == 1
    assert f"mnemo: error: the model '{MODEL}' at {llm_server.url} answers without log-probabilities" in (
        done.stderr
    )
    assert len(llm_server.requests) == 1 and _stored(home) == []


def test_without_a_terminal_to_ask_it_needs_yes_and_a_limit_that_fills_the_folds(
    home: Home, llm_server: LLMServer
) -> None:
    configured = _configured(home, llm_server)
    command = [str(BIN / "mnemo"), "writer", "calibrate", "--limit", "8"]
    done = subprocess.run(
        command,
        env=configured.env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1 and "give --yes to run it without asking" in done.stderr
    too_few = configured.mnemo("writer", "calibrate", "--limit", "3", "--yes", check=False)
    assert too_few.returncode == 1 and "limit: at least 5 pairs" in too_few.stderr
    assert llm_server.requests == [] and _stored(home) == []
