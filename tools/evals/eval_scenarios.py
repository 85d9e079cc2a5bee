"""The writer on multi-session scenarios, for tools/evals/eval_writer.py (format: docs/models.md#scenarios).

Each scenario's sessions are stored as episodes in the scenario's namespace, a day apart as their
``day`` says, and distilled one by one in order by the daemon's writer (extraction, the judge,
the approval policy); then its checks ask recall, limited to that namespace, at ``at_day``.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from mnemo.config import Settings
from mnemo.distill.decide import DecisionModel
from mnemo.distill.llm import ChatModel
from mnemo.distill.meter import TokenMeter
from mnemo.distill.writer import Distiller
from mnemo.embed import Embedder
from mnemo.episodes import EpisodeIn, EpisodeIntake, Role
from mnemo.index.live import RecallEngine
from mnemo.memories import Memory
from mnemo.secrets import SecretRedactor
from mnemo.store import ClickHouseStore
from mnemo.vocabulary import MemoryStatus

START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
CHECK_KINDS = ("recall", "closed", "type", "none", "no_memory_from", "not_decision")
OPEN = (MemoryStatus.ACTIVE, MemoryStatus.CANDIDATE)


def load_scenarios(path: Path) -> list[dict[str, Any]]:
    """The scenarios of a file, checked for shape; ValueError naming what is wrong."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"{path}: {exc.strerror}") from None
    except ValueError as exc:
        raise ValueError(f"{path}: not JSON ({exc})") from None
    scenarios = data.get("scenarios") if isinstance(data, dict) else None
    if not isinstance(scenarios, list) or not scenarios:
        raise ValueError(f"{path}: expected an object with a non-empty 'scenarios' list")
    for i, scenario in enumerate(scenarios):
        where = f"{path}: scenarios[{i}]"
        if not isinstance(scenario, dict) or not isinstance(scenario.get("name"), str):
            raise ValueError(f"{where}: each scenario is an object with a name")
        where = f"{path}: scenario {scenario['name']!r}"
        sessions = scenario.get("sessions")
        if not isinstance(sessions, list) or not sessions:
            raise ValueError(f"{where}: needs a non-empty 'sessions' list")
        names = set()
        for session in sessions:
            if not isinstance(session, dict) or not isinstance(session.get("name"), str):
                raise ValueError(f"{where}: each session is an object with a name")
            if not isinstance(session.get("day"), int) or not isinstance(session.get("turns"), list):
                raise ValueError(
                    f"{where}: session {session['name']!r} needs an integer day and a turns list"
                )
            for turn in session["turns"]:
                if not isinstance(turn, dict) or turn.get("role") not in ("user", "assistant", "tool"):
                    raise ValueError(
                        f"{where}: session {session['name']!r}: a turn's role is user, assistant or tool"
                    )
                if not isinstance(turn.get("text"), str) or not turn["text"].strip():
                    raise ValueError(f"{where}: session {session['name']!r}: every turn needs a text")
            names.add(session["name"])
        for check in scenario.get("checks", []):
            kinds = [k for k in CHECK_KINDS if k in check]
            if len(kinds) != 1:
                raise ValueError(f"{where}: a check has exactly one of {', '.join(CHECK_KINDS)}: {check}")
            if kinds[0] == "no_memory_from" and not set(check["no_memory_from"]) <= names:
                raise ValueError(f"{where}: no_memory_from names a session it does not have: {check}")
    return scenarios


def safe_name(name: str) -> str:
    """A scenario's or session's name as ids and directories may hold it."""
    return re.sub(r"[^A-Za-z0-9._-]", "-", name)


def _prefix(scenario: dict[str, Any]) -> str:
    """The scenario's name as its episode ids start with it."""
    return safe_name(scenario["name"])


def holds(text: str, words: Sequence[str]) -> bool:
    """Every word (``a|b`` meaning either) appears in ``text``, case aside: a check's rule."""
    text = text.lower()
    return all(any(w.lower() in text for w in word.split("|")) for word in words)


def _matches(memory: Memory, words: Sequence[str]) -> bool:
    """Every word (``a|b`` meaning either) appears in the memory's what, why, how or where."""
    return holds(" ".join((memory.what, memory.why, memory.how, memory.where)), words)


