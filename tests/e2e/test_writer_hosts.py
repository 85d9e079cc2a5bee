"""The writer's model through the real host CLIs (Claude Code and Codex from npm), against the
scripted model servers of tests/host_servers.py: a session the hooks recorded is distilled through
each CLI, and nothing of the writer's own calls comes back into mnemo — no episode, no memory, no
transcript for `mnemo import` — although the person's hooks are on in the same home.

The hosts come from ``MNEMO_TEST_HOSTS_DIR`` as in tests/e2e/test_hosts.py (they skip without
them, except under ``MNEMO_TEST_REQUIRE_HOSTS=1``). The backlog test is in
tests/e2e/test_writer_backlog.py. What the scripted servers cannot show: how a real model answers
the schema (docs/benchmarks.md has the figures through each CLI on the real local model).
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest

from mnemo.distill.at_once import SYSTEM as JUDGE_SYSTEM
from mnemo.distill.extract import SYSTEM as EXTRACT_SYSTEM
from mnemo.distill.hostcli import HostLLM
from mnemo.distill.llm import Message
from mnemo.distill.meter import TokenMeter
from mnemo.errors import ModelError
from mnemo.store import ClickHouseStore
from tests.e2e.test_hosts import CODEX_CONFIG, _host, _run
from tests.helpers import BIN, REPO, Home
from tests.host_servers import Block, ScriptedServer, Text, ToolCall, running

PROMPT = "From now on we deploy on Thursdays, because QA tests on Wednesday."
ANSWER = "Noted: deploys on Thursdays."
WHAT = "Deploys happen on Thursdays"


def _schema(body: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema a writer's request carries: Claude Code's StructuredOutput tool, or Codex's
    text format."""
    for tool in body.get("tools", []):
        if tool.get("name") == "StructuredOutput":
            return dict(tool["input_schema"])
    text_format = (body.get("text") or {}).get("format") or {}
    return text_format.get("schema")


def writer_reply(body: dict[str, Any]) -> Block | None:
    """The scripted writer's model: an extraction citing the first episode, or a judgement; None
    for anything else (the person's own session)."""
    seen = json.dumps(body)
    if EXTRACT_SYSTEM[:60] in seen:
        schema = _schema(body)
        assert schema is not None, "the extraction went out without its schema"
        ids = schema["properties"]["memories"]["items"]["properties"]["sources"]["items"]["enum"]
        memory = {"type": "decision", "what": WHAT, "who": "", "when": "", "where": "", "how": "",
                  "why": "QA tests on Wednesday", "entities": [], "sources": ids[:1]}  # fmt: skip
        return _structured(body, {"memories": [memory]})
    if JUDGE_SYSTEM[:40] in seen:
        schema = _schema(body)
        assert schema is not None, "the judgement went out without its schema"
        sure = {"answer": "yes", "sure": 0.9}
        asked = {"useful": sure, "durable": sure, "why_backed": sure, "existing": []}
        return _structured(body, {k: v for k, v in asked.items() if k in schema["properties"]})
    return None


def _structured(body: dict[str, Any], answer: dict[str, Any]) -> Block:
    if any(t.get("name") == "StructuredOutput" for t in body.get("tools", [])):
        return ToolCall("StructuredOutput", answer, id="toolu_writer")
    return Text(json.dumps(answer))


def _server() -> ScriptedServer:
    return ScriptedServer(lambda body: writer_reply(body) or Text(ANSWER))


def _writer_requests(server: ScriptedServer) -> list[dict[str, Any]]:
    return [b for b in server.posted() if writer_reply(b) is not None]


def _hooks_settings(home_dir: Path) -> None:
    """The person's Claude Code with mnemo's hooks on, as hooks/hooks.json has them."""
    hooks = json.loads((REPO / "hooks" / "hooks.json").read_text())["hooks"]
    (home_dir / ".claude").mkdir(parents=True)
    (home_dir / ".claude" / "settings.json").write_text(json.dumps({"hooks": hooks}))


def _status(home: Home) -> dict[str, Any]:
    return dict(json.loads(home.mnemo("status", "--json").stdout))


def _recorded(home: Home, count: int) -> int:
    """The episodes stored, once the hooks' ``count`` are (a hook may have spooled its event)."""
    deadline = time.monotonic() + 60
    while (stored := _status(home)["episodes"]) < count and time.monotonic() < deadline:
        time.sleep(0.3)
    assert stored == count, f"{stored} episodes stored, the hooks recorded {count}"
    return stored


def _distilled(home: Home, session: str) -> dict[str, Any]:
    asked = home.mnemo("distill", session, check=False)  # the host's SessionEnd may have had it done
    assert asked.returncode == 0 or "is distilled up to its last episode" in asked.stderr, asked.stderr
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        status = _status(home)
        if status["distillation"]["batches_done"] >= 1 and not status["distillation"]["running"]:
            return status
        assert not status["distillation"]["failed_batches"], status["distillation"]
        time.sleep(0.5)
    raise AssertionError(f"not distilled in 240 s: {_status(home)['distillation']}")


def _check_distilled_and_nothing_came_back(home: Home, server: ScriptedServer, episodes_before: int) -> None:
    status = _status(home)
    assert status["distillation"]["memories_added"] == 1, status["distillation"]
    recalled = home.mnemo("recall", "which day do we deploy", "--json").stdout
    assert WHAT in recalled
    writer_calls = _writer_requests(server)
    assert len(writer_calls) >= 2  # the extraction, then the judgement
    # No tools but the schema's, no MCP servers: nothing the writer's model could act with.
    # (Codex 0.171 always offers request_user_input, which works in plan mode only; exec has none.)
    for body in writer_calls:
        offered = [t.get("name") for t in body.get("tools", [])]
        assert offered in ([], ["StructuredOutput"], ["request_user_input"]), offered
    # The person's hooks are on in this home, yet the writer's calls recorded nothing.
    assert status["episodes"] == episodes_before
    assert not (home.settings.log_dir / "hooks.log").exists()
    model = status["language_model"]
    assert model["calls_today"] == len(writer_calls) and model["tokens_today"] > 0
    assert model["backend"] in ("claude-code", "codex")


