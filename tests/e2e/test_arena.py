"""tools/arena/eval_arena.py through the real hosts, with the writer's model scripted (tests/llm_server.py):
a scenario session with two prompts and a tool turn is played through Claude Code or Codex with
mnemo's plugin; the hooks record it as the exchanges say; the daemon distils it; the question,
asked in a new session, finds the memory in what the hooks injected, recall agrees, mnemo off
does not have it, the usage audit has the oracle reader's citation, and the memory the scenario
says is closed (the writer leaves it current) counts as a stale value injected; tools/arena/arena_replay.py
asks the question again on a copy of the kept store. What the figures
are with a real model is in docs/benchmarks.md; this shows the arena plays and counts right.

The hosts come from ``MNEMO_TEST_HOSTS_DIR`` as in tests/e2e/test_hosts.py."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.e2e.test_hosts import HOSTS, _host
from tests.helpers import BIN, yes_with
from tests.lab import tool_command, tool_env
from tests.llm_server import LLMServer

TOOL = "tools.arena.eval_arena"
REPLAY = "tools.arena.arena_replay"
DECISION = "From now on we deploy the shop on Tuesdays, and its releases stay frozen on Fridays."
SCENARIO = {
    "scenarios": [
        {
            "name": "deploys",
            "sessions": [
                {
                    "name": "s1",
                    "day": 1,
                    "turns": [
                        {"role": "user", "text": DECISION},
                        {"role": "assistant", "text": "Let me look at the release calendar."},
                        {"role": "tool", "text": "calendar: Tuesday 10:00 free (marker-4b1d)"},
                        {"role": "assistant", "text": "Understood, deploys go out on Tuesday."},
                        {"role": "user", "text": "Thanks, that is all."},
                        {"role": "assistant", "text": "Noted."},
                    ],
                }
            ],
            "checks": [
                {"recall": "what day do we deploy?", "top": ["tuesday"], "status": "active"},
                {"closed": ["fridays", "frozen"]},  # the writer below leaves it current: stale
                {"closed": ["mondays"]},  # in no memory
            ],
        }
    ]
}


def _extraction(prompt: str) -> str:
    """The decision, citing the prompt's episode as the transcript shows it; nothing from the
    question sessions (a host's SessionEnd asks for them too)."""
    found = re.search(r"\[([^\]]+)\][^\n]*" + re.escape(DECISION), prompt)
    if found is None:
        return json.dumps({"memories": []})
    source = [found.group(1)]
    memories = [
        {"type": "decision", "what": "The shop is deployed on Tuesdays", "sources": source},
        # About the shop and in the words of the line it cites: a rule chooses only what it is about
        # (gate.chosen_by), and a memory the line never words is dropped (gate.unsaid).
        {"type": "decision", "what": "The shop's releases are frozen on Fridays", "sources": source},
    ]
    return json.dumps({"memories": memories})


@pytest.mark.parametrize("host", ["claude-code", "codex"])
def test_the_arena_plays_a_scenario_through_the_host_and_scores_what_was_injected(
    host: str, llm_server: LLMServer, tmp_path: Path
) -> None:
    _host("claude" if host == "claude-code" else "codex")
    llm_server.answer(contains="Transcript:", text=_extraction)
    for question in ("help a later conversation", "still be true in a month", "back the NEW memory's why"):
        llm_server.answer(contains=question, choices=yes_with(0.9))
    # The usage audit, asked of a memory the answer does not cite: clearly unused (only a citation is used).
    llm_server.answer(contains="Did the ANSWER use the MEMORY", choices=yes_with(0.01))
    scenarios = tmp_path / "scenarios.json"
    scenarios.write_text(json.dumps(SCENARIO))
    env = tool_env({k: v for k, v in os.environ.items() if not k.startswith("MNEMO_")})
    env["PATH"] = f"{BIN}:{env['PATH']}"
    command = [*tool_command(TOOL), "--host", host, "--scenarios", str(scenarios),
               "--hosts-dir", str(HOSTS), "--llm-url", llm_server.url, "--model", "scripted-1",
               "--json", "--keep"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    *_, line, summary = done.stdout.strip().splitlines()
    kept = Path(done.stderr.split("arena kept in ")[-1].split()[0])
    try:
        out = json.loads(line)
        [session] = out["sessions"]
        assert session["added"] == 2 and session["calls"] >= 1, session
        [question] = out["questions"]
        assert question["answered"] and question["recall_ok"], question
        assert question["blocks"] and set(question["blocks"]) <= {"SessionStart", "UserPromptSubmit"}
        assert question["tokens"] > 0
        # Stale is scored per closed check, on what the scenario's questions were given.
        frozen, monday = out["stale"]
        frozen_lines = [line.split(": ", 1)[1] for line in frozen["lines"]]
        assert frozen_lines == ["The shop's releases are frozen on Fridays"]
        assert monday["lines"] == [], monday
        assert not question["off_answered"] and question["off_request_tokens"] > 0
        [scenario] = out["scenarios"]
        assert scenario["verdicts"]["used"] == 1, scenario  # the reader cited the memory
        assert scenario["tokens_per_answer"] == question["tokens"]
        assert (scenario["stale"], scenario["closed_checks"]) == (1, 2), scenario
        assert summary.startswith(f"arena {host} (scripted-1): 1/1 answered by what was injected"), summary
        assert "1/2 closed values injected as current" in summary, summary
        # What injection cost the run, as mnemo stats counts it: the played session's two prompts
        # and the question's; the question session's start gave it its memories.
        injection = out["injection"]
        assert injection["prompts"] == 3 and injection["sessions"] == 2, injection
        assert injection["start_blocks"] >= 1 and injection["start_block_tokens"] > 0, injection
        assert f"{injection['prompts_injected']}/3 prompts got memory" in summary, summary
        # The hooks recorded the session as played: two prompts, the real shell's output, the answers.
        user_env = {**env, "HOME": str(kept / "home")}
        shown = subprocess.run(
            [str(BIN / "mnemo"), "recall-episode", "--session", session["session_id"], "--json"],
            env=user_env, capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        episodes = [hit["episode"] for hit in json.loads(shown)["episodes"]]
        kinds = [e["kind"] for e in episodes]
        assert kinds == ["prompt", "tool_result", "response", "prompt", "response"], kinds
        assert episodes[0]["text"] == DECISION and "marker-4b1d" in episodes[1]["text"]
        assert episodes[2]["text"] == "Understood, deploys go out on Tuesday."
        assert episodes[4]["text"] == "Noted."
        # The mnemo-off row alone: the question carries none of its answer's words.
        only = [c for c in command if c not in ("--json", "--keep")] + ["--baseline-only"]
        done = subprocess.run(only, capture_output=True, text=True, timeout=300, check=False, env=env)
        assert done.returncode == 0, done.stderr[-3000:]
        last = done.stdout.strip().splitlines()[-1]
        assert last.startswith(f"arena {host}, mnemo off: 0/1 questions carry their answer's words"), last
        # The question again, two rounds on a copy of the kept store, the policy before issue 60:
        # answered both times, nothing distilled from the rounds, the kept store as the run left it.
        memories = _memories(user_env)
        replay = [*tool_command(REPLAY), str(kept), "--host", host, "--scenarios", str(scenarios),
                  "--hosts-dir", str(HOSTS), "--rounds", "2", "--json",
                  "--setting", "start_memories=all"]  # fmt: skip
        done = subprocess.run(replay, capture_output=True, text=True, timeout=600, check=False, env=env)
        assert done.returncode == 0, done.stderr[-3000:]
        *_, line, summary = done.stdout.strip().splitlines()
        again = json.loads(line)
        assert [r["answered"] for r in again["rounds"]] == [1, 1] and again["lost"] == [], again["rounds"]
        assert all(r["tokens"] > 0 and r["verdicts"]["used"] == 1 for r in again["rounds"]), again["rounds"]
        assert summary.startswith(f"arena replay {host} (start_memories=all), 2 rounds: answered 1/1 -> 1/1")
        assert _memories(user_env) == memories
    finally:
        stop = [str(BIN / "mnemo"), "daemon", "stop"]
        subprocess.run(stop, env={**env, "HOME": str(kept / "home")}, check=False, capture_output=True)
        subprocess.run(["rm", "-rf", str(kept)], check=False)


def _memories(env: dict[str, str]) -> list[str]:
    """The kept user's memories, as mnemo export gives them (one JSON line each)."""
    out = subprocess.run(
        [str(BIN / "mnemo"), "export", "-", "--quiet"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return sorted(out.stdout.splitlines())
