"""The newest word on labelled cases: changes, corrections, renames and reverts, which must close
what they replace, and siblings, paraphrases and unrelated facts, which must not.

A case (JSON lines, the format of ``tests/data/changes_blind.jsonl``) is two or three memories in
time order (``steps``: type, what, and the person's line that led to it), a label (change,
correction, rename, revert: the last step replaces the one before; sibling, same, unrelated: both
stay), a question and what the current answer contains. Two measures:

- ``--remember`` (no model): every case in a namespace of its own, its steps remembered in order
  through a real daemon (``mnemo remember``), then its question recalled: whether each replaced
  step was closed, whether the memory recall puts first holds the current value, and whether
  anything else was closed;
- ``--rules``: the rules alone on each step and the one before it (the person's line read), no
  model and no store;
- ``--llm-url URL --model NAME``: the writer's decision on each step against the one before it —
  the model's judge (as ``tools/evals/eval_pairs.py`` asks it) and the rules of
  :mod:`mnemo.distill.frames`, combined as the writer combines them (what the rules say is
  replaced is closed and never merged into) — beside the judge's decision alone.

    uv run --frozen python -m tools.evals.eval_changes --remember tests/data/changes_blind.jsonl
    uv run --frozen python -m tools.evals.eval_changes --llm-url http://127.0.0.1:8080/v1 \\
        --model qwen2.5-coder-1.5b tests/data/changes_blind.jsonl
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio

from mnemo.api.recall import RecallRequest
from mnemo.client.launcher import stop_daemon
from mnemo.client.typed import DaemonClient
from mnemo.config import load_settings
from mnemo.distill.backends import open_model
from mnemo.distill.decide import DecisionModel
from mnemo.distill.extract import ExtractedMemory
from mnemo.distill.frames import replaces
from mnemo.distill.judge import Action, judge, statement
from mnemo.distill.meter import TokenMeter
from mnemo.embed import load_embedder
from mnemo.errors import MnemoError
from mnemo.memories import Memory, Origin, RememberRequest
from mnemo.store import open_store
from mnemo.vocabulary import MemoryStatus, MemoryType

WHEN = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
REPLACING = ("change", "correction", "rename", "revert")
KEEPING = ("sibling", "same", "unrelated")


def load_cases(path: Path) -> list[dict[str, Any]]:
    """The cases of a JSON-lines file; ValueError naming the line and what is wrong."""
    cases = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            case = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where}: not JSON ({exc.msg})") from None
        if case.get("label") not in REPLACING + KEEPING:
            raise ValueError(f"{where}: label {case.get('label')!r} is not one of {REPLACING + KEEPING}")
        steps = case.get("steps")
        if not isinstance(steps, list) or not 2 <= len(steps) <= 3:
            raise ValueError(f"{where}: steps must be a list of 2 or 3 memories")
        for step in steps:
            if not isinstance(step, dict) or not str(step.get("what", "")).strip():
                raise ValueError(f"{where}: each step needs a non-empty 'what'")
            if step.get("type") not in {t.value for t in MemoryType}:
                raise ValueError(f"{where}: step type {step.get('type')!r} is not a memory type")
        if not str(case.get("question", "")).strip() or not case.get("current"):
            raise ValueError(f"{where}: a case needs a question and what its current answer contains")
        cases.append(case)
    return cases


def replaced_pairs(case: dict[str, Any]) -> list[tuple[int, int, bool]]:
    """(older step, newer step, whether the newer replaces it) for each step and the one before."""
    replacing = case["label"] in REPLACING
    return [(i - 1, i, replacing) for i in range(1, len(case["steps"]))]


# -- with no model: remember through the daemon -------------------------------------------------


async def remember_cases(cases: Sequence[dict[str, Any]], home: str) -> list[dict[str, Any]]:
    settings = load_settings({"MNEMO_HOME": home, "MNEMO_LLM_URL": ""})
    asked: list[tuple[list[str], str]] = []  # each case's memory ids, and what recall put first
    try:
        async with DaemonClient(settings) as client:
            for case in cases:
                asked.append(await _remember_one(client, case))
    finally:
        stop_daemon(settings)
    store = open_store(settings.store)  # the daemon is gone: read each memory's status as stored
    try:
        out = []
        for case, (ids, top) in zip(cases, asked, strict=True):
            if not ids:
                out.append({"id": case["id"], "label": case["label"], "refused": top})
                continue
            stored = [store.get_memory(memory_id) for memory_id in ids]
            closed = {i for i, m in enumerate(stored) if m is not None and m.status is MemoryStatus.CLOSED}
            out.append(_scored(case, closed, top))
        return out
    finally:
        store.close()


async def _remember_one(client: DaemonClient, case: dict[str, Any]) -> tuple[list[str], str]:
    """The case's memory ids and what recall put first; no ids and why, when remember refused a
    step (what looks like a credential is never stored): the case is left out of the figures."""
    namespace = f"workspace:case-{case['id']}"
    ids = []
    for step in case["steps"]:
        request = RememberRequest(content=step["what"], type=MemoryType(step["type"]), namespace=namespace)
        try:
            ids.append((await client.remember(request)).id)
        except MnemoError as exc:
            return [], str(exc)
    found = await client.recall(RecallRequest(query=case["question"], namespace=namespace))
    return ids, found.memories[0].memory.content.lower() if found.memories else ""


def _scored(case: dict[str, Any], closed: set[int], top: str) -> dict[str, Any]:
    pairs = replaced_pairs(case)
    due = [older for older, _, replacing in pairs if replacing]
    wrong = sorted(closed - set(due))
    return {
        "id": case["id"],
        "label": case["label"],
        "lang": case.get("lang", ""),
        "due": len(due),
        "closed_due": sum(older in closed for older in due),
        "closed_wrongly": wrong,
        "current_first": any(c.lower() in top for c in case["current"]),
        "top": top,
    }


def remember_metrics(scored: Sequence[dict[str, Any]]) -> dict[str, Any]:
    results = [r for r in scored if "refused" not in r]
    due = sum(r["due"] for r in results)
    keeping = [r for r in results if r["label"] in KEEPING]
    return {
        "cases": len(results),
        "refused": [r["id"] for r in scored if "refused" in r],
        "closes_due": due,
        "closed": round(sum(r["closed_due"] for r in results) / max(1, due), 4),
        "current_first": round(sum(r["current_first"] for r in results) / max(1, len(results)), 4),
        "current_first_replacing": _share([r["current_first"] for r in results if r["label"] in REPLACING]),
        "siblings_closed": sum(bool(r["closed_wrongly"]) for r in results if r["label"] == "sibling"),
        "bad_closes": sum(bool(r["closed_wrongly"]) for r in keeping),
        "bad_close_rate": round(sum(bool(r["closed_wrongly"]) for r in keeping) / max(1, len(results)), 4),
        "by_label": {
            label: {
                "cases": len(of),
                "closed": _share([r["closed_due"] == r["due"] for r in of]) if label in REPLACING else None,
                "closed_wrongly": sum(bool(r["closed_wrongly"]) for r in of),
                "current_first": _share([r["current_first"] for r in of]),
            }
            for label in REPLACING + KEEPING
            if (of := [r for r in results if r["label"] == label])
        },
    }


def _share(flags: Sequence[bool]) -> float | None:
    return round(sum(flags) / len(flags), 4) if flags else None


# -- with a model: the writer's decision on each pair -------------------------------------------


def judge_cases(cases: Sequence[dict[str, Any]], url: str, model: str, home: str) -> list[dict[str, Any]]:
    env = {"MNEMO_HOME": home, "MNEMO_LLM_URL": url, "MNEMO_LLM_MODEL": model}
    settings = load_settings(env | {"MNEMO_LLM_TIMEOUT_S": "600", "MNEMO_LLM_DAILY_TOKEN_CAP": "0"})
    store = open_store(settings.store)
    meter = TokenMeter(store, 0)
    llm = open_model(settings, meter)
    out = []
    try:
        decisions, embedder = DecisionModel(llm, settings), load_embedder(settings)
        started = time.perf_counter()
        for n, case in enumerate(cases, 1):
            for older, newer, replacing in replaced_pairs(case):
                old, new = case["steps"][older], case["steps"][newer]
                said = [new["person"]] if new.get("person") else []
                draft = ExtractedMemory(type=MemoryType(new["type"]), what=new["what"], sources=["ep_new"])
                source = "\n".join([*said, statement(new["what"])])
                verdict = judge(draft, [_memory(old)], source, decisions, embedder)
                ruled = bool(replaces(new["what"], old["what"], said))
                alone = verdict.action.value
                combined = alone
                if verdict.action is not Action.EPISODES_ONLY and ruled:
                    combined = "close"
                out.append({"id": case["id"], "label": case["label"], "replacing": replacing,
                            "judge": alone, "writer": combined, "rule": ruled})  # fmt: skip
            rate = (time.perf_counter() - started) / n
            print(f"\r  cases {n}/{len(cases)}  {rate:.1f} s/case ", end="", file=sys.stderr, flush=True)
        print(file=sys.stderr)
    finally:
        llm.close()
        store.close()
    return out


def _memory(step: dict[str, Any]) -> Memory:
    """An earlier step as the judge's current memory."""
    text, kind = step["what"], MemoryType(step["type"])
    return Memory(
        id="mem_" + "0" * 24, version=1, type=kind, status=MemoryStatus.ACTIVE, namespace="workspace:eval",
        content=text, what=text, who="", when="", where="", why="", how="", entities=[], sources=["ep_old"],
        origin=Origin.DISTILLED, created_at=WHEN, updated_at=WHEN, valid_from=WHEN,
    )  # fmt: skip


