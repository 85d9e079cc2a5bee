"""tools/evals/eval_changes.py's plumbing: cases remembered through a real daemon with no model and
scored (closed, current first, nothing else closed), the writer's decision on each pair against
the scripted server (the judge alone, the rules, and the two as the writer combines them), and a
clear error for a malformed file. What the figures are on blind cases is in docs/benchmarks.md."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.helpers import UNRELATED, yes_with
from tests.lab import tool_command, tool_env
from tests.llm_server import LLMServer

TOOL = "tools.evals.eval_changes"


def _step(what: str, person: str = "") -> dict[str, str]:
    return {"type": "decision", "what": what, "person": person}


CASES: list[dict[str, Any]] = [
    {"id": "c1", "label": "change", "question": "which day do we deploy?", "current": ["thursday"],
     "steps": [_step("We deploy on Tuesdays"), _step("Deploys move to Thursday", "from now on, thursdays")]},
    {"id": "c2", "label": "sibling", "question": "how long do refresh tokens last?", "current": ["refresh"],
     "steps": [_step("Refresh tokens expire after 15 minutes"),
               _step("Access tokens expire after 15 minutes")]},
    {"id": "c3", "label": "revert", "question": "what is the proxy timeout?", "current": ["300"],
     "steps": [_step("The proxy timeout is 300 s"), _step("The proxy timeout is 600 s"),
               _step("The proxy timeout is 300 s again")]},
]  # fmt: skip


def _write(tmp_path: Path, cases: list[dict[str, Any]]) -> Path:
    path = tmp_path / "cases.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    return path


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    command = tool_command(TOOL, *args)
    return subprocess.run(
        command, capture_output=True, text=True, timeout=300, check=False, cwd=tmp_path, env=tool_env()
    )


def test_cases_remembered_with_no_model_are_scored_closed_current_first_and_nothing_else_closed(
    tmp_path: Path,
) -> None:
    done = _run(tmp_path, "--remember", str(_write(tmp_path, CASES)), "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["closes_due"] == 3 and out["closed"] == 1.0  # c1's Tuesday, c3's 300 and then 600
    assert out["current_first"] == 1.0 and out["siblings_closed"] == 0 and out["bad_closes"] == 0
    assert [r["closed_wrongly"] for r in out["results"]] == [[], [], []]


def test_the_writers_decision_is_the_rules_beside_the_judge(llm_server: LLMServer, tmp_path: Path) -> None:
    for question in ("help a later conversation", "still be true in a month"):
        llm_server.answer(contains=question, choices=yes_with(0.9))
    llm_server.answer(contains="How does the NEW memory relate", choices=UNRELATED)  # the model sees nothing
    path = _write(tmp_path, CASES)
    done = _run(tmp_path, "--llm-url", llm_server.url, "--model", "scripted-1", str(path), "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["pairs"] == 4 and out["judge_alone"]["closed"] == 0.0
    assert out["writer"]["closed"] == 1.0 and out["rule_only"]["closed"] == 1.0
    assert out["writer"]["siblings_closed"] == 0 and out["writer"]["bad_merges"] == 0


def test_the_rules_alone_need_no_model_and_no_store(tmp_path: Path) -> None:
    done = _run(tmp_path, "--rules", str(_write(tmp_path, CASES)), "--json")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["pairs"] == 4 and out["rule_only"] == {"closed": 1.0, "siblings_closed": 0, "bad_closes": 0}


def test_a_malformed_case_is_refused_naming_the_line(tmp_path: Path) -> None:
    path = _write(tmp_path, [CASES[0], {**CASES[1], "label": "maybe"}])
    done = _run(tmp_path, "--remember", str(path))
    assert done.returncode == 2 and f"{path}:2: label 'maybe' is not one of" in done.stderr
