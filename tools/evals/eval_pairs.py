"""The judge on labelled pairs, for tools/evals/eval_writer.py: load, judge, score, print."""

from __future__ import annotations

import json
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from mnemo.distill.at_once import JudgementError
from mnemo.distill.decide import RELATION, DecisionModel
from mnemo.distill.extract import ExtractedMemory
from mnemo.distill.judge import THRESHOLD, Action, guard_between, judge, relate, statement
from mnemo.distill.meter import TokenMeter
from mnemo.distill.relation import features
from mnemo.embed import Embedder
from mnemo.memories import Memory, Origin
from mnemo.vocabulary import MemoryStatus, MemoryType
from tools.fit.fit_calibration import scores

LABELS = RELATION.options  # same, updates, contradicts, unrelated
TRAPS = ("number", "version", "identifier", "negation", "paraphrase", "none")
LANGS = ("en", "es", "mixed")  # mixed: a text that switches between the two
EXPECTED_ACTION = {"same": "merge", "updates": "close", "contradicts": "close", "unrelated": "add"}
WHEN = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@dataclass(frozen=True)
class Pair:
    id: str
    lang: str
    topic: str
    old: dict[str, str]
    new: dict[str, str]
    label: str
    trap: str


@dataclass
class PairResult:
    id: str
    lang: str
    topic: str
    label: str
    trap: str
    relation: str  # the judge's answer after calibration and guard
    probabilities: dict[str, float]  # calibrated
    raw: dict[str, float]  # before calibration
    guard: list[str]
    action: str  # merge, close, add, episodes_only
    held_by_threshold: bool  # the best relation was not unrelated, but below 0.6
    seconds: float
    tokens: int
    features: dict[str, float] | None = None  # a relation asked in steps

    def as_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["probabilities"] = {k: round(v, 4) for k, v in self.probabilities.items()}
        out["raw"] = {k: round(v, 4) for k, v in self.raw.items()}
        out["seconds"] = round(self.seconds, 2)
        return out


def load_pairs(path: Path, limit: int = 0) -> list[Pair]:
    """The pairs of a JSON-lines file; ValueError naming the line and the problem."""
    pairs: list[Pair] = []
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ValueError(f"{path}: {exc.strerror}") from None
    seen: set[str] = set()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            item = json.loads(line)
        except ValueError as exc:
            raise ValueError(f"{where}: not JSON ({exc})") from None
        pairs.append(_pair(item, where))
        if pairs[-1].id in seen:
            raise ValueError(f"{where}: id {pairs[-1].id!r} appears twice")
        seen.add(pairs[-1].id)
        if limit and len(pairs) >= limit:
            break
    if not pairs:
        raise ValueError(f"{path}: no pairs")
    return pairs


def _pair(item: Any, where: str) -> Pair:
    if not isinstance(item, dict):
        raise ValueError(f"{where}: a pair is a JSON object")
    for key, allowed in (("label", LABELS), ("trap", TRAPS), ("lang", LANGS)):
        if item.get(key) not in allowed:
            raise ValueError(f"{where}: {key} is {item.get(key)!r}, not one of {', '.join(allowed)}")
    for side in ("old", "new"):
        memory = item.get(side)
        if (
            not isinstance(memory, dict)
            or not isinstance(memory.get("what"), str)
            or not memory["what"].strip()
        ):
            raise ValueError(f"{where}: {side} needs a non-empty 'what'")
        if memory.get("type") not in {t.value for t in MemoryType}:
            raise ValueError(f"{where}: {side}.type is {memory.get('type')!r}, not a memory type")
        for key in ("why", "how"):
            if not isinstance(memory.get(key, ""), str):
                raise ValueError(f"{where}: {side}.{key} must be a string")
    if not isinstance(item.get("id"), str) or not item["id"]:
        raise ValueError(f"{where}: id must be a non-empty string")
    return Pair(
        item["id"],
        item["lang"],
        str(item.get("topic", "")),
        item["old"],
        item["new"],
        item["label"],
        item["trap"],
    )