class ScenarioRun:
    def __init__(
        self,
        settings: Settings,
        store: ClickHouseStore,
        llm: ChatModel,
        meter: TokenMeter,
        embedder: Embedder | None,
        verbose: bool,
    ) -> None:
        self.store = store
        self.meter = meter
        self.engine = RecallEngine(embedder)
        self.distiller = Distiller(store, self.engine, llm, DecisionModel(llm, settings))
        self.intake = EpisodeIntake(
            max_chars=100_000, default_namespace="workspace:eval", redactor=SecretRedactor()
        )
        self.verbose = verbose

    def replay(self, scenario: dict[str, Any]) -> list[dict[str, Any]]:
        """Store and distil every session; one row per session with its model time and tokens."""
        rows = []
        for session in scenario["sessions"]:
            name = f"{_prefix(scenario)}.{session['name']}"
            episodes = [
                self.intake.accept(
                    EpisodeIn(
                        id=f"{name}.{turn}",
                        text=t["text"],
                        role=Role(t["role"]),
                        who=t.get("who", "") if t["role"] == "user" else "",
                        session=name,
                        turn=turn,
                        time=START + timedelta(days=session["day"], minutes=turn),
                        namespace=scenario.get("namespace", "workspace:eval"),
                    )
                )
                for turn, t in enumerate(session["turns"])
            ]
            self.store.append_episodes(episodes)
            tokens, calls = self.meter.today().tokens, self.meter.today().calls
            started = time.perf_counter()
            results = self.distiller.distil_session(name)
            seconds = time.perf_counter() - started
            failed = [
                b.error for b in self.store.failed_batches(100) if b.id in {r.batch.id for r in results}
            ]
            row = {
                "session": session["name"],
                "turns": len(session["turns"]),
                "seconds": round(seconds, 1),
                "tokens": self.meter.today().tokens - tokens,
                "calls": self.meter.today().calls - calls,
                "added": sum(len(r.added) for r in results),
                "closed": sum(len(r.closed) for r in results),
                "merged": sum(len(r.merged) for r in results),
                "episodes_only": sum(r.episodes_only for r in results),
                "failed": failed,
            }
            rows.append(row)
            if self.verbose:
                self._show(scenario["name"], name, row)
        return rows

    def _show(self, scenario: str, session: str, row: dict[str, Any]) -> None:
        print(
            f"\n-- {scenario} / {session}: {row['turns']} turns, "
            f"{row['seconds']:.1f} s, {row['calls']} calls, {row['tokens']:,} tokens"
        )
        for entry in reversed(self.store.judge_log(50, session=session)):
            detail = json.loads(entry.detail)
            memory = detail["memory"]
            why = f"  why: {memory['why']}" if memory.get("why") else ""
            print(f"   → {entry.action:<13} {memory['type']:<10} {memory['what']}{why}")
            cited = ", ".join(s.rsplit(".", 1)[-1] for s in memory.get("sources", []))
            print(f"     cites turns {cited}")
            print(f"     {entry.reason}")
            about = ", ".join(
                f"{q} {d['probabilities'].get('yes', 0):.2f}" for q, d in detail.get("about_new", {}).items()
            )
            if about:  # a dropped draft was never judged
                print(f"     P(yes): {about}")
            for c in detail.get("comparisons", []):
                p = ", ".join(f"{k} {v:.2f}" for k, v in c["relation"]["probabilities"].items())
                guard = f"; guard: {'; '.join(c['guard'])}" if c["guard"] else ""
                apart = "; too far apart to close" if c.get("apart") else ""
                print(f"     vs {c['existing_text'][:60]!r}: {p}{guard}{apart}")
        for error in row["failed"]:
            print(f"   batch failed: {error}")

    def memories(self, namespace: str) -> list[Memory]:
        return [m for m in self.store.memories_page("", 100_000) if m.namespace == namespace]

    def check(
        self, scenario: dict[str, Any], check: dict[str, Any], memories: Sequence[Memory]
    ) -> tuple[bool, str, bool]:
        """Whether a check holds over the scenario's ``memories``, what was found, and — for a
        ``not_decision`` or ``no_memory_from`` that fails — whether every memory it found waits
        for a person (none is active: none reaches recall or the hooks)."""
        namespace = scenario.get("namespace", "workspace:eval")
        now = START + timedelta(days=scenario.get("at_day", max(s["day"] for s in scenario["sessions"]) + 1))
        opened = [m for m in memories if m.status in OPEN]
        if "recall" in check:
            hits = self.engine.search_memories(
                self.engine.understand(check["recall"], now),
                namespaces=[namespace],
                types=None,
                force_history=False,
                limit=3,
            )
            top = self.engine.memory(hits[0].owner) if hits else None
            if top is None:
                return False, "recall found no memory", False
            status = "active" if top.status is MemoryStatus.ACTIVE else top.status.value
            ok = _matches(top, check["top"]) and status == check.get("status", "active")
            return ok, f"top: {status} {top.what!r}", False
        if "closed" in check:
            closed = [m for m in memories if m.status is MemoryStatus.CLOSED and _matches(m, check["closed"])]
            return bool(closed), f"closed: {[m.what for m in closed][:2]}", False
        if "type" in check:
            found = [m for m in opened if _matches(m, check["of"])]
            ok = any(m.type.value == check["type"] for m in found)
            return ok, f"found: {[(m.type.value, m.what) for m in found][:3]}", False
        if "none" in check:
            found = [m for m in memories if m.status is MemoryStatus.ACTIVE and _matches(m, check["none"])]
            return not found, f"active: {[m.what for m in found][:2]}", False
        if "not_decision" in check:
            unless = check.get("unless", "")
            found = [
                m
                for m in opened
                if m.type.value == "decision"
                and _matches(m, check["not_decision"])
                and not (unless and _matches(m, [unless]))
            ]
            return not found, f"decisions: {[m.what for m in found][:2]}", _waiting(found)
        sessions = {f"{_prefix(scenario)}.{s}." for s in check["no_memory_from"]}
        found = [m for m in opened if any(src.startswith(tuple(sessions)) for src in m.sources)]
        return not found, f"memories: {[m.what for m in found][:3]}", _waiting(found)


