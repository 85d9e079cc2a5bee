"""The fit behind the relation asked in steps (mnemo.distill.fitting), on data whose answer is known:
rows it did not see are told apart, and a temperature put into the logits is found again."""

from __future__ import annotations

import numpy as np
import pytest

from mnemo.distill.fitting import fit_steps, fit_steps_held_out, softmax, steps_temperature

CLASSES = 4


def _separable(rows: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows whose class shows in its own feature (plus noise), and two features of noise alone."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, CLASSES, rows)
    x = rng.normal(0, 1, (rows, CLASSES + 2))
    x[np.arange(rows), labels] += 3.0
    return x, labels.astype(np.int64)


def test_the_fit_tells_apart_rows_it_did_not_see_as_the_features_do() -> None:
    x, labels = _separable(400, seed=1)
    w, b, held_out, temperature = fit_steps_held_out(x, labels, CLASSES)
    accuracy = float((held_out.argmax(axis=1) == labels).mean())
    # The best possible here (each class's own feature 3 σ above the rest) is about 0.95.
    assert accuracy > 0.88
    assert w.shape == (CLASSES + 2, CLASSES) and b.shape == (CLASSES,)
    assert abs(float(b.mean())) < 1e-9  # only differences between classes matter
    # Each class leans on its own feature, not on the noise.
    assert list(w[:CLASSES].argmax(axis=1)) == list(range(CLASSES))
    assert float(np.abs(w[CLASSES:]).max()) < float(np.abs(w[:CLASSES]).max()) / 3
    # New rows from the same source are read as well by the weights fitted on all.
    fresh, fresh_labels = _separable(400, seed=2)
    assert float(((fresh @ w + b).argmax(axis=1) == fresh_labels).mean()) > 0.88
    assert temperature > 0


def test_the_same_rows_give_the_same_fit() -> None:
    x, labels = _separable(120, seed=3)
    first, again = fit_steps_held_out(x, labels, CLASSES), fit_steps_held_out(x, labels, CLASSES)
    for a, b in zip(first[:3], again[:3], strict=True):
        np.testing.assert_array_equal(a, b)
    assert first[3] == again[3]


def test_a_temperature_put_into_the_logits_is_found_again() -> None:
    rng = np.random.default_rng(4)
    logits = rng.normal(0, 1.5, (4_000, CLASSES))
    truth = softmax(logits)
    labels = np.array([rng.choice(CLASSES, p=p) for p in truth], dtype=np.int64)
    # A combination sure of itself 2.5 times too much: its temperature is 2.5.
    assert steps_temperature(2.5 * logits, labels) == pytest.approx(2.5, rel=0.08)
    assert steps_temperature(logits / 2, labels) == pytest.approx(0.5, rel=0.08)


def test_a_class_no_row_has_gets_a_bias_below_the_others() -> None:
    x, labels = _separable(200, seed=5)
    kept = labels != 3
    _, b = fit_steps(x[kept], labels[kept], CLASSES)
    assert b[3] < b[:3].min()
