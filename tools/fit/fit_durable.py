"""Fit the durable-line classifier (:mod:`mnemo.distill.durable`) and score it on lines it never saw.

Input: labelled lines, JSON lines::

    {"id": "fa-l001", "lang": "en|es|mixed", "kind": "person|note", "text": "...",
     "label": "durable|passing"}

``--fit FILE`` (repeatable) fits an L2-regularised logistic model over the configured embedder's
vectors of the lines, three signals of their form and a weight for the kind; its strength is chosen by 5-fold
cross-validation, and each kind's threshold is the highest that keeps ``--keep`` of the durable
lines of that kind on the held-out folds (a durable line cut is a memory lost; a passing line kept
costs one extraction the other rails still judge). Printed: the held-out AUC per kind and
language. ``--out FILE`` writes the weights file to ship in
``server/mnemo/distill/weights/durable/``. ``--score FILE`` (repeatable) prints AUC and what the
thresholds keep and cut on other lines (fitted now, or the shipped weights without ``--fit``).

    MNEMO_EMBEDDER=use-multilingual-v3 python -m tools.fit.fit_durable --fit lines.jsonl --out w.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from mnemo.config import load_settings
from mnemo.distill.durable import Durability, DurableWeights, signals
from mnemo.embed import Embedder, load_embedder
from tools.evals.eval_pairs import auc

KINDS = ("person", "note")
LANGS = ("en", "es", "mixed")
STRENGTHS = (0.001, 0.003, 0.01, 0.03, 0.1, 0.3)
Matrix = npt.NDArray[np.float64]


def load_lines(path: Path) -> list[dict[str, str]]:
    """The labelled lines of a file; SystemExit naming the line and the problem."""
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise SystemExit(f"{path}:{number}: not JSON ({exc})") from None
        for key, allowed in (("kind", KINDS), ("label", ("durable", "passing")), ("lang", LANGS)):
            if row.get(key) not in allowed:
                raise SystemExit(
                    f"{path}:{number}: {key} is {row.get(key)!r}, not one of {', '.join(allowed)}"
                )
        if not isinstance(row.get("text"), str) or not row["text"].strip():
            raise SystemExit(f"{path}:{number}: text must be a non-empty string")
        rows.append(row)
    return rows


def design(embedder: Embedder, rows: Sequence[dict[str, str]]) -> Matrix:
    """Each line's vector, its signals (:data:`mnemo.distill.durable.SIGNALS`), then +1 for a note
    and -1 for a person's line."""
    texts = [r["text"] for r in rows]
    vectors = embedder.embed_documents(texts).astype(np.float64)
    kind = np.array([[1.0 if r["kind"] == "note" else -1.0] for r in rows])
    person = kind < 0  # a drafted note's signals are not weighed (mnemo.distill.durable)
    return np.hstack([vectors, signals(texts) * person, kind])


def logistic(x: Matrix, y: Matrix, strength: float) -> tuple[Matrix, float]:
    """Weights and bias by Newton's method on the mean log-loss plus ``strength`` × |w|²."""
    n, d = x.shape
    w, b = np.zeros(d), 0.0
    for _ in range(25):
        p = 1 / (1 + np.exp(-(x @ w + b)))
        g_w = x.T @ (p - y) / n + 2 * strength * w
        g_b = float((p - y).mean())
        s = p * (1 - p) / n
        h = np.zeros((d + 1, d + 1))
        h[:d, :d] = x.T @ (x * s[:, None]) + 2 * strength * np.eye(d)
        h[:d, d] = h[d, :d] = x.T @ s
        h[d, d] = s.sum() + 1e-9
        step = np.linalg.solve(h, np.concatenate([g_w, [g_b]]))
        w, b = w - step[:d], b - float(step[d])
        if np.abs(step).max() < 1e-7:
            break
    return w, b


def held_out(x: Matrix, y: Matrix, strength: float) -> Matrix:
    """Each row's P(durable) from the 5 folds that did not see it."""
    order = np.random.RandomState(0).permutation(len(y))
    out = np.zeros(len(y))
    for fold in np.array_split(order, 5):
        train = np.setdiff1d(order, fold)
        w, b = logistic(x[train], y[train], strength)
        out[fold] = 1 / (1 + np.exp(-(x[fold] @ w + b)))
    return out


def threshold(p: Sequence[float], durable: Sequence[bool], keep: float) -> float:
    """The highest cut that keeps ``keep`` of the durable lines."""
    kept = sorted((s for s, d in zip(p, durable, strict=True) if d), reverse=True)
    if not kept:
        return 0.5
    return float(kept[min(len(kept) - 1, int(np.ceil(keep * len(kept))) - 1)])