def _waiting(found: Sequence[Memory]) -> bool:
    return bool(found) and all(m.status is MemoryStatus.CANDIDATE for m in found)


def run_scenarios(
    scenarios: Sequence[dict[str, Any]],
    settings: Settings,
    store: ClickHouseStore,
    llm: ChatModel,
    meter: TokenMeter,
    embedder: Embedder | None,
    *,
    verbose: bool,
) -> dict[str, Any]:
    run = ScenarioRun(settings, store, llm, meter, embedder, verbose)
    sessions: list[dict[str, Any]] = []
    checks: list[dict[str, Any]] = []
    stored: list[dict[str, Any]] = []
    for scenario in scenarios:
        for row in run.replay(scenario):
            sessions.append({"scenario": scenario["name"], **row})
        memories = run.memories(scenario.get("namespace", "workspace:eval"))
        stored += [_stored(scenario, m) for m in memories]
        for check in scenario.get("checks", []):
            ok, found, waiting = run.check(scenario, check, memories)
            label = check.get("label") or json.dumps(
                {k: v for k, v in check.items() if k != "label"}, ensure_ascii=False
            )
            checks.append(
                {
                    "scenario": scenario["name"],
                    "label": label,
                    "ok": ok,
                    "found": found,
                    "waiting_only": waiting,
                }
            )
        # The rule the writer must keep whatever the model says: a decision cites a person's line.
        unbacked = [m.what for m in memories if m.type.value == "decision" and not m.has_human_backing]
        checks.append(
            {
                "scenario": scenario["name"],
                "label": "decisions only where a person's line backs them",
                "ok": not unbacked,
                "found": str(unbacked[:2]),
                "waiting_only": False,
            }
        )
    return {
        "sessions": sessions,
        "checks": checks,
        "memories": stored,
        "passed": sum(c["ok"] for c in checks),
        "failed_waiting_only": sum(c["waiting_only"] for c in checks),
        "total": len(checks),
    }


def _stored(scenario: dict[str, Any], memory: Memory) -> dict[str, Any]:
    """A memory a scenario left, as the JSON output lists it: the sessions it came from, its type,
    status and why, its confidence and what it says."""
    prefix = _prefix(scenario) + "."
    from_sessions = sorted({s.removeprefix(prefix).rsplit(".", 1)[0] for s in memory.sources})
    return {
        "scenario": scenario["name"],
        "sessions": from_sessions,
        "type": memory.type.value,
        "status": memory.status.value,
        "status_reason": memory.status_reason,
        "confidence": memory.confidence,
        "what": memory.what,
    }


def print_scenario_results(result: dict[str, Any]) -> None:
    print(f"\n== scenarios: {result['passed']}/{result['total']} checks pass")
    if result["failed_waiting_only"]:
        print(
            f"   ({result['failed_waiting_only']} of the failures found only memories waiting for a person:"
            " none of them active)"
        )
    current = None
    for check in result["checks"]:
        if check["scenario"] != current:
            current = check["scenario"]
            print(f"\n{current}")
        mark = "ok" if check["ok"] else "FAILED, waiting only" if check["waiting_only"] else "FAILED"
        print(f"  [{mark}] {check['label']}  ({check['found']})")
    head = f"{'session':<28}{'turns':>6}{'seconds':>9}{'calls':>6}{'tokens':>9}"
    print(f"\n{head}  added closed merged episodes-only")
    for row in result["sessions"]:
        print(
            f"  {row['scenario'] + '/' + row['session']:<26}{row['turns']:>6}"
            f"{row['seconds']:>9.1f}{row['calls']:>6}{row['tokens']:>9}"
            f"  {row['added']:>5} {row['closed']:>6} {row['merged']:>6} {row['episodes_only']:>13}"
        )