def _old_memory(pair: Pair) -> Memory:
    old = pair.old
    return Memory(
        id="mem_" + "0" * 24,
        version=1,
        type=MemoryType(old["type"]),
        status=MemoryStatus.ACTIVE,
        namespace="workspace:eval",
        content=old["what"],
        what=old["what"],
        who="",
        when="",
        where="",
        why=old.get("why", ""),
        how=old.get("how", ""),
        entities=[],
        sources=["ep_old"],
        origin=Origin.DISTILLED,
        created_at=WHEN,
        updated_at=WHEN,
        valid_from=WHEN,
    )


def _new_memory(pair: Pair) -> ExtractedMemory:
    new = pair.new
    return ExtractedMemory(
        type=MemoryType(new["type"]),
        what=new["what"],
        why=new.get("why", ""),
        how=new.get("how", ""),
        sources=["ep_new"],
    )


def collect_steps(
    pairs: Sequence[Pair], decisions: DecisionModel, embedder: Embedder | None, path: Path
) -> None:
    """Write each pair's step features and label, for ``tools/fit/fit_calibration.py --steps``."""
    with path.open("w", encoding="utf-8") as out:
        for i, pair in enumerate(pairs, 1):
            new, old = _new_memory(pair), _old_memory(pair)
            values, _ = features(
                decisions,
                statement(old.what, old.why, old.how),
                statement(new.what, new.why, new.how),
                embedder,
                guard_between(old, new),
            )
            out.write(json.dumps({"id": pair.id, "label": pair.label, "features": values}) + "\n")
            print(f"\r  step features {i}/{len(pairs)} ", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)


def judge_pair(
    pair: Pair, decisions: DecisionModel, meter: TokenMeter, embedder: Embedder | None
) -> PairResult:
    new, old = _new_memory(pair), _old_memory(pair)
    before = meter.today().tokens
    started = time.perf_counter()
    try:
        verdict = judge(new, [old], statement(new.what, new.why, new.how), decisions, embedder)
    except JudgementError:  # a model without log-probabilities that kept answering unusably
        even = dict.fromkeys(LABELS, 1 / len(LABELS))
        seconds, tokens = time.perf_counter() - started, meter.today().tokens - before
        return PairResult(pair.id, pair.lang, pair.topic, pair.label, pair.trap, "unusable", even, even, [],
                          "failed", False, seconds, tokens)  # fmt: skip
    comparison = (
        verdict.comparisons[0] if verdict.comparisons else relate(verdict.memory, old, decisions, embedder)
    )
    seconds = time.perf_counter() - started
    relation, p = comparison.verdict
    # Judged related, but not surely enough for the 0.6 rule: both kept.
    held = verdict.action is Action.ADD and relation != "unrelated" and p < THRESHOLD
    return PairResult(
        pair.id,
        pair.lang,
        pair.topic,
        pair.label,
        pair.trap,
        relation,
        dict(comparison.relation.probabilities),
        dict(comparison.relation.raw),
        list(comparison.guard.reasons),
        verdict.action.value,
        held,
        seconds,
        meter.today().tokens - before,
        comparison.features,
    )


def judge_pairs(
    pairs: Sequence[Pair],
    decisions: DecisionModel,
    meter: TokenMeter,
    embedder: Embedder | None,
    *,
    progress: bool,
) -> list[PairResult]:
    results = []
    started = time.perf_counter()
    for i, pair in enumerate(pairs, 1):
        results.append(judge_pair(pair, decisions, meter, embedder))
        if progress:
            right = sum(r.relation == r.label for r in results)
            rate = (time.perf_counter() - started) / i
            print(
                f"\r  pairs {i}/{len(pairs)}  relation right {right}/{i}  {rate:.1f} s/pair  "
                f"~{rate * (len(pairs) - i) / 60:.0f} min left ",
                end="",
                file=sys.stderr,
                flush=True,
            )
    if progress:
        print(file=sys.stderr)
    return results


def auc(scores_: Sequence[float], positive: Sequence[bool]) -> float | None:
    """The probability that a positive scores above a negative (ties count half)."""
    pos = [s for s, y in zip(scores_, positive, strict=True) if y]
    neg = [s for s, y in zip(scores_, positive, strict=True) if not y]
    if not pos or not neg:
        return None
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def _accuracy(results: Sequence[PairResult], right: Any) -> dict[str, Any]:
    by: dict[str, dict[str, list[bool]]] = {
        "label": defaultdict(list),
        "trap": defaultdict(list),
        "lang": defaultdict(list),
    }
    for r in results:
        ok = bool(right(r))
        by["label"][r.label].append(ok)
        by["trap"][r.trap].append(ok)
        by["lang"][r.lang].append(ok)
    overall = [bool(right(r)) for r in results]
    return {
        "overall": sum(overall) / len(overall),
        **{k: {g: round(sum(v) / len(v), 3) for g, v in sorted(groups.items())} for k, groups in by.items()},
    }


