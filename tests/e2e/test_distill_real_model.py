"""Optional: the writer against a real model, when MNEMO_TEST_LLM_URL points at one (e.g. the
local llama.cpp server of tools/local_llm.py; MNEMO_TEST_LLM_MODEL names the model). Runs
tools/eval_writer.py --check on the judge pairs' test half and on the scenarios, so it fails
when a target is missed (relation and action accuracy ≥ 0.87, no bad merge, bad closes ≤ 3 %,
every scenario check). Slow (about an hour on 2 cores), so never in CI."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.helpers import REPO

URL = os.environ.get("MNEMO_TEST_LLM_URL", "")
TOOL = REPO / "tools" / "eval_writer.py"
DATA = REPO / "tests" / "data"


@pytest.mark.skipif(not URL, reason="set MNEMO_TEST_LLM_URL to an OpenAI-compatible endpoint")
@pytest.mark.timeout(7_200)
def test_the_writer_meets_its_targets_on_a_real_model() -> None:
    model = os.environ.get("MNEMO_TEST_LLM_MODEL", "local")
    command = [sys.executable, str(TOOL), "--llm-url", URL, "--model", model, "--check"]
    command += [
        "--pairs",
        str(DATA / "judge_pairs_test.jsonl"),
        "--scenarios",
        str(DATA / "writer_scenarios.json"),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=7_100, check=False)
    assert done.returncode == 0, done.stdout[-6_000:] + done.stderr[-2_000:]
