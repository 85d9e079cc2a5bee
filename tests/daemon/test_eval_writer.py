"""tools/evals/eval_writer.py's plumbing against the scripted server: pairs through the real judge path
scored against their labels, a scenario replayed and checked, the JSON shape other tools read,
--check's exit code, and a clear error for a malformed pairs file. What the figures are on a real
model is in docs/benchmarks.md; this shows the tool counts right."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.helpers import UNRELATED, yes_with
from tests.lab import tool_command, tool_env
from tests.llm_server import LLMServer

TOOL = "tools.evals.eval_writer"
SAME = {"A": 0.9, "B": 0.04, "C": 0.03, "D": 0.03}
_LIMIT = {"type": "fact", "what": "The API allows 100 requests a minute"}
PAIRS = [
    {"id": "t-1", "lang": "en", "topic": "api", "old": _LIMIT, "label": "same", "trap": "paraphrase",
     "new": {"type": "fact", "what": "Clients may send 100 requests per minute to the API"}},
    {"id": "t-2", "lang": "es", "topic": "api", "old": _LIMIT, "label": "updates", "trap": "none",
     "new": {"type": "fact", "what": "La API registra cada petición en la tabla de auditoría"}},
]  # fmt: skip
SCENARIO = {
    "scenarios": [
        {
            "name": "cache",
            "namespace": "workspace:shop",
            "sessions": [
                {
                    "name": "c1",
                    "day": 1,
                    "turns": [
                        {"role": "user", "who": "ana", "text": "From now on we cache the orders in Redis."}
                    ],
                }
            ],
            "checks": [
                {"recall": "what do we cache orders with?", "top": ["redis"], "status": "active"},
                {"closed": ["memcached"]},
            ],
        }
    ]
}


def _script(server: LLMServer) -> None:
    memory = {"type": "decision", "what": "Orders are cached in Redis", "sources": ["cache.c1.0"]}
    server.answer(contains="Transcript:", text=json.dumps({"memories": [memory]}))
    for question in ("help a later conversation", "still be true in a month", "back the NEW memory's why"):
        server.answer(contains=question, choices=yes_with(0.9))
    server.answer(contains="NEW memory: Clients may send 100", choices=SAME)
    server.answer(contains="How does the NEW memory relate", choices=UNRELATED)


def _run(server: LLMServer, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = tool_command(TOOL, "--llm-url", server.url, "--model", "scripted-1", *args)
    return subprocess.run(
        command, capture_output=True, text=True, timeout=300, check=False, cwd=tmp_path, env=tool_env()
    )


def test_pairs_and_scenarios_are_scored_against_their_labels_and_checks(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    _script(llm_server)
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps(p) + "\n" for p in PAIRS))
    scenarios = tmp_path / "scenarios.json"
    scenarios.write_text(json.dumps(SCENARIO))
    done = _run(
        llm_server, tmp_path, "--pairs", str(pairs), "--scenarios", str(scenarios), "--json", "--check"
    )
    assert done.returncode == 1, done.stderr  # the updates pair is judged unrelated: a target missed
    out = json.loads(done.stdout)
    assert out["relation_accuracy"] == 0.5 and out["action_accuracy"] == 0.5
    assert out["bad_merges"] == 0 and out["bad_closes"] == 0 and len(out["pairs"]) == 2
    assert out["confusion"]["updates"] == {"unrelated": 1} and out["relation"]["lang"] == {
        "en": 1.0,
        "es": 0.0,
    }
    assert [p["action"] for p in out["pairs"]] == ["merge", "add"] and out["relation_method"] == "one"
    checks = out["scenarios"]["checks"]
    assert [c["ok"] for c in checks] == [True, False, True]  # recall, closed, the decision's backing
    assert any("relation_accuracy 0.500 < 0.87" in m for m in out["missed"])


def test_a_malformed_pairs_file_is_refused_naming_the_line(llm_server: LLMServer, tmp_path: Path) -> None:
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(json.dumps(PAIRS[0]) + "\n" + json.dumps({**PAIRS[1], "label": "maybe"}) + "\n")
    done = _run(llm_server, tmp_path, "--pairs", str(pairs))
    assert done.returncode == 2 and f"{pairs}:2: label is 'maybe', not one of same" in done.stderr
    assert llm_server.requests == []
