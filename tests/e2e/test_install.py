"""A user's first hour, as the README gives it: the wheel installed with ``uv tool install`` into a
clean HOME (no checkout, no virtual environment on PATH), ``mnemo setup`` for each real host, then
a headless session that remembers and one that recalls, through the MCP server and the hooks that
setup registered.

The wheel's dependencies are resolved as a user's install resolves them (not from uv.lock), from
the package index or uv's cache. The model is a scripted server (tests/host_servers.py).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_hosts import _host, _run
from tests.helpers import REPO
from tests.host_servers import CODEX_CONFIG, Block, ScriptedServer, Text, ToolCall, running, tool_results

DEPLOY = "We deploy on Thursdays because QA tests on Wednesday"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """A user's environment with mnemo installed from the wheel: HOME, PATH and nothing of ours."""
    uv = shutil.which("uv")
    assert uv, "uv is not on PATH (pip install uv)"
    root = tmp_path_factory.mktemp("user")
    cache = subprocess.run([uv, "cache", "dir"], capture_output=True, text=True, check=True).stdout.strip()
    built = subprocess.run(
        [uv, "build", "--wheel", "--out-dir", str(root / "dist"), str(REPO)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    [wheel] = (root / "dist").glob("*.whl")
    home = root / "home"
    home.mkdir()
    hosts = [str(_host("claude").parent)]
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MNEMO_", "UV_", "VIRTUAL_ENV", "PYTHON", "CLAUDE", "CODEX", "ANTHROPIC"))
    }
    env.update(
        HOME=str(home),
        UV_CACHE_DIR=cache,
        PATH=os.pathsep.join([*hosts, "/usr/local/bin", "/usr/bin", "/bin"]),
    )
    done = subprocess.run(
        [uv, "tool", "install", "--python", sys.executable, str(wheel)],
        env=env, cwd=root, capture_output=True, text=True, timeout=900, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    bin_dir = home / ".local" / "bin"
    assert (bin_dir / "mnemo").exists() and (bin_dir / "mnemo-mcp").exists(), done.stderr
    env["PATH"] = os.pathsep.join([str(bin_dir), env["PATH"]])
    try:
        yield env
    finally:
        subprocess.run(["mnemo", "daemon", "stop"], env=env, capture_output=True, timeout=60, check=False)


def _mnemo(env: dict[str, str], *args: str, cwd: Path) -> str:
    return _run(["mnemo", *args], env, cwd)


def _one_call(tool: str, arguments: dict[str, Any], answer: str) -> Any:
    """The model calls ``tool`` once, then answers ``answer`` followed by what the tool said."""

    def reply(body: dict[str, Any]) -> Block:
        if not body.get("tools"):
            return Text("ok")  # a side request (titles and the like)
        results = tool_results(body)
        if not results:
            return ToolCall(tool, arguments, id="call_mnemo")
        return Text(f"{answer} {results[-1]}")

    return reply


def _claude(
    env: dict[str, str], project: Path, prompt: str, reply: Any
) -> tuple[dict[str, Any], ScriptedServer]:
    server = ScriptedServer(reply)
    with running(server):
        out = _run(
            ["claude", "-p", prompt, "--model", "claude-sonnet-4-5", "--dangerously-skip-permissions",
             "--output-format", "json"],
            {**env, "ANTHROPIC_BASE_URL": server.url}, project,
        )  # fmt: skip
    return json.loads(out), server


def test_claude_code_installed_from_the_wheel_and_set_up_remembers_and_recalls(
    installed: dict[str, str], tmp_path: Path
) -> None:
    env = {
        **installed,
        "ANTHROPIC_API_KEY": "sk-test",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "IS_SANDBOX": "1",  # --dangerously-skip-permissions as root
        # `claude -p` does not wait for MCP servers; the first mnemo-mcp start has no start record
        # (docs/hooks.md#claude-code). The test is about the install, so Claude Code waits.
        "MCP_CONNECTION_NONBLOCKING": "0",
        "MCP_CONNECT_TIMEOUT_MS": "60000",
    }
    project = tmp_path / "shop"
    project.mkdir()
    out = _mnemo(env, "setup", "claude-code", cwd=project)
    assert "changed" in out and "hook SessionStart --client claude-code" in out
    assert "mnemo" in _run(["claude", "mcp", "list"], env, project)
    remembered, _ = _claude(
        env, project, "remember: we deploy on Thursdays",
        _one_call("mcp__mnemo__remember", {"content": DEPLOY, "type": "decision"}, "Done."),
    )  # fmt: skip
    assert "Remembered" in remembered["result"] and DEPLOY in remembered["result"], remembered
    recalled, server = _claude(
        env, project, "which day do we deploy?",
        _one_call("mcp__mnemo__recall", {"query": "which day do we deploy"}, "From memory:"),
    )  # fmt: skip
    assert DEPLOY in recalled["result"], recalled
    assert "mnemo-memory" in json.dumps(server.posted()[0]), "UserPromptSubmit added nothing"
    _check_recorded(env, project, recalled["session_id"], "claude-code")


def test_codex_installed_from_the_wheel_and_set_up_remembers_and_recalls(
    installed: dict[str, str], tmp_path: Path
) -> None:
    env = {**installed, "SCRIPTED_API_KEY": "sk-test"}
    project = tmp_path / "app"
    project.mkdir()
    config = Path(env["HOME"]) / ".codex" / "config.toml"
    config.parent.mkdir(exist_ok=True)
    answers = []
    for prompt, tool, arguments, answer in (
        (
            "remember: we deploy on Thursdays",
            "mcp__mnemo/remember",
            {"content": DEPLOY, "type": "decision"},
            "Done.",
        ),
        ("which day do we deploy?", "mcp__mnemo/recall", {"query": "which day do we deploy"}, "From memory:"),
    ):
        server = ScriptedServer(_one_call(tool, arguments, answer))
        with running(server):
            # The user's own config (their model provider) before setup adds mnemo's to it.
            config.write_text(CODEX_CONFIG.format(url=server.url))
            out = _mnemo(env, "setup", "codex", cwd=project)
            assert "changed" in out, out
            command = ["codex", "exec", "--skip-git-repo-check", "--json", "--dangerously-bypass-hook-trust",
                       "--dangerously-bypass-approvals-and-sandbox", prompt]  # fmt: skip
            events = [
                json.loads(line) for line in _run(command, env, project).splitlines() if line.startswith("{")
            ]
        [session] = [e["thread_id"] for e in events if e.get("type") == "thread.started"]
        items = [e["item"] for e in events if e.get("type") == "item.completed"]
        answers.append(([i["text"] for i in items if i.get("type") == "agent_message"][-1], session, server))
    assert "Remembered" in answers[0][0] and DEPLOY in answers[0][0], answers[0][0]
    assert DEPLOY in answers[1][0], answers[1][0]
    assert "mnemo-memory" in json.dumps(answers[1][2].posted()[0]), "UserPromptSubmit added nothing"
    _check_recorded(env, project, answers[1][1], "codex")


def _check_recorded(env: dict[str, str], project: Path, session: str, client: str) -> None:
    """The hooks recorded the recalling turn: the prompt and the answer (a call of mnemo's own
    tools is not an episode)."""
    found = json.loads(_mnemo(env, "recall-episode", "--session", session, "--json", cwd=project))
    kinds = [(e["kind"], e["client"]) for e in (hit["episode"] for hit in found["episodes"])]
    assert kinds == [("prompt", client), ("response", client)], kinds
    doctor = subprocess.run(
        ["mnemo", "doctor", "--json"], env=env, cwd=project, capture_output=True, text=True, check=False
    )
    said = [c for c in json.loads(doctor.stdout) if c["subject"] in (client, "mnemo-mcp")]
    # The other host may not be set up yet; the scripted model server is gone (a warning).
    assert "fail" not in {c["state"] for c in said}, said
    ok = [c["detail"] for c in said if c["state"] == "ok"]
    assert "hooks: every event" in ok and any(d.startswith("MCP server: ") for d in ok), said
