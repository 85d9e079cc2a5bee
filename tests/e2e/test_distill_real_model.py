"""Optional: the writer against a real model, when MNEMO_TEST_LLM_URL points at one (e.g. the
local llama.cpp server of tools/models/local_llm.py; MNEMO_TEST_LLM_MODEL names the model): its context
asked of the server and every request sized to it; and tools/evals/eval_writer.py --check on the judge
pairs' test half and on the scenarios, so it fails
when a target is missed (relation and action accuracy ≥ 0.87, no bad merge, bad closes ≤ 3 %,
every scenario check). Slow (about an hour on 2 cores), so never in CI."""

from __future__ import annotations

import os
import subprocess

import pytest

from mnemo.distill.extract import extract
from mnemo.distill.llm import LLM, Message
from mnemo.distill.meter import TokenMeter
from mnemo.episodes import EpisodeIn, EpisodeIntake, Role
from mnemo.errors import ModelRefusedError
from mnemo.secrets import SecretRedactor
from mnemo.store import ClickHouseStore
from tests.helpers import REPO, Home
from tests.lab import tool_command, tool_env

URL = os.environ.get("MNEMO_TEST_LLM_URL", "")
TOOL = "tools.evals.eval_writer"
DATA = REPO / "tests" / "data"


@pytest.mark.skipif(not URL, reason="set MNEMO_TEST_LLM_URL to an OpenAI-compatible endpoint")
@pytest.mark.timeout(7_200)
def test_the_writer_meets_its_targets_on_a_real_model() -> None:
    model = os.environ.get("MNEMO_TEST_LLM_MODEL", "local")
    command = [*tool_command(TOOL), "--llm-url", URL, "--model", model, "--check"]
    command += [
        "--pairs",
        str(DATA / "judge_pairs_test.jsonl"),
        "--scenarios",
        str(DATA / "writer_scenarios.json"),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=7_100, check=False, env=tool_env())
    assert done.returncode == 0, done.stdout[-6_000:] + done.stderr[-2_000:]


@pytest.mark.skipif(not URL, reason="set MNEMO_TEST_LLM_URL to an OpenAI-compatible endpoint")
@pytest.mark.timeout(1_800)
def test_a_real_servers_context_is_asked_and_its_refusal_of_a_longer_request_read_as_an_overflow(
    home: Home, store: ClickHouseStore
) -> None:
    """Against llama.cpp's server (tools/models/local_llm.py serve): the context it runs is asked of it,
    a request past it is refused and read as an overflow, and a session several times longer
    than the context is extracted in stretches that it all accepts."""
    model = os.environ.get("MNEMO_TEST_LLM_MODEL", "local")
    settings = home.with_env(MNEMO_LLM_URL=URL, MNEMO_LLM_MODEL=model, MNEMO_LLM_MAX_RETRIES="0").settings
    llm = LLM(settings, TokenMeter(store, 0))
    context = llm.limits.context_tokens
    assert llm.limits.context.source == "the server (/props)"
    with pytest.raises(ModelRefusedError) as refused:
        llm.chat([Message("user", "hello world " * context)], purpose="test", max_tokens=4)
    assert refused.value.overflow
    intake = EpisodeIntake(max_chars=100_000, default_namespace="workspace:shop", redactor=SecretRedactor())
    lines = [
        EpisodeIn(id="ep_p", text="From now on the release notes live in docs/releases.", role=Role.USER)
    ]
    listing = "\n".join(f"-rw-r--r-- 1 ana ana {i * 37} Mar 2 build/chunk-{i}.js" for i in range(40))
    lines += [
        EpisodeIn(id=f"ep_t{i}", text=f"Bash ls build/{i}\n{listing}", role=Role.TOOL) for i in range(120)
    ]
    episodes = [intake.accept(e) for e in lines]
    assert llm.limits.tokens("\n".join(e.text for e in episodes)) > 3 * context
    extract(llm, episodes)  # raises if the server refused a stretch or the model's answer was unusable
