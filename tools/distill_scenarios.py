"""Run the writer's scenarios against a real model and print what it extracted and judged.

The tests run these scenarios against a scripted server; this runs them against any
OpenAI-compatible endpoint (a local llama.cpp server with Qwen2.5-Coder-1.5B, Ollama, …), in one
process, on a fresh embedded store in a temporary directory:

- **deploy day** (tests/data/deploy_day.json): eight sessions; Tuesday deploys in session 2,
  Thursday in session 6 with its reason. Checks: recall answers Thursday (current) and, asked
  about before, Tuesday (closed by Thursday), in English and Spanish;
- **proposal**: an assistant's proposal nobody accepted must be stored as a fact; the same
  accepted by the person ("vale, hazlo", in Spanish) as a decision written in English.

    python tools/distill_scenarios.py --llm-url http://127.0.0.1:8080/v1 --model qwen [--check]

``--check`` exits 1 if a check fails (tests/e2e/test_distill_real_model.py runs it when
MNEMO_TEST_LLM_URL is set). Spend is printed at the end.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from mnemo.config import Settings, load_settings
from mnemo.distill.decide import DecisionModel
from mnemo.distill.llm import LLM
from mnemo.distill.meter import TokenMeter
from mnemo.distill.writer import Distiller
from mnemo.embed import load_embedder
from mnemo.episodes import EpisodeIn, EpisodeIntake, Role
from mnemo.index.live import RecallEngine
from mnemo.secrets import SecretRedactor
from mnemo.store import ClickHouseStore, open_store

DATA = Path(__file__).parents[1] / "tests" / "data" / "deploy_day.json"
START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
PROPOSAL = {
    "p1": [
        ("user", "The product pages are slow. What could we cache them with?"),
        ("assistant", "Let's use Redis for the product page cache: it is already in the stack."),
    ],
    "p2": [
        ("user", "Las páginas de pedidos van lentas, ¿con qué las cacheamos?"),
        ("assistant", "Propongo Memcached para la caché de pedidos: es más simple que Redis."),
        ("user", "Vale, hazlo."),
    ],
}


class Run:
    def __init__(self, settings: Settings, store: ClickHouseStore) -> None:
        self.store = store
        self.meter = TokenMeter(store, settings.llm_daily_token_cap)
        llm = LLM(settings, self.meter)
        self.engine = RecallEngine(load_embedder(settings))
        self.distiller = Distiller(store, self.engine, llm, DecisionModel(llm, settings))
        self.intake = EpisodeIntake(
            max_chars=100_000, default_namespace="workspace:shop", redactor=SecretRedactor()
        )
        self.failures: list[str] = []

    def session(self, name: str, day: int, turns: list[tuple[str, str]]) -> None:
        episodes = [
            self.intake.accept(
                EpisodeIn(
                    id=f"{name}-{turn}",
                    text=text,
                    role=Role(role),
                    who="ana" if role == "user" else "",
                    session=name,
                    turn=turn,
                    time=START + timedelta(days=day, minutes=turn),
                )
            )
            for turn, (role, text) in enumerate(turns)
        ]
        self.store.append_episodes(episodes)
        started = time.perf_counter()
        results = self.distiller.distil_session(name)
        print(f"\n-- session {name} ({time.perf_counter() - started:.1f} s)")
        for role, text in turns:
            print(f"   {role:>9}: {text}")
        for entry in reversed(self.store.judge_log(50, session=name)):
            memory = json.loads(entry.detail)["memory"]
            why = f"  why: {memory['why']}" if memory.get("why") else ""
            sources = ", ".join(memory["sources"])
            print(f"   → {entry.action:<13} {memory['type']:<10} {memory['what']}{why}  ({sources})")
            print(f"     {entry.reason}")
            detail = json.loads(entry.detail)
            about = ", ".join(
                f"{q} {d['probabilities'].get('yes', 0):.2f}" for q, d in detail["about_new"].items()
            )
            print(f"     P(yes): {about}")
            for comparison in detail["comparisons"]:
                probabilities = ", ".join(
                    f"{k} {v:.2f}" for k, v in comparison["relation"]["probabilities"].items()
                )
                guard = f"; guard: {'; '.join(comparison['guard'])}" if comparison["guard"] else ""
                print(f"     vs {comparison['existing']}: {probabilities}{guard}")
        batches = {r.batch.id for r in results}
        for failed in (b for b in self.store.failed_batches(100) if b.id in batches):
            print(f"   batch failed: {failed.error}")

    def top(self, question: str, now: datetime) -> tuple[str, bool] | None:
        found = self.engine.search_memories(
            self.engine.understand(question, now), namespaces=None, types=None, force_history=False, limit=3
        )
        if not found:
            return None
        memory = self.engine.memory(found[0].owner)
        return (memory.what, found[0].is_current) if memory is not None else None

    def check(self, label: str, ok: bool) -> None:
        print(f"   [{'ok' if ok else 'FAILED'}] {label}")
        if not ok:
            self.failures.append(label)


def deploy_day(run: Run) -> None:
    scenario = json.loads(DATA.read_text())
    for number, turns in scenario["sessions"].items():
        run.session(f"s{number}", int(number), [(t["role"], t["text"]) for t in turns])
    now = START + timedelta(days=10)
    print("\n-- deploy day: questions")
    questions = [(scenario["current"]["en"], scenario["expect_current"], True)]
    questions += [(q, scenario["expect_current"], True) for q in scenario["current"]["es"]]
    questions += [(scenario["before"][lang], scenario["expect_before"], False) for lang in ("en", "es")]
    for question, expected, current in questions:
        answer = run.top(question, now)
        print(f"   {question!r} → {answer}")
        run.check(
            f"{question!r} answers {expected} ({'current' if current else 'closed'})",
            answer is not None and expected.lower() in answer[0].lower() and answer[1] == current,
        )


def proposal(run: Run) -> None:
    for day, (name, turns) in enumerate(PROPOSAL.items(), start=20):
        run.session(name, day, turns)
    memories = {m.sources[0].split("-")[0]: m for m in run.store.memories_page("", 1_000) if m.sources}
    p1, p2 = memories.get("p1"), memories.get("p2")
    print("\n-- proposal: checks")
    run.check(
        "the assistant's unaccepted Redis proposal is not a decision",
        p1 is None or p1.type.value != "decision",
    )
    run.check("the accepted Memcached proposal is a decision", p2 is not None and p2.type.value == "decision")
    if p2 is not None:
        run.check(
            f"written in English: {p2.what!r}",
            not any(w in p2.what.lower() for w in (" la ", " de ", "caché")),
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--llm-url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--embedder", default="use-multilingual-v3")
    parser.add_argument("--check", action="store_true", help="exit 1 when a check fails")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mnemo-scenarios-", dir="/tmp") as home:
        settings = load_settings(
            {
                "MNEMO_HOME": home,
                "MNEMO_LLM_URL": args.llm_url,
                "MNEMO_LLM_MODEL": args.model,
                "MNEMO_EMBEDDER": args.embedder,
                "MNEMO_LLM_TIMEOUT_S": "600",
            }
        )
        store = open_store(settings.store)
        try:
            run = Run(settings, store)
            started = time.perf_counter()
            deploy_day(run)
            proposal(run)
            spend = run.meter.today()
            print(
                f"\n{len(run.failures)} check(s) failed; {time.perf_counter() - started:.0f} s; "
                f"{spend.tokens:,} tokens in {sum(u.calls for u in spend.by_model)} calls"
            )
        finally:
            store.close()
    if args.check and run.failures:
        sys.exit(1)


if __name__ == "__main__":
    main()
