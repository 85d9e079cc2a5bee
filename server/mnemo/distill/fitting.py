"""The numbers behind the relation asked in steps: fitting its weights and its temperature.

A multinomial logistic model over the step features (:mod:`mnemo.distill.relation`), fitted by
gradient descent on the mean negative log-likelihood with an L2 penalty on the weights, and a
temperature fitted on predictions for rows the fit did not see (k-fold). numpy only: the same code
serves ``mnemo writer calibrate`` (:mod:`mnemo.distill.calibrate`), which fits on the user's
machine, and ``tools/fit/fit_calibration.py``, which fits the weights that ship.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

FLOOR = 1e-9  # a probability never taken the log of below this
MAX_ITERATIONS = 3_000
FOLDS = 5

Floats = npt.NDArray[np.float64]
Labels = npt.NDArray[np.int64]
Arrays = tuple[Floats, ...]


def softmax(z: Floats) -> Floats:
    """Row-wise softmax, shifted by each row's maximum so that no exponent overflows."""
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    out: Floats = e / e.sum(axis=1, keepdims=True)
    return out


def descend(
    loss: Callable[[Arrays], float],
    gradient: Callable[[Arrays], Arrays],
    start: Arrays,
    project: Callable[[Arrays], Arrays] = lambda p: p,
) -> Arrays:
    """Gradient descent with backtracking: each step shrinks until the loss goes down, then grows;
    ``project`` keeps the parameters where they are allowed. The losses here are convex, so this
    plain method reaches their minimum without a step size to tune."""
    params, current, step = start, loss(start), 1.0
    for _ in range(MAX_ITERATIONS):
        grad = gradient(params)
        while step > 1e-8:
            trial = project(tuple(p - step * g for p, g in zip(params, grad, strict=True)))
            trial_loss = loss(trial)
            if trial_loss < current:
                params, current = trial, trial_loss
                step *= 1.5
                break
            step /= 2
        else:
            break
    return params


def fit_steps(x: Floats, labels: Labels, classes: int, l2: float = 0.003) -> tuple[Floats, Floats]:
    """Weights (features × classes) and biases of a multinomial logistic model, L2 on the weights
    (not the biases: a class rarely the answer keeps its prior)."""
    n, d = x.shape
    onehot = np.zeros((n, classes))
    onehot[np.arange(n), labels] = 1.0

    def loss(params: Arrays) -> float:
        w, b = params
        q = softmax(x @ w + b)
        return float(-np.log(q[np.arange(n), labels] + FLOOR).mean() + l2 * (w**2).sum())

    def gradient(params: Arrays) -> Arrays:
        w, b = params
        error = (softmax(x @ w + b) - onehot) / n
        return x.T @ error + 2 * l2 * w, error.sum(axis=0)

    w, b = descend(loss, gradient, (np.zeros((d, classes)), np.zeros(classes)))
    return w, b - b.mean()


def steps_temperature(logits: Floats, labels: Labels) -> float:
    """The temperature T that minimises the NLL of ``softmax(logits / T)``: an inverse temperature
    fitted by descent, without biases (the logits have theirs)."""
    n = len(labels)
    onehot = np.zeros(logits.shape)
    onehot[np.arange(n), labels] = 1.0

    def loss(params: Arrays) -> float:
        q = softmax(params[0] * logits)
        return float(-np.log(q[np.arange(n), labels] + FLOOR).mean())

    def gradient(params: Arrays) -> Arrays:
        error = (softmax(params[0] * logits) - onehot) / n
        return (np.array((error * logits).sum()),)

    (slope,) = descend(loss, gradient, (np.array(1.0),), lambda p: (np.maximum(0.01, p[0]),))
    return 1.0 / float(slope)


def fit_steps_held_out(x: Floats, labels: Labels, classes: int) -> tuple[Floats, Floats, Floats, float]:
    """The combination fitted on all rows, its weights and biases divided by one temperature; each
    row's logits from the 5 folds that did not see it, divided by the same temperature; and the
    temperature. The L2 penalty leaves the combination less sure than it is right on pairs it was
    not fitted on: the temperature, fitted on the held-out logits, corrects that (the 0.6 rule
    reads these probabilities as they are). The folds are drawn with a fixed seed: the same rows
    give the same fit."""
    order = np.random.RandomState(0).permutation(len(labels))
    held_out = np.zeros((len(labels), classes))
    folds = np.array_split(order, FOLDS)
    for i, test in enumerate(folds):
        train = np.concatenate([f for j, f in enumerate(folds) if j != i])
        w, b = fit_steps(x[train], labels[train], classes)
        held_out[test] = x[test] @ w + b
    temperature = steps_temperature(held_out, labels)
    w, b = fit_steps(x, labels, classes)
    return w / temperature, b / temperature, held_out / temperature, temperature
