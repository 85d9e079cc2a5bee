"""The usage signal without a model (mnemo.usage.signal) against labels: AUC, per host and language.

Two kinds of labelled set, in tests/data/usage/:

- real sessions (``real_*.jsonl``): a (memory, turn) pair per line — the session's id in
  tests/data/real_sessions/manifest.jsonl, the turn's number as mnemo reads it, a memory written by
  the sessions' labellers, and whether the turn used it. The turn's prompt, answer and tool calls
  are read from the restored transcript (``python -m tools.evals.real_sessions restore``);
- written turns (``written_*.jsonl``): the prompt, tool calls and answer on the line itself, in
  the hosts' own tool shapes.

A label is *used*, *unused* or *against* (the turn did what the memory warns against); the AUC
takes *used* as the positive class and the other two as negatives. It is the chance that a used
pair scores above an unused one (ties count half).

    python -m tools.evals.eval_usage tests/data/usage/real_fit.jsonl
    python -m tools.evals.eval_usage tests/data/usage/written_blind.jsonl --thresholds
    python -m tools.evals.eval_usage FILE --sample 80 \
        --llm-url http://127.0.0.1:8080/v1 --model qwen2.5-coder-1.5b

With ``--llm-url``, the decision model's probability of "used" (``usage_audit = "model"``, the
question mnemo.usage.audit asks) is scored beside the signal on the same pairs: every
``len/sample``-th pair, so the sample keeps the file's order.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mnemo import transcripts
from mnemo.config import load_settings
from mnemo.distill.backends import open_model
from mnemo.distill.decide import USED, DecisionModel
from mnemo.distill.meter import TokenMeter
from mnemo.store import open_store
from mnemo.usage.audit import question
from mnemo.usage.signal import UNUSED_BELOW, USED_AT, TurnActs, act_of, score, turn_of
from tools.evals import real_sessions

Case = tuple[dict[str, Any], TurnActs, str]  # the line, the turn's acts, its memory's text


def turn_acts(prompt: str, answer: str, calls: Sequence[tuple[str, object]]) -> TurnActs:
    return turn_of(prompt, answer, (act_of(name, tool_input) for name, tool_input in calls))


def written_cases(lines: list[dict[str, Any]]) -> list[Case]:
    cases = []
    for line in lines:
        calls = [(c.get("name", "tool"), c.get("input")) for c in line.get("tool_calls") or []]
        acts = turn_acts(line.get("prompt", ""), line.get("answer", ""), calls)
        cases.append((line, acts, _memory_text(line["memory"])))
    return cases


def real_cases(lines: list[dict[str, Any]], root: Path) -> list[Case]:
    rows = {row["id"]: row for row in real_sessions.manifest()}
    read: dict[str, dict[int, transcripts.Turn]] = {}
    cases = []
    for line in lines:
        row = rows.get(line["session"])
        if row is None:
            raise SystemExit(f"{line['session']}: not in the manifest")
        if row["id"] not in read:
            path = real_sessions.raw_path(root, row)
            if not path.exists():
                raise SystemExit(f"{path}: missing; run python -m tools.evals.real_sessions restore first")
            read[row["id"]] = {t.number: t for t in transcripts.read(row["host"], path).turns}
        turn = read[row["id"]].get(int(line["turn"]))
        if turn is None:
            raise SystemExit(f"{line['session']}: no turn {line['turn']}")
        calls = [(t.name, t.input) for t in turn.tools]
        known = {**line, "host": row["host"], "language": _language(row["language"])}
        cases.append((known, turn_acts(turn.prompt, turn.answer, calls), _memory_text(line["memory"])))
    return cases


def model_scores(cases: list[Case], url: str, model: str) -> list[float]:
    """The decision model's probability that each turn used its memory."""
    with tempfile.TemporaryDirectory() as home:
        env = {"MNEMO_HOME": home, "MNEMO_LLM_URL": url, "MNEMO_LLM_MODEL": model}
        settings = load_settings(env | {"MNEMO_LLM_TIMEOUT_S": "600", "MNEMO_LLM_DAILY_TOKEN_CAP": "0"})
        store = open_store(settings.store)
        try:
            decisions = DecisionModel(open_model(settings, TokenMeter(store, 0)), settings)
            found = []
            for n, (line, acts, text) in enumerate(cases, 1):
                why = line["memory"].get("why", "") if isinstance(line["memory"], dict) else ""
                found.append(decisions.ask(USED, question(text, why, acts)).probabilities["yes"])
                print(f"  model: {n}/{len(cases)}", file=sys.stderr, end="\r")
            return found
        finally:
            store.close()