def judge_metrics(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    def of(key: str) -> dict[str, Any]:
        due = [r for r in results if r["replacing"]]
        keep = [r for r in results if not r["replacing"]]
        return {
            "closed": _share([r[key] == "close" for r in due]),
            "bad_merges": sum(r[key] == "merge" and r["label"] != "same" for r in results),
            "siblings_closed": sum(r[key] == "close" for r in keep if r["label"] == "sibling"),
            "bad_closes": sum(r[key] == "close" for r in keep),
            "bad_close_rate": round(sum(r[key] == "close" for r in keep) / max(1, len(results)), 4),
            "actions": dict(Counter(f"{r['label']}:{r[key]}" for r in results)),
        }

    return {"pairs": len(results), "writer": of("writer"), "judge_alone": of("judge"),
            "rule_only": of_rule(results)}  # fmt: skip


def rule_cases(cases: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rules alone on each step and the one before it, the person's line read: no model, no
    store."""
    out = []
    for case in cases:
        for older, newer, replacing in replaced_pairs(case):
            old, new = case["steps"][older], case["steps"][newer]
            said = [new["person"]] if new.get("person") else []
            ruled = bool(replaces(new["what"], old["what"], said))
            out.append({"id": case["id"], "label": case["label"], "replacing": replacing, "rule": ruled})
    return out


def of_rule(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    due = [r for r in results if r["replacing"]]
    keep = [r for r in results if not r["replacing"]]
    return {
        "closed": _share([r["rule"] for r in due]),
        "siblings_closed": sum(r["rule"] for r in keep if r["label"] == "sibling"),
        "bad_closes": sum(r["rule"] for r in keep),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("cases", type=Path, nargs="+", help="labelled cases (JSON lines)")
    parser.add_argument("--remember", action="store_true", help="with no model, through a real daemon")
    parser.add_argument(
        "--rules", action="store_true", help="the rules alone on each pair: no model, no store"
    )
    parser.add_argument("--llm-url", help="an OpenAI-compatible endpoint: the writer's decision on each pair")
    parser.add_argument("--model", default="", help="the model name the endpoint serves")
    parser.add_argument("--json", action="store_true", help="print one JSON object, each case's result too")
    args = parser.parse_args(argv)
    if sum((args.remember, args.rules, bool(args.llm_url))) != 1:
        parser.error("give one of --remember, --rules, --llm-url")
    try:
        cases = [c for path in args.cases for c in load_cases(path)]
    except (OSError, ValueError) as exc:
        print(f"eval_changes: {exc}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mnemo-changes-", dir="/tmp") as home:
        if args.remember:
            results = anyio.run(remember_cases, cases, home)
            metrics = remember_metrics(results)
        elif args.rules:
            results = rule_cases(cases)
            metrics = {"pairs": len(results), "rule_only": of_rule(results)}
        else:
            results = judge_cases(cases, args.llm_url, args.model, home)
            metrics = judge_metrics(results)
    metrics["seconds"] = round(time.perf_counter() - started, 1)
    if args.json:
        print(json.dumps(metrics | {"results": results}, ensure_ascii=False))
    else:
        print(json.dumps(metrics, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
