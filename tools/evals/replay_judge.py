"""The judge replayed from the model's collected answers: levers weighed with no model call.

``tools/evals/eval_writer.py --collect-steps`` writes, per labelled pair, what the model answered to
the relation's steps (and the texts' cosine). Everything else the judge acts on is computed here
by the code as it is now: the text features (the guard's findings, the cues, the shared words),
what bars *same* (:func:`mnemo.distill.judge.bars_same`), what is too far apart to close
(:func:`mnemo.distill.judge.far_apart`, with the fallback embedder; ``--no-embedder`` leaves it
out), the 0.6 rule (:func:`mnemo.distill.judge.act`). So a change to the rules, the features or
the weights is scored on thousands of pairs in seconds, on the same model answers.

    python -m tools.evals.replay_judge --steps steps.jsonl --pairs fit.jsonl --pairs test.jsonl \\
        --fit fit.jsonl --score test.jsonl [--weights-out w.json --family REGEX --fitted-on TEXT]

``--fit FILE`` (repeatable): refit the combination's weights on those pairs (and its temperature
on their 5-fold held-out predictions, as ``fit_calibration.py --steps`` does); without it the
shipped weights of ``--model``'s family. ``--score FILE`` (repeatable): print the judge's metrics
on those pairs (as ``eval_writer.py --pairs`` does; a pair also fitted on is scored from the
folds that did not see it). The questions about the new memory alone (useful, durable) are not
replayed: no pair is episodes-only here.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from mnemo.config import Settings
from mnemo.distill.decide import Decision
from mnemo.distill.fitting import fit_steps_held_out, softmax
from mnemo.distill.judge import (
    THRESHOLD,
    Action,
    Comparison,
    act,
    bars_same,
    far_apart,
    guard_between,
    statement,
)
from mnemo.distill.relation import FEATURES, text_features
from mnemo.distill.weights import StepWeights, weights_for
from mnemo.embed import Embedder, load_embedder
from tools.evals.eval_pairs import (
    LABELS,
    Pair,
    PairResult,
    _new_memory,
    _old_memory,
    load_pairs,
    pair_metrics,
    print_pair_metrics,
)

ASKED = ("about", "same", "changed", "wrong", "word_same", "word_updates", "word_contradicts",
         "word_unrelated", "cosine")  # fmt: skip


def features_now(pair: Pair, asked: dict[str, float]) -> dict[str, float]:
    """A pair's features: the model's collected answers, the rest computed by today's code."""
    old, new = _old_memory(pair), _new_memory(pair)
    existing = statement(old.what, old.why, old.how)
    said = statement(new.what, new.why, new.how)
    return {k: asked[k] for k in ASKED} | text_features(existing, said, guard_between(old, new))


def result(pair: Pair, probabilities: dict[str, float], embedder: Embedder | None) -> PairResult:
    """The judge's verdict on one pair from the combination's probabilities."""
    old, new = _old_memory(pair), _new_memory(pair)
    guard = guard_between(old, new)
    answered = max(probabilities, key=lambda o: probabilities[o])
    decision = Decision("relation", probabilities, probabilities, answered, "steps", True)
    barred = bars_same(old, new, guard)
    apart = far_apart(old.what, new.what, embedder)
    comparison = Comparison(old.id, old.what, decision, guard, None, barred, apart)
    action, *_ = act([comparison])
    relation, p = comparison.verdict
    held = action is Action.ADD and relation != "unrelated" and p < THRESHOLD
    return PairResult(
        pair.id, pair.lang, pair.topic, pair.label, pair.trap, relation, probabilities,
        probabilities, list(comparison.barred), action.value, held, 0.0, 0,
    )  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--steps", type=Path, action="append", required=True, help="collected step answers")
    parser.add_argument("--pairs", type=Path, action="append", default=[], help="labelled pairs (JSON lines)")
    parser.add_argument("--fit", type=Path, action="append", default=[], help="refit the weights on these")
    parser.add_argument("--score", type=Path, action="append", default=[], help="score the judge on these")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b", help="whose shipped weights, without --fit")
    parser.add_argument("--weights-out", type=Path, help="with --fit: write the weights file there")
    parser.add_argument("--family", default="", help="with --weights-out: the model names (a regex)")
    parser.add_argument("--fitted-on", default="", help="with --weights-out: what they were fitted on")
    parser.add_argument("--json", action="store_true", help="print one JSON object per scored file")
    parser.add_argument(
        "--no-embedder", action="store_true", help="judge without the fallback embedder (no far-apart rule)"
    )
    args = parser.parse_args()
    asked: dict[str, dict[str, float]] = {}
    for path in args.steps:
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                asked[row["id"]] = row["features"]
    files = {path: load_pairs(path) for path in dict.fromkeys([*args.pairs, *args.fit, *args.score])}
    missing = [p.id for pairs in files.values() for p in pairs if p.id not in asked]
    if missing:
        raise SystemExit(f"no collected answers for {len(missing)} pairs ({', '.join(missing[:5])} …)")
    fitted = [p for path in args.fit for p in files[path]]
    held: dict[str, dict[str, float]] = {}
    if fitted:
        x = np.array([[features_now(p, asked[p.id])[f] for f in FEATURES] for p in fitted])
        labels = np.array([LABELS.index(p.label) for p in fitted])
        w, b, held_out, _ = fit_steps_held_out(x, labels, len(LABELS))
        probabilities = softmax(held_out)
        held = {
            p.id: dict(zip(LABELS, map(float, row), strict=True))
            for p, row in zip(fitted, probabilities, strict=True)
        }
        weights = StepWeights(
            family=args.family or ".",
            fitted_on=args.fitted_on or f"{len(fitted)} pairs",
            features=list(FEATURES),
            weights={o: [round(float(v), 4) for v in w[:, i]] for i, o in enumerate(LABELS)},
            bias={o: round(float(b[i]), 4) for i, o in enumerate(LABELS)},
        )
        if args.weights_out is not None:
            args.weights_out.write_text(weights.model_dump_json(indent=1) + "\n", encoding="utf-8")
    else:
        shipped = weights_for(args.model)
        if shipped is None:
            raise SystemExit(f"no shipped weights for {args.model!r}; give --fit")
        weights = shipped
    embedder = None if args.no_embedder else load_embedder(Settings())
    for path in args.score:
        results = []
        for pair in files[path]:
            found = held.get(pair.id)
            if found is None:
                values = features_now(pair, asked[pair.id])
                x1 = np.array([values[f] for f in weights.features])
                logits = np.array([np.dot(weights.weights[o], x1) + weights.bias[o] for o in LABELS])
                found = dict(zip(LABELS, map(float, softmax(logits[None, :])[0]), strict=True))
            results.append(result(pair, found, embedder))
        metrics = pair_metrics(results)
        if args.json:
            print(json.dumps({"file": str(path), **metrics}))
        else:
            print(f"\n### {path}{' (5-fold held out)' if path in args.fit else ''}", file=sys.stdout)
            print_pair_metrics(metrics)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
