"""Fit the decision model's calibration from labelled decisions; print the settings table.

Input: JSON lines, one labelled decision each, with the normalised option probabilities the
model gave (``raw``, as the judge log records them) and the right answer::

    {"question": "relation", "label": "updates",
     "raw": {"same": 0.7, "updates": 0.2, "contradicts": 0.05, "unrelated": 0.05}}

Per question it fits ``p ∝ exp(log p / T + bias[option])`` — a multinomial logistic regression
on the log-probabilities with one slope (1/T) and one intercept per option, which is convex — by
gradient descent on the mean negative log-likelihood (a small L2 penalty keeps the biases of
options that are rarely the answer finite). It prints, before and after: NLL, accuracy and the
expected calibration error (ECE, 10 bins of the top probability), then the TOML table to put in
the config file (see docs/settings.md, ``calibration``).

    python tools/fit_calibration.py labelled.jsonl

``--steps FEATURES.jsonl --family REGEX --fitted-on TEXT`` fits instead the weights of the
relation asked in steps (:mod:`mnemo.distill.relation`) from the features that
``tools/eval_writer.py --collect-steps`` writes, prints 5-fold cross-validated and training
accuracy, and prints the weights file to ship in ``server/mnemo/distill/weights/``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from mnemo.distill.decide import QUESTIONS

FLOOR = 1e-9
L2 = 1e-3
STEPS = 3_000


@dataclass(frozen=True)
class Fit:
    temperature: float
    bias: dict[str, float]


@dataclass(frozen=True)
class Scores:
    nll: float
    accuracy: float
    ece: float


def _softmax(z: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    out: npt.NDArray[np.float64] = e / e.sum(axis=1, keepdims=True)
    return out


Arrays = tuple[npt.NDArray[np.float64], ...]


def _descend(
    loss: Callable[[Arrays], float],
    gradient: Callable[[Arrays], Arrays],
    start: Arrays,
    project: Callable[[Arrays], Arrays] = lambda p: p,
) -> Arrays:
    """Gradient descent with backtracking: each step shrinks until the loss goes down, then grows;
    ``project`` keeps the parameters where they are allowed."""
    params, current, step = start, loss(start), 1.0
    for _ in range(STEPS):
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


def fit(log_p: npt.NDArray[np.float64], labels: npt.NDArray[np.int64], options: list[str]) -> Fit:
    """Inverse temperature and biases minimising the mean NLL (+ L2 on the biases)."""
    n, k = log_p.shape
    onehot = np.zeros((n, k))
    onehot[np.arange(n), labels] = 1.0

    def loss(params: Arrays) -> float:
        s, b = params
        q = _softmax(s * log_p + b)
        return float(-np.log(q[np.arange(n), labels] + FLOOR).mean() + L2 * (b**2).sum())

    def gradient(params: Arrays) -> Arrays:
        s, b = params
        error = (_softmax(s * log_p + b) - onehot) / n
        return np.array((error * log_p).sum()), error.sum(axis=0) + 2 * L2 * b

    slope, bias = _descend(
        loss, gradient, (np.array(1.0), np.zeros(k)), lambda p: (np.maximum(0.01, p[0]), p[1])
    )
    bias = bias - bias.mean()  # only differences between options matter
    return Fit(1.0 / float(slope), {o: float(b) for o, b in zip(options, bias, strict=True)})


def scores(p: npt.NDArray[np.float64], labels: npt.NDArray[np.int64]) -> Scores:
    n = len(labels)
    nll = float(-np.log(p[np.arange(n), labels] + FLOOR).mean())
    top = p.argmax(axis=1)
    confidence = p.max(axis=1)
    correct = (top == labels).astype(float)
    ece = 0.0
    for low in np.linspace(0, 1, 10, endpoint=False):
        in_bin = (confidence > low) & (confidence <= low + 0.1)
        if in_bin.any():
            ece += in_bin.mean() * abs(correct[in_bin].mean() - confidence[in_bin].mean())
    return Scores(nll, float(correct.mean()), float(ece))


def calibrated(log_p: npt.NDArray[np.float64], result: Fit, options: list[str]) -> npt.NDArray[np.float64]:
    bias = np.array([result.bias[o] for o in options])
    return _softmax(log_p / result.temperature + bias)


def read(path: Path) -> dict[str, tuple[npt.NDArray[np.float64], npt.NDArray[np.int64]]]:
    rows: dict[str, tuple[list[list[float]], list[int]]] = defaultdict(lambda: ([], []))
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
                question = QUESTIONS[item["question"]]
                options = list(question.options)
                raw = [float(item["raw"][o]) for o in options]
                label = options.index(item["label"])
            except (ValueError, KeyError, TypeError) as exc:
                raise SystemExit(f"{path}:{number}: not a labelled decision ({exc!r})") from None
            log_p, labels = rows[question.id]
            log_p.append(list(np.log(np.maximum(raw, FLOOR))))
            labels.append(label)
    return {q: (np.array(lp), np.array(lb, dtype=np.int64)) for q, (lp, lb) in rows.items()}


def fit_steps(
    x: npt.NDArray[np.float64], labels: npt.NDArray[np.int64], l2: float = 0.003
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Weights (features × options) and biases of a multinomial logistic model, L2 on the weights."""
    n, d = x.shape
    k = len(QUESTIONS["relation"].options)
    onehot = np.zeros((n, k))
    onehot[np.arange(n), labels] = 1.0

    def loss(params: Arrays) -> float:
        w, b = params
        q = _softmax(x @ w + b)
        return float(-np.log(q[np.arange(n), labels] + FLOOR).mean() + l2 * (w**2).sum())

    def gradient(params: Arrays) -> Arrays:
        w, b = params
        error = (_softmax(x @ w + b) - onehot) / n
        return x.T @ error + 2 * l2 * w, error.sum(axis=0)

    w, b = _descend(loss, gradient, (np.zeros((d, k)), np.zeros(k)))
    return w, b - b.mean()