def test_claude_code_as_the_writer_distils_a_recorded_session_and_leaves_nothing_behind(home: Home) -> None:
    claude = _host("claude")
    project = home.path / "project"
    project.mkdir()
    user_home = home.path / "claude-home"
    _hooks_settings(user_home)
    env = {**home.env, "HOME": str(user_home), "PATH": f"{BIN}:{os.environ['PATH']}",
           "ANTHROPIC_API_KEY": "sk-test", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
           "DISABLE_AUTOUPDATER": "1", "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1"}  # fmt: skip
    user = Home(home.path, env)
    user.mnemo("status")  # the daemon up, as it is once a person has used mnemo
    with running(_server()) as server:
        env["ANTHROPIC_BASE_URL"] = server.url
        out = _run(
            [str(claude), "-p", PROMPT, "--model", "claude-sonnet-4-5", "--output-format", "json"],
            env,
            project,
        )
        session = json.loads(out)["session_id"]
        projects = user_home / ".claude" / "projects"
        transcripts = sorted(projects.rglob("*.jsonl"))
        assert [t.name for t in transcripts] == [f"{session}.jsonl"]
        episodes_before = _recorded(user, 2)  # the prompt and the answer, from the hooks
        said = user.mnemo(
            "writer", "use", "claude-code", "--command", str(claude), "--url", server.url
        ).stdout
        assert "the writer now uses claude-code (haiku)" in said and "mnemo status" in said
        _distilled(user, session)
        _check_distilled_and_nothing_came_back(user, server, episodes_before)
        assert all(
            b.get("model") == "haiku" or "haiku" in str(b.get("model")) for b in _writer_requests(server)
        )
    assert sorted(projects.rglob("*.jsonl")) == transcripts, "a writer's call left a transcript"
    imported = user.mnemo("import", "--from", "claude-code", str(projects), "--quiet").stdout
    assert re.search(r"\b0 new episodes", imported), imported
    user.mnemo("writer", "use", "openai")
    assert _status(user)["language_model"]["backend"] == "openai"


def test_codex_as_the_writer_distils_a_recorded_session_and_leaves_nothing_behind(
    codex_user: Home, plugin_dir: Path
) -> None:
    codex = _host("codex")
    home = codex_user
    project = home.path / "project"
    project.mkdir()
    codex_home = home.path / "codex-home"
    codex_home.mkdir()
    env = {**home.env, "CODEX_HOME": str(codex_home), "PATH": f"{BIN}:{os.environ['PATH']}",
           "SCRIPTED_API_KEY": "sk-test"}  # fmt: skip
    user = Home(home.path, env)
    user.mnemo("status")
    with running(_server()) as server:
        (codex_home / "config.toml").write_text(CODEX_CONFIG.format(url=server.url))
        _run([str(codex), "plugin", "marketplace", "add", str(plugin_dir)], env, project)
        _run([str(codex), "plugin", "add", "mnemo@mnemo"], env, project)
        command = [str(codex), "exec", "--skip-git-repo-check", "--json", "--dangerously-bypass-hook-trust",
                   "--dangerously-bypass-approvals-and-sandbox", PROMPT]  # fmt: skip
        out = _run(command, env, project)
        [session] = [json.loads(line)["thread_id"] for line in out.splitlines() if '"thread.started"' in line]
        rollouts = sorted((codex_home / "sessions").rglob("*.jsonl"))
        assert len(rollouts) == 1 and session in rollouts[0].name
        episodes_before = _recorded(user, 2)
        url = f"{server.url}/v1"
        said = user.mnemo(
            "writer", "use", "codex", "--command", str(codex), "--url", url, "--model", "gpt-5"
        ).stdout
        assert "the writer now uses codex (gpt-5)" in said
        _distilled(user, session)
        _check_distilled_and_nothing_came_back(user, server, episodes_before)
        for body in _writer_requests(server):  # the writer's instructions only: no agent prompt, no skills
            developer = [m for m in body["input"] if m.get("role") == "developer"]
            assert len(developer) == 1 and "coding agent" not in json.dumps(developer)
    assert sorted((codex_home / "sessions").rglob("*.jsonl")) == rollouts, "a writer's call left a rollout"
    imported = user.mnemo("import", "--from", "codex", str(codex_home / "sessions"), "--quiet").stdout
    assert re.search(r"\b0 new episodes", imported), imported


def test_a_host_without_its_login_fails_closed_and_never_spends_a_key_it_finds(
    home: Home, store: ClickHouseStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No silent fallback: a key in the daemon's environment is not the login the person chose."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-not-this")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-this")
    meter = TokenMeter(store, 0)
    for backend, name in (("claude-code", "claude"), ("codex", "codex")):
        nobody = home.path / f"{name}-nobody"
        (nobody / "codex").mkdir(parents=True)
        monkeypatch.setenv("HOME", str(nobody))
        monkeypatch.setenv("CODEX_HOME", str(nobody / "codex"))
        settings = home.with_env(MNEMO_LLM_BACKEND=backend, MNEMO_LLM_HOST_COMMAND=str(_host(name))).settings
        llm = HostLLM(settings, meter)
        with pytest.raises(
            ModelError, match=rf"the {backend} CLI with its own login is not logged in .*never falls back"
        ):
            llm.chat([Message("user", "hello")], purpose="test", max_tokens=5)
        llm.close()
    assert meter.today().calls == 0
