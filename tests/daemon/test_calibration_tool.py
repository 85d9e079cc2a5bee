"""tools/fit/fit_calibration.py recovers a known miscalibration, and its table loads as settings."""

from __future__ import annotations

import json
import math
import subprocess
from pathlib import Path

import numpy as np

from mnemo.distill.decide import RELATION, calibrate
from tests.helpers import Home
from tests.lab import tool_command, tool_env

TOOL = "tools.fit.fit_calibration"


def _softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_an_overconfident_model_gets_its_temperature_back(home: Home, tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    logits = rng.normal(0, 1.2, (3_000, 4))
    truth = _softmax(logits)
    labels = [rng.choice(4, p=p) for p in truth]
    raw = _softmax(2.5 * logits)  # the model is sure of itself 2.5 times too much
    lines = [
        json.dumps({"question": "relation", "raw": dict(zip(RELATION.options, map(float, r), strict=True)),
                    "label": RELATION.options[label]})
        for r, label in zip(raw, labels, strict=True)
    ]  # fmt: skip
    labelled = tmp_path / "labelled.jsonl"
    labelled.write_text("\n".join(lines) + "\n")

    done = subprocess.run(
        tool_command(TOOL, str(labelled)),
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env=tool_env(),
    )
    (home.path / "config.toml").write_text(done.stdout)
    fitted = home.settings.calibration["relation"]  # the printed table is a valid config file
    assert 2.2 < fitted.temperature < 2.8
    assert max(abs(b) for b in fitted.bias.values()) < 0.15  # no option was favoured
    report = done.stderr
    assert report.startswith("relation: 3000 decisions; NLL ")
    nll_before, nll_after = (float(x) for x in report.split("NLL ")[1].split(";")[0].split(" → "))
    ece_before, ece_after = (float(x) for x in report.split("ECE ")[1].split(" → "))
    assert nll_after < nll_before and ece_after < ece_before / 3

    # The daemon's own calibrate() with the fitted table gives the true probabilities back.
    recovered = [calibrate(dict(zip(RELATION.options, r, strict=True)), fitted) for r in raw[:200]]
    error = max(
        abs(p[o] - t)
        for p, row in zip(recovered, truth[:200], strict=True)
        for o, t in zip(RELATION.options, row, strict=True)
    )
    assert error < 0.05 and not math.isnan(error)


def test_a_malformed_line_is_named(tmp_path: Path) -> None:
    labelled = tmp_path / "bad.jsonl"
    labelled.write_text('{"question": "relation", "raw": {"same": 1}, "label": "same"}\n')
    done = subprocess.run(
        tool_command(TOOL, str(labelled)),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=tool_env(),
    )
    assert done.returncode == 1 and f"{labelled}:1: not a labelled decision" in done.stderr