def steps_temperature(logits: npt.NDArray[np.float64], labels: npt.NDArray[np.int64]) -> float:
    """The temperature T that minimises the NLL of ``softmax(logits / T)``: as :func:`fit`, an
    inverse temperature fitted by descent, without biases (the logits have theirs)."""
    n = len(labels)
    onehot = np.zeros(logits.shape)
    onehot[np.arange(n), labels] = 1.0

    def loss(params: Arrays) -> float:
        q = _softmax(params[0] * logits)
        return float(-np.log(q[np.arange(n), labels] + FLOOR).mean())

    def gradient(params: Arrays) -> Arrays:
        error = (_softmax(params[0] * logits) - onehot) / n
        return (np.array((error * logits).sum()),)

    (slope,) = _descend(loss, gradient, (np.array(1.0),), lambda p: (np.maximum(0.01, p[0]),))
    return 1.0 / float(slope)


def fit_steps_held_out(
    x: npt.NDArray[np.float64], labels: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64], npt.NDArray[np.float64], float]:
    """The combination fitted on all rows, its weights and biases divided by one temperature; each
    row's logits from the 5 folds that did not see it, divided by the same temperature; and the
    temperature. The L2 penalty leaves the combination less sure than it is right on pairs it was
    not fitted on: the temperature, fitted on the held-out logits, corrects that (the 0.6 rule
    reads these probabilities as they are)."""
    order = np.random.RandomState(0).permutation(len(labels))
    held_out = np.zeros((len(labels), len(QUESTIONS["relation"].options)))
    folds = np.array_split(order, 5)
    for i, test in enumerate(folds):
        train = np.concatenate([f for j, f in enumerate(folds) if j != i])
        w, b = fit_steps(x[train], labels[train])
        held_out[test] = x[test] @ w + b
    temperature = steps_temperature(held_out, labels)
    w, b = fit_steps(x, labels)
    return w / temperature, b / temperature, held_out / temperature, temperature


def steps_main(path: Path, family: str, fitted_on: str) -> None:
    from mnemo.distill.relation import FEATURES

    options = list(QUESTIONS["relation"].options)
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    try:
        x = np.array([[float(r["features"][f]) for f in FEATURES] for r in rows])
        labels = np.array([options.index(r["label"]) for r in rows], dtype=np.int64)
    except (KeyError, ValueError, TypeError) as exc:
        raise SystemExit(f"{path}: not step features ({exc!r})") from None
    w, b, held_out, temperature = fit_steps_held_out(x, labels)
    before = scores(_softmax(held_out * temperature), labels)
    after = scores(_softmax(held_out), labels)
    fitted = scores(_softmax(x @ w + b), labels)
    print(
        f"relation in steps: {len(rows)} pairs; 5-fold accuracy {before.accuracy:.3f}, "
        f"NLL {before.nll:.3f} → {after.nll:.3f} and ECE {before.ece:.3f} → {after.ece:.3f} "
        f"with temperature {temperature:.2f}; training accuracy {fitted.accuracy:.3f}",
        file=sys.stderr,
    )
    weights = {o: [round(float(v), 4) for v in w[:, i]] for i, o in enumerate(options)}
    out = {
        "family": family,
        "fitted_on": fitted_on,
        "features": list(FEATURES),
        "weights": weights,
        "bias": {o: round(float(b[i]), 4) for i, o in enumerate(options)},
    }
    print(json.dumps(out, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("labelled", type=Path, help="JSON lines of labelled decisions (or step features)")
    parser.add_argument("--steps", action="store_true", help="fit the relation's step weights")
    parser.add_argument("--family", default="", help="with --steps: the model names they are for (a regex)")
    parser.add_argument("--fitted-on", default="", help="with --steps: what they were fitted on")
    args = parser.parse_args()
    if args.steps:
        if not args.family:
            parser.error("--steps needs --family")
        steps_main(args.labelled, args.family, args.fitted_on)
        return
    data = read(args.labelled)
    if not data:
        raise SystemExit(f"{args.labelled}: no labelled decisions")
    tables = []
    for qid, (log_p, labels) in sorted(data.items()):
        options = list(QUESTIONS[qid].options)
        result = fit(log_p, labels, options)
        before = scores(np.exp(log_p) / np.exp(log_p).sum(axis=1, keepdims=True), labels)
        after = scores(calibrated(log_p, result, options), labels)
        print(
            f"{qid}: {len(labels)} decisions; NLL {before.nll:.3f} → {after.nll:.3f}; accuracy "
            f"{before.accuracy:.3f} → {after.accuracy:.3f}; ECE {before.ece:.3f} → {after.ece:.3f}",
            file=sys.stderr,
        )
        bias = ", ".join(f"{o} = {result.bias[o]:.3f}" for o in options)
        tables.append(f"[calibration.{qid}]\ntemperature = {result.temperature:.3f}\nbias = {{ {bias} }}\n")
    print("\n".join(tables), end="")


if __name__ == "__main__":
    main()