def pair_metrics(results: Sequence[PairResult]) -> dict[str, Any]:
    relation = _accuracy(results, lambda r: r.relation == r.label)
    action = _accuracy(results, lambda r: r.action == EXPECTED_ACTION[r.label])
    confusion = {label: dict(Counter(r.relation for r in results if r.label == label)) for label in LABELS}
    bad_merges = [r.id for r in results if r.action == "merge" and r.label != "same"]
    bad_closes = [r.id for r in results if r.action == "close" and r.label in ("same", "unrelated")]
    labels = np.array([LABELS.index(r.label) for r in results])
    raw = np.array([[r.raw[o] for o in LABELS] for r in results])
    calibrated = np.array([[r.probabilities[o] for o in LABELS] for r in results])
    return {
        "relation_accuracy": round(relation["overall"], 4),
        "action_accuracy": round(action["overall"], 4),
        "bad_merges": len(bad_merges),
        "bad_closes": len(bad_closes),
        "bad_close_rate": round(len(bad_closes) / len(results), 4),
        "bad_merge_ids": bad_merges,
        "bad_close_ids": bad_closes,
        "held_by_threshold": sum(r.held_by_threshold for r in results),
        "episodes_only": sum(r.action == "episodes_only" for r in results),
        "unusable": sum(r.action == "failed" for r in results),
        "relation": relation,
        "action": action,
        "confusion": confusion,
        "auc_same": _rounded(
            auc([r.probabilities["same"] for r in results], [r.label == "same" for r in results])
        ),
        "auc_closing": _rounded(
            auc(
                [r.probabilities["updates"] + r.probabilities["contradicts"] for r in results],
                [r.label in ("updates", "contradicts") for r in results],
            )
        ),
        "ece_before": round(scores(raw, labels).ece, 4),
        "ece_after": round(scores(calibrated, labels).ece, 4),
        "seconds_per_pair": round(sum(r.seconds for r in results) / len(results), 2),
        "tokens_per_pair": round(sum(r.tokens for r in results) / len(results)),
        "count": len(results),
    }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def print_pair_metrics(m: dict[str, Any]) -> None:
    print(f"\n== judge on {m['count']} pairs")
    print(f"relation accuracy {m['relation_accuracy']:.3f}   action accuracy {m['action_accuracy']:.3f}")
    print(
        f"bad merges {m['bad_merges']}   bad closes {m['bad_closes']} ({m['bad_close_rate']:.1%})   "
        f"kept both by the 0.6 rule {m['held_by_threshold']}   episodes only {m['episodes_only']}"
        + (f"   unusable answers {m['unusable']}" if m.get("unusable") else "")
    )
    print(f"AUC P(same) {m['auc_same']}   AUC P(updates or contradicts) {m['auc_closing']}")
    print(f"ECE before calibration {m['ece_before']:.3f}   after {m['ece_after']:.3f}")
    print(f"{m['seconds_per_pair']:.1f} s and {m['tokens_per_pair']} tokens per pair")
    for by in ("label", "trap", "lang"):
        print(f"\n{'by ' + by:<14}{'relation':>10}{'action':>10}")
        for group, value in m["relation"][by].items():
            print(f"  {group:<12}{value:>10.3f}{m['action'][by][group]:>10.3f}")
    print(f"\nconfusion (rows: label, columns: answer)\n{'':<14}" + "".join(f"{o:>12}" for o in LABELS))
    for label in LABELS:
        row = m["confusion"][label]
        print(f"  {label:<12}" + "".join(f"{row.get(o, 0):>12}" for o in LABELS))
    for key in ("bad_merge_ids", "bad_close_ids"):
        if m[key]:
            print(f"{key.replace('_', ' ')}: {', '.join(m[key])}")
