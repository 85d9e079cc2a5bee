"""tools/evals/eval_code_check.py and tools/evals/eval_code_rank.py: they run on the shipped cases and count
right. What the figures are, blind and fitted, is in docs/benchmarks.md; here the fitted set guards
the rules against a change that breaks what they were fitted to."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from tests.helpers import REPO
from tests.lab import tool_command, tool_env

DATA = REPO / "tests" / "data"


def _run(tool: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        tool_command(f"tools.evals.{tool}", *args),
        env=tool_env(),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_the_rules_grade_the_fitted_cases_as_labelled_and_name_the_new_values() -> None:
    done = _run("eval_code_check", "--cases", str(DATA / "code_cases_fit.json"), "--json")
    assert done.returncode == 0, done.stderr
    rules = json.loads(done.stdout)["rules"]
    assert rules["cases"] == 52
    assert rules["quiet"].startswith("20/20")  # no edit that leaves a memory true flags it
    right = int(rules["exact"].split("/")[0])
    assert right >= 50, rules  # 51 when fitted: one case is beyond a line-level reading


def test_a_malformed_case_file_is_refused_with_the_case_it_fails_on(tmp_path: Path) -> None:
    bad = tmp_path / "cases.json"
    bad.write_text(
        json.dumps(
            [{"id": "x", "memory": "m", "path": "a.py", "before": "", "after": None, "label": "still"}]
        )
    )
    done = _run("eval_code_check", "--cases", str(bad))
    assert done.returncode == 2 and "case 0: after is null exactly when the label is deleted" in done.stderr


def test_the_ranking_tool_marks_mnemos_weight_and_counts_what_a_flagged_answer_loses(tmp_path: Path) -> None:
    scenarios = tmp_path / "scenarios.json"
    scenarios.write_text(
        json.dumps(
            [
                {
                    "name": "gateway",
                    "memories": [
                        {
                            "id": "old",
                            "text": "The gateway timeout is 600 seconds",
                            "flagged": True,
                            "note": "x",
                        },
                        {
                            "id": "new",
                            "text": "We raised the gateway timeout to 900 seconds",
                            "flagged": False,
                            "note": "",
                        },
                        {"id": "other", "text": "Deploys go out on Thursdays", "flagged": False, "note": ""},
                    ],
                    "questions": [{"text": "what is the gateway timeout?", "answers": ["old", "new"]}],
                }
            ]
        )
    )
    done = _run("eval_code_rank", "--scenarios", str(scenarios), "--embedder", "none")
    assert done.returncode == 0, done.stderr
    rows = {
        line.split(" | ")[0].strip("| "): line for line in done.stdout.splitlines() if line.startswith("| ")
    }
    assert "0.7 (mnemo)" in rows
    assert "| 1/1 (1.000) |" in rows["0.7 (mnemo)"]  # the current answer first
    assert "| 1/1 |" in rows["1.0"]  # unweighed, the stale one was ahead
