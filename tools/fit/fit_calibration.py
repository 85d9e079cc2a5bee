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

    python -m tools.fit.fit_calibration labelled.jsonl

``--steps FEATURES.jsonl --family REGEX --fitted-on TEXT`` fits instead the weights of the
relation asked in steps (:mod:`mnemo.distill.relation`) from the features that
``tools/evals/eval_writer.py --collect-steps`` writes, prints 5-fold cross-validated and training
accuracy, and prints the weights file to ship in ``server/mnemo/distill/weights/``. That fit is
:mod:`mnemo.distill.fitting`'s, the one ``mnemo writer calibrate`` runs on a user's own model.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from mnemo.distill.decide import QUESTIONS
from mnemo.distill.fitting import FLOOR, Arrays, descend, fit_steps_held_out, softmax

L2 = 1e-3


@dataclass(frozen=True)
class Fit:
    temperature: float
    bias: dict[str, float]


@dataclass(frozen=True)
class Scores:
    nll: float
    accuracy: float
    ece: float


def fit(log_p: npt.NDArray[np.float64], labels: npt.NDArray[np.int64], options: list[str]) -> Fit:
    """Inverse temperature and biases minimising the mean NLL (+ L2 on the biases)."""
    n, k = log_p.shape
    onehot = np.zeros((n, k))
    onehot[np.arange(n), labels] = 1.0

    def loss(params: Arrays) -> float:
        s, b = params
        q = softmax(s * log_p + b)
        return float(-np.log(q[np.arange(n), labels] + FLOOR).mean() + L2 * (b**2).sum())

    def gradient(params: Arrays) -> Arrays:
        s, b = params
        error = (softmax(s * log_p + b) - onehot) / n
        return np.array((error * log_p).sum()), error.sum(axis=0) + 2 * L2 * b

    slope, bias = descend(
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
    return softmax(log_p / result.temperature + bias)


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


def steps_main(path: Path, family: str, fitted_on: str) -> None:
    from mnemo.distill.relation import FEATURES

    options = list(QUESTIONS["relation"].options)
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    try:
        x = np.array([[float(r["features"][f]) for f in FEATURES] for r in rows])
        labels = np.array([options.index(r["label"]) for r in rows], dtype=np.int64)
    except (KeyError, ValueError, TypeError) as exc:
        raise SystemExit(f"{path}: not step features ({exc!r})") from None
    w, b, held_out, temperature = fit_steps_held_out(x, labels, len(options))
    before = scores(softmax(held_out * temperature), labels)
    after = scores(softmax(held_out), labels)
    fitted = scores(softmax(x @ w + b), labels)
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