def report(rows: Sequence[dict[str, str]], p: Sequence[float], cuts: dict[str, float]) -> dict[str, Any]:
    """AUC per kind and language; at the thresholds, the durable lines kept and the passing cut."""
    groups: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(rows):
        for key in (r["kind"], f"{r['kind']}/{r['lang']}"):
            groups[key].append(i)
    out: dict[str, Any] = {}
    for key, index in sorted(groups.items()):
        durable = [rows[i]["label"] == "durable" for i in index]
        scores = [p[i] for i in index]
        cut = cuts[key.split("/")[0]]
        kept = sum(s >= cut for s, d in zip(scores, durable, strict=True) if d)
        dropped = sum(s < cut for s, d in zip(scores, durable, strict=True) if not d)
        value = auc(scores, durable)
        out[key] = {
            "lines": len(index),
            "auc": None if value is None else round(value, 3),
            "durable_kept": f"{kept}/{sum(durable)}",
            "passing_cut": f"{dropped}/{len(durable) - sum(durable)}",
        }
    return out


def print_report(title: str, table: dict[str, Any]) -> None:
    print(f"\n{title}\n{'':<16}{'lines':>6}{'AUC':>7}{'durable kept':>14}{'passing cut':>13}")
    for key, row in table.items():
        shown = "—" if row["auc"] is None else f"{row['auc']:.3f}"
        print(f"  {key:<14}{row['lines']:>6}{shown:>7}{row['durable_kept']:>14}{row['passing_cut']:>13}")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--fit", type=Path, action="append", default=[], help="labelled lines to fit on")
    parser.add_argument("--score", type=Path, action="append", default=[], help="labelled lines to score")
    parser.add_argument("--keep", type=float, default=0.95, help="share of durable lines a threshold keeps")
    parser.add_argument("--out", type=Path, help="with --fit: write the weights file there")
    parser.add_argument("--fitted-on", default="", help="with --out: what they were fitted on")
    args = parser.parse_args()
    embedder = load_embedder(load_settings(dict(os.environ)))
    if embedder is None:
        raise SystemExit("no embedding model is installed")
    print(f"embedder {embedder.model_id}", file=sys.stderr)
    if args.fit:
        rows = [r for path in args.fit for r in load_lines(path)]
        x = design(embedder, rows)
        y = np.array([1.0 if r["label"] == "durable" else 0.0 for r in rows])
        scored = {s: held_out(x, y, s) for s in STRENGTHS}
        strength = min(STRENGTHS, key=lambda s: -float(auc(list(scored[s]), list(y > 0)) or 0))
        p = list(scored[strength])
        cuts = {
            kind: threshold(
                [p[i] for i, r in enumerate(rows) if r["kind"] == kind],
                [r["label"] == "durable" for r in rows if r["kind"] == kind],
                args.keep,
            )
            for kind in KINDS
        }
        print(f"strength {strength}; thresholds {', '.join(f'{k} {v:.3f}' for k, v in cuts.items())}")
        print_report(f"5-fold held out on {len(rows)} lines", report(rows, p, cuts))
        w, b = logistic(x, y, strength)
        weights = DurableWeights(
            embedder=embedder.model_id,
            fitted_on=args.fitted_on or f"{len(rows)} labelled lines",
            weights=[round(float(v), 6) for v in w[: embedder.dim]],
            signal_weights=[round(float(v), 6) for v in w[embedder.dim : -1]],
            kind_weight=round(float(w[-1]), 6),
            bias=round(b, 6),
            thresholds={k: round(v, 4) for k, v in cuts.items()},
        )
        if args.out is not None:
            args.out.write_text(weights.model_dump_json(indent=1) + "\n", encoding="utf-8")
    else:
        found = Durability.for_embedder(embedder)
        if found is None:
            raise SystemExit(f"no shipped durable weights for {embedder.model_id}; give --fit")
        weights = found.weights
    classifier = Durability(embedder, weights)
    for path in args.score:
        rows = load_lines(path)
        p = [0.0] * len(rows)
        for kind in KINDS:
            index = [i for i, r in enumerate(rows) if r["kind"] == kind]
            texts = [rows[i]["text"] for i in index]
            for i, value in zip(index, classifier.probabilities(texts, kind), strict=True):
                p[i] = value
        print_report(f"{path} ({len(rows)} lines)", report(rows, p, weights.thresholds))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
