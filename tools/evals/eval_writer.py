"""Measure the writer against a real model: the judge on labelled pairs, the writer on scenarios.

Any OpenAI-compatible endpoint (a local llama.cpp server, Ollama, vLLM, a hosted API); everything
runs in this process on a fresh embedded store in a temporary directory, through the same code the
daemon runs (:mod:`mnemo.distill`), with the settings of the environment and config file
(calibration included) unless an option says otherwise.

``--pairs FILE.jsonl`` (repeatable): one labelled pair a line::

    {"id": "fit-001", "lang": "en|es|mixed", "topic": "deploys",
     "old": {"type": "decision", "what": "...", "why": "...", "how": "..."},
     "new": {"type": "decision", "what": "..."},
     "label": "same|updates|contradicts|unrelated",
     "trap": "number|version|identifier|negation|paraphrase|none"}

Each pair goes through the judge (:func:`mnemo.distill.judge.judge`: the decision model, the
calibration in force, the deterministic guard and the 0.6 rule) with the old memory as the only
current one, and the new memory's text as its source. Printed: relation accuracy (the judge's
four-way answer after calibration and guard) and action accuracy (merge for same, close for
updates or contradicts, keep both for unrelated), overall and per label, trap and language; the
confusion matrix; bad merges (a merge on a pair that is not *same*) and bad closes (a close on a
*same* or *unrelated* pair); the pairs the 0.6 rule turned into keep-both; the AUC of P(same) and
of P(updates or contradicts); the expected calibration error before and after calibration;
seconds and tokens per pair. ``--raw-out FILE`` writes each pair's relation decision as a labelled
decision for ``tools/fit/fit_calibration.py``.

``--scenarios FILE.json``: multi-session scenarios replayed into the store and distilled session by
session, then checked against what recall returns (format: docs/models.md#scenarios).

``--json`` prints one JSON object instead of the tables. ``--check`` exits 1 when a target is
missed: relation and action accuracy ≥ 0.87, no bad merge, bad closes ≤ 3 %, every scenario check.

    python -m tools.evals.eval_writer --llm-url http://127.0.0.1:8080/v1 --model qwen2.5-coder-1.5b \\
        --pairs tests/data/judge_pairs_test.jsonl --scenarios tests/data/writer_scenarios.json
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from mnemo.config import Settings, load_settings
from mnemo.distill.backends import open_model
from mnemo.distill.decide import DecisionModel
from mnemo.distill.meter import TokenMeter
from mnemo.distill.weights import calibrated_dir
from mnemo.embed import load_embedder
from mnemo.store import ClickHouseStore, open_store
from tools.evals.eval_pairs import (
    Pair,
    PairResult,
    collect_steps,
    judge_pairs,
    load_pairs,
    pair_metrics,
    print_pair_metrics,
)
from tools.evals.eval_scenarios import load_scenarios, print_scenario_results, run_scenarios

TARGETS = {"relation_accuracy": 0.87, "action_accuracy": 0.87, "bad_merges": 0, "bad_close_rate": 0.03}


@contextmanager
def fresh_store(settings_env: dict[str, str]) -> Iterator[tuple[Settings, ClickHouseStore]]:
    with tempfile.TemporaryDirectory(prefix="mnemo-eval-", dir="/tmp") as home:
        settings = load_settings({**settings_env, "MNEMO_HOME": home})
        store = open_store(settings.store)
        try:
            yield settings, store
        finally:
            store.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--llm-url",
        required=True,
        help="an OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1 (with a host backend: the "
        "base URL its CLI talks to, e.g. http://127.0.0.1:8080 for claude-code, .../v1 for codex)",
    )
    parser.add_argument("--model", required=True, help="the model name the endpoint serves")
    parser.add_argument(
        "--backend", choices=("openai", "claude-code", "codex"), default="openai", help="setting llm_backend"
    )
    parser.add_argument(
        "--host-command", default="", help="with a host backend: its CLI (setting llm_host_command)"
    )
    parser.add_argument("--pairs", type=Path, action="append", default=[], help="labelled pairs (JSON lines)")
    parser.add_argument("--scenarios", type=Path, action="append", default=[], help="scenarios (JSON)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N pairs of each file")
    parser.add_argument(
        "--embedder", default="use-multilingual-v3", help="the embedding model (setting embedder)"
    )
    parser.add_argument("--no-calibration", action="store_true", help="judge with the raw probabilities")
    parser.add_argument(
        "--raw-out", type=Path, help="write each pair's relation decision for fit_calibration.py"
    )
    parser.add_argument(
        "--collect-steps",
        type=Path,
        help="write each pair's step features for fit_calibration.py --steps, and stop",
    )
    parser.add_argument("--relation-method", choices=("auto", "one", "steps"), help="setting relation_method")
    parser.add_argument(
        "--calibrated",
        type=Path,
        metavar="HOME",
        help="judge with the weights `mnemo writer calibrate` stored under this MNEMO_HOME (its weights/)",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    args = parser.parse_args(argv)
    if not args.pairs and not args.scenarios:
        parser.error("give --pairs FILE.jsonl, --scenarios FILE.json, or both")
    try:
        pairs: list[Pair] = [p for path in args.pairs for p in load_pairs(path, args.limit)]
        scenarios = [s for path in args.scenarios for s in load_scenarios(path)]
    except ValueError as exc:
        print(f"eval_writer: {exc}", file=sys.stderr)
        return 2
    if args.backend == "openai":
        env = {"MNEMO_LLM_URL": args.llm_url, "MNEMO_LLM_MODEL": args.model}
    else:
        env = {"MNEMO_LLM_BACKEND": args.backend, "MNEMO_LLM_HOST_URL": args.llm_url}
        env |= {"MNEMO_LLM_HOST_MODEL": args.model, "MNEMO_LLM_HOST_COMMAND": args.host_command}
        env |= {"MNEMO_LLM_CALLS_PER_MINUTE": "0", "MNEMO_LLM_DAILY_CALL_CAP": "0"}
    env |= {
        "MNEMO_EMBEDDER": args.embedder,
        "MNEMO_LLM_TIMEOUT_S": "600",
        "MNEMO_LLM_DAILY_TOKEN_CAP": "0",
    }
    if args.no_calibration:
        env["MNEMO_CALIBRATION"] = "{}"
    if args.relation_method:
        env["MNEMO_RELATION_METHOD"] = args.relation_method
    out: dict[str, Any] = {"model": args.model, "backend": args.backend}
    failed: list[str] = []
    started = time.perf_counter()
    with fresh_store(env) as (settings, store):
        if args.calibrated is not None:
            target = calibrated_dir(settings)
            assert target is not None
            shutil.copytree(args.calibrated / target.name, target)
        out["calibration"] = describe_calibration(settings)
        meter = TokenMeter(store, 0)
        llm = open_model(settings, meter)
        try:
            embedder = load_embedder(settings)
            if pairs and args.collect_steps is not None:
                collect_steps(pairs, DecisionModel(llm, settings), embedder, args.collect_steps)
                return 0
            if pairs:
                decisions = DecisionModel(llm, settings)
                method = "steps" if decisions.steps is not None else "one"
                out["relation_method"] = method if decisions.gives_logprobs else "at_once"
                results: list[PairResult] = judge_pairs(
                    pairs, decisions, meter, embedder, progress=not args.json
                )
                metrics = pair_metrics(results)
                out.update(metrics)
                out["pairs"] = [r.as_json() for r in results]
                if args.raw_out is not None:
                    write_raw(args.raw_out, results)
                if not args.json:
                    print_pair_metrics(metrics)
                failed += missed_targets(metrics)
            if scenarios:
                checks = run_scenarios(
                    scenarios, settings, store, llm, meter, embedder, verbose=not args.json
                )
                out["scenarios"] = checks
                if not args.json:
                    print_scenario_results(checks)
                failed += [f"scenario {c['scenario']}: {c['label']}" for c in checks["checks"] if not c["ok"]]
        finally:
            llm.close()
    out["seconds"] = round(time.perf_counter() - started, 1)
    out["missed"] = failed
    if args.json:
        print(json.dumps(out, ensure_ascii=False))
    else:
        print(
            f"\n{len(failed)} target(s) missed in {out['seconds']:.0f} s"
            + "".join(f"\n  - {f}" for f in failed)
        )
    return 1 if args.check and failed else 0


def describe_calibration(settings: Settings) -> str:
    if not settings.calibration:
        return "none"
    return ", ".join(f"{q} (T {c.temperature:.2f})" for q, c in sorted(settings.calibration.items()))


def missed_targets(metrics: dict[str, Any]) -> list[str]:
    missed = []
    for key in ("relation_accuracy", "action_accuracy"):
        if metrics[key] < TARGETS[key]:
            missed.append(f"{key} {metrics[key]:.3f} < {TARGETS[key]}")
    if metrics["bad_merges"] > TARGETS["bad_merges"]:
        missed.append(f"bad_merges {metrics['bad_merges']} > 0")
    if metrics["bad_close_rate"] > TARGETS["bad_close_rate"]:
        missed.append(f"bad closes {metrics['bad_close_rate']:.1%} > {TARGETS['bad_close_rate']:.0%}")
    return missed


def write_raw(path: Path, results: Sequence[PairResult]) -> None:
    with path.open("w", encoding="utf-8") as out:
        for r in results:
            if r.raw:
                out.write(
                    json.dumps({"question": "relation", "label": r.label, "raw": r.raw, "id": r.id}) + "\n"
                )


if __name__ == "__main__":
    sys.exit(main())