def auc(positives: Sequence[float], negatives: Sequence[float]) -> float | None:
    if not positives or not negatives:
        return None
    wins = sum(1.0 if p > n else 0.5 if p == n else 0.0 for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives))


def report(cases: list[Case], thresholds: bool, values: list[float] | None = None) -> dict[str, Any]:
    groups: dict[str, list[tuple[float, bool]]] = defaultdict(list)
    for n, (line, acts, text) in enumerate(cases):
        value = score(text, acts) if values is None else values[n]
        used = line["label"] == "used"
        for key in ("all", f"host {line.get('host', '?')}", f"language {line.get('language', '?')}"):
            groups[key].append((value, used))
    table = {}
    for key, pairs in sorted(groups.items()):
        positives = [v for v, u in pairs if u]
        negatives = [v for v, u in pairs if not u]
        row: dict[str, Any] = {"pairs": len(pairs), "used": len(positives), "auc": auc(positives, negatives)}
        if thresholds:
            row["used_at_or_above"] = _share(positives, negatives, lambda v: v >= USED_AT)
            row["clearly_unused"] = _share(positives, negatives, lambda v: v < UNUSED_BELOW)
        table[key] = row
    return table


def _share(positives: list[float], negatives: list[float], test: Any) -> str:
    used, unused = sum(map(test, positives)), sum(map(test, negatives))
    return f"{used}/{len(positives)} used, {unused}/{len(negatives)} not"


def _memory_text(memory: dict[str, Any] | str) -> str:
    return memory if isinstance(memory, str) else str(memory.get("what") or memory.get("content") or "")


def _language(name: str) -> str:
    return {"English": "en", "Spanish": "es"}.get(name, "other")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--dir", type=Path, default=real_sessions.DEFAULT_DIR, help="restored transcripts")
    parser.add_argument("--thresholds", action="store_true", help="also how USED_AT and UNUSED_BELOW split")
    parser.add_argument("--dump", type=Path, help="write each pair's score and label here (JSONL)")
    parser.add_argument("--llm-url", help="also score the decision model (an OpenAI-compatible endpoint)")
    parser.add_argument("--model", default="", help="the model name the endpoint serves")
    parser.add_argument("--sample", type=int, default=0, help="with --llm-url: only about N pairs")
    args = parser.parse_args()
    cases: list[Case] = []
    for path in args.files:
        lines = [json.loads(text) for text in path.read_text().splitlines() if text.strip()]
        cases += written_cases(lines) if "prompt" in lines[0] else real_cases(lines, args.dir)
    scores = [score(text, acts) for _, acts, text in cases]
    if args.dump:
        with args.dump.open("w") as out:
            for (line, _, _), value in zip(cases, scores, strict=True):
                out.write(json.dumps({**line, "score": value}, ensure_ascii=False) + "\n")
    tables = {"signal": report(cases, args.thresholds, scores)}
    if args.llm_url:
        if args.sample:
            cases = cases[:: max(1, len(cases) // args.sample)]
        tables = {"signal, sampled": report(cases, False)}
        tables["model, sampled"] = report(cases, False, model_scores(cases, args.llm_url, args.model))
    for name, table in tables.items():
        print(name)
        for key, row in table.items():
            figure = "—" if row["auc"] is None else f"{row['auc']:.3f}"
            extra = "".join(f"; {k}: {v}" for k, v in row.items() if k not in ("pairs", "used", "auc"))
            print(f"  {key:<22} pairs {row['pairs']:>4}  used {row['used']:>4}  AUC {figure}{extra}")


if __name__ == "__main__":
    main()
