"""Where a possibly stale memory should rank: the weight on its score, measured on scenarios.

    uv run --frozen python -m tools.evals.eval_code_rank --scenarios FILE.json [--embedder ID]...

``--scenarios FILE.json`` (repeatable): a JSON array of projects' stores, each with questions::

    [{"name": "billing service",
      "memories": [{"id": "m1", "text": "…", "flagged": false, "note": ""},
                   {"id": "m2", "text": "…", "flagged": true,
                    "note": "infra/lb.tf now has timeout_sec = 900 (was 600)"}],
      "questions": [{"text": "what is the gateway timeout?", "answers": ["m2"]}]}]

``flagged``: the code check found the memory possibly stale (``note`` is what it says then).
``answers``: every memory a teammate would want the agent to read for that question.

Each scenario's memories are indexed in an engine of their own, in this process, as the daemon
indexes them (:class:`mnemo.index.live.RecallEngine`, with the embedder given; ``none``: words
only), and each question is asked as recall asks it (the 10 best, those that answer by the
engine's test). The hits are then ordered as recall orders them, with a flagged memory's score
weighed by each weight of a grid (:func:`mnemo.daemon.code_checks.weighed`), and beside them the
order mnemo had before weights: every flagged hit behind every other. Per weight:

- **right first**: the first hit is one the question expects — a current (unflagged) memory that
  answers, where there is one; else a flagged one that answers; **MRR**: the mean of 1 / the rank
  of the first expected hit (0 when none is among the hits);
- **only-flagged in top 2**: of the questions only flagged memories answer, the share with one
  in the first two;
- **stale ahead**: of the questions a current memory answers beside a flagged one, the share
  whose flagged one ranks ahead of every current one that answers;
- **buried**: questions with a flagged answer behind a hit that does not answer and scores less
  than half of it (one that shares little with the question).

The weight in mnemo (:data:`mnemo.daemon.code_checks.STALE_WEIGHT`) is marked.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from mnemo.config import load_settings
from mnemo.daemon.code_checks import STALE_WEIGHT, weighed
from mnemo.embed import load_embedder
from mnemo.index.live import RecallEngine
from mnemo.memories import Origin
from mnemo.vocabulary import MemoryType
from tests.helpers import make_memory

WEIGHTS = (1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2)
BEHIND = "behind all"  # the order before weights: every flagged hit behind every other
LIMIT = 10
NOW = datetime(2026, 12, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Asked:
    """A question's related hits, best first: (memory id, score); what it expects."""

    hits: list[tuple[str, float]]
    answers: frozenset[str]
    flagged: frozenset[str]  # of the scenario's memories


def load_scenarios(paths: Sequence[str]) -> list[dict[str, Any]]:
    scenarios = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            raw = json.load(f)
        for n, scenario in enumerate(raw):
            ids = {m["id"] for m in scenario["memories"]}
            for q in scenario["questions"]:
                unknown = set(q["answers"]) - ids
                if unknown or not q["answers"]:
                    raise ValueError(
                        f"{path}: scenario {n}, question {q['text']!r}: answers {sorted(unknown)}"
                    )
            scenarios.append(scenario)
    return scenarios


def ask(scenarios: Sequence[dict[str, Any]], embedder_id: str) -> list[Asked]:
    with tempfile.TemporaryDirectory(prefix="mnemo-eval-rank-") as home:
        settings = load_settings({**os.environ, "MNEMO_HOME": home, "MNEMO_EMBEDDER": embedder_id})
        embedder = load_embedder(settings)
        asked = []
        for s, scenario in enumerate(scenarios):
            engine = RecallEngine(embedder)
            memories = [
                make_memory(
                    f"mem_s{s}_{m['id']}", m["text"], NOW, type=MemoryType.FACT, origin=Origin.EXPLICIT
                )
                for m in scenario["memories"]
            ]
            engine.add_memories(memories)
            if embedder is not None:
                while items := engine.take_backlog(256):
                    engine.put_vectors(
                        [(name, key) for name, key, _ in items],
                        embedder.embed_documents([t for *_, t in items]),
                    )
            flagged = frozenset(f"mem_s{s}_{m['id']}" for m in scenario["memories"] if m["flagged"])
            for q in scenario["questions"]:
                found = engine.search_memories(
                    engine.understand(q["text"], NOW),
                    namespaces=None,
                    types=None,
                    force_history=False,
                    limit=LIMIT,
                )
                hits = [(f.owner, f.score) for f in found if engine.is_related(f)]
                answers = frozenset(f"mem_s{s}_{a}" for a in q["answers"])
                asked.append(Asked(hits, answers, flagged))
        return asked


def order(a: Asked, weight: float | str) -> list[tuple[str, float]]:
    if weight == BEHIND:
        return sorted(a.hits, key=lambda h: h[0] in a.flagged)
    assert isinstance(weight, float)
    return weighed(a.hits, lambda h: h[0] in a.flagged, lambda h: h[1], weight)


def metrics(asked: Sequence[Asked], weight: float | str) -> dict[str, str]:
    right = only_top2 = only = stale_ahead = both = buried = 0
    reciprocal = 0.0
    for a in asked:
        ranked = order(a, weight)
        ids = [h for h, _ in ranked]
        current = a.answers - a.flagged
        expected = current or a.answers
        right += bool(ids) and ids[0] in expected
        reciprocal += next((1 / (k + 1) for k, i in enumerate(ids) if i in expected), 0.0)
        if not current:
            only += 1
            only_top2 += any(i in a.answers for i in ids[:2])
        elif a.answers & a.flagged:
            both += 1
            first_current = min((ids.index(i) for i in current if i in ids), default=len(ids))
            stale_ahead += any(ids.index(i) < first_current for i in a.answers & a.flagged if i in ids)
        score = dict(a.hits)
        for i in a.answers & a.flagged:
            if i in ids and any(o not in a.answers and score[o] < score[i] / 2 for o in ids[: ids.index(i)]):
                buried += 1
                break
    n = len(asked)
    return {
        "right first": f"{right}/{n} ({right / n:.3f})",
        "MRR": f"{reciprocal / n:.3f}",
        "only-flagged in top 2": f"{only_top2}/{only}",
        "stale ahead": f"{stale_ahead}/{both}",
        "buried": str(buried),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scenarios", action="append", required=True, help="scenarios (JSON)")
    parser.add_argument("--embedder", action="append", help="model id (repeatable); 'none' for words only")
    args = parser.parse_args(argv)
    try:
        scenarios = load_scenarios(args.scenarios)
    except (OSError, ValueError, KeyError) as exc:
        print(f"eval_code_rank: {exc}", file=sys.stderr)
        return 2
    questions = sum(len(s["questions"]) for s in scenarios)
    for embedder_id in args.embedder or ["none", "use-multilingual-v3"]:
        asked = ask(scenarios, embedder_id)
        print(f"## {embedder_id}: {len(scenarios)} scenarios, {questions} questions\n")
        print("| weight | right first | MRR | only-flagged in top 2 | stale ahead | buried |")
        print("|---|---|---|---|---|---|")
        for weight in (*WEIGHTS, BEHIND):
            row = metrics(asked, weight)
            mark = " (mnemo)" if weight == STALE_WEIGHT else ""
            print(f"| {weight}{mark} | " + " | ".join(row.values()) + " |")
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
