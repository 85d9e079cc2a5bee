"""Where the step weights a model is judged by come from: calibrated here for exactly that model
(``mnemo writer calibrate`` stores them in the data directory) before those shipped for its
family; stored whole, one file per model, a damaged file named."""

from __future__ import annotations

import re

import pytest

from mnemo.distill.relation import FEATURES
from mnemo.distill.weights import (
    StepWeights,
    calibrated_dir,
    calibrated_path,
    shipped_weights,
    store_calibrated,
    weights_for,
)
from mnemo.errors import ConfigError
from tests.helpers import Home

SMALL = "qwen2.5-coder-1.5b"  # a model the shipped family weights match


def _calibrated(model: str, bias_same: float = 0.0) -> StepWeights:
    options = ("same", "updates", "contradicts", "unrelated")
    return StepWeights(
        family=f"^{re.escape(model)}$",
        fitted_on=f"10 pairs asked of {model}",
        features=list(FEATURES),
        weights={o: [0.1] * len(FEATURES) for o in options},
        bias={o: (bias_same if o == "same" else 0.0) for o in options},
        model=model,
    )


def test_weights_calibrated_here_come_before_the_shipped_ones_for_exactly_that_model(home: Home) -> None:
    settings = home.settings
    directory = calibrated_dir(settings)
    assert directory == home.path / "weights"  # beside store/ and index/
    shipped = weights_for(SMALL, settings)
    assert shipped is not None and shipped.origin == "shipped"

    path = store_calibrated(_calibrated(SMALL), directory)
    assert path.parent == directory
    mine = weights_for(SMALL, settings)
    assert mine is not None and mine.origin == "calibrated" and mine.model == SMALL
    assert mine == _calibrated(SMALL)
    # Only the exact name: the same family under another name keeps the shipped weights.
    other = weights_for(SMALL + "-instruct", settings)
    assert other is not None and other.origin == "shipped"
    assert not mine.matches(SMALL.upper()) and mine.matches(SMALL)
    # Without the data directory (settings made in code) only the shipped weights are known.
    assert weights_for(SMALL) == shipped == next(w for w in shipped_weights() if w.matches(SMALL))


def test_a_model_with_no_family_weights_is_judged_in_steps_once_calibrated(home: Home) -> None:
    settings = home.settings
    assert weights_for("llama3.2:1b", settings) is None
    store_calibrated(_calibrated("llama3.2:1b"), calibrated_dir(settings))  # type: ignore[arg-type]
    found = weights_for("llama3.2:1b", settings)
    assert found is not None and found.origin == "calibrated"


def test_models_whose_names_differ_only_in_unsafe_characters_keep_their_own_files(home: Home) -> None:
    directory = calibrated_dir(home.settings)
    assert directory is not None
    colon, slash = "qwen2.5-coder:0.5b", "qwen2.5-coder/0.5b"
    assert calibrated_path(directory, colon) != calibrated_path(directory, slash)
    assert calibrated_path(directory, slash).parent == directory  # no directory made of the name
    store_calibrated(_calibrated(colon, bias_same=1.0), directory)
    store_calibrated(_calibrated(slash, bias_same=2.0), directory)
    found_colon, found_slash = weights_for(colon, home.settings), weights_for(slash, home.settings)
    assert found_colon is not None and found_colon.bias["same"] == 1.0
    assert found_slash is not None and found_slash.bias["same"] == 2.0


def test_storing_again_replaces_the_weights_whole(home: Home) -> None:
    directory = calibrated_dir(home.settings)
    assert directory is not None
    store_calibrated(_calibrated(SMALL, bias_same=1.0), directory)
    store_calibrated(_calibrated(SMALL, bias_same=3.0), directory)
    assert [p.name for p in directory.iterdir()] == [calibrated_path(directory, SMALL).name]
    found = weights_for(SMALL, home.settings)
    assert found is not None and found.bias["same"] == 3.0
    with pytest.raises(ValueError, match="calibrated for one model"):
        store_calibrated(shipped_weights()[0], directory)


def test_a_damaged_calibrated_file_is_named_not_passed_over(home: Home) -> None:
    directory = calibrated_dir(home.settings)
    assert directory is not None
    path = calibrated_path(directory, SMALL)
    directory.mkdir(parents=True)
    path.write_text('{"family": "x", "fitted_on": "cut off')
    with pytest.raises(ConfigError, match=re.escape(str(path))):
        weights_for(SMALL, home.settings)
