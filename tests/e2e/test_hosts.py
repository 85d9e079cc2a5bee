"""End to end with the real hosts: Claude Code and Codex from npm, the repository installed as their
plugin (marketplace add + install, as a user does), run headless against scripted model servers.

The hosts come from ``MNEMO_TEST_HOSTS_DIR`` (default ``.hosts`` in the repository), where
``.ci/run`` installs them with npm. Without them these tests skip — unless
``MNEMO_TEST_REQUIRE_HOSTS=1`` (CI), where a missing host is a failure.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from mnemo.api.recall import RecallEpisodeRequest
from mnemo.client.launcher import stop_daemon
from mnemo.client.typed import DaemonClient
from tests.helpers import BIN, REPO, Home
from tests.host_servers import CODEX_CONFIG, Block, ScriptedServer, Text, ToolCall, running, tool_results

HOSTS = Path(os.environ.get("MNEMO_TEST_HOSTS_DIR") or REPO / ".hosts")
DEPLOY = "Deploys happen on Thursdays because QA tests on Wednesday"
MARKER = "deployed-marker-7f3a"


def _host(name: str) -> Path:
    path = HOSTS / "node_modules" / ".bin" / name
    if not path.exists():
        if os.environ.get("MNEMO_TEST_REQUIRE_HOSTS") == "1":
            pytest.fail(f"{name} is not installed under {HOSTS} (see .ci/run)")
        pytest.skip(f"{name} not installed under {HOSTS}: npm install --prefix {HOSTS} (see .ci/run)")
    return path


def _remember(home: Home, namespace: str) -> str:
    """Through the CLI, in the user's environment (it starts the daemon there)."""
    out = home.mnemo("remember", DEPLOY, "--type", "decision", "--namespace", namespace).stdout
    return out.split()[-1]


def _episodes(home: Home, session: str) -> list[Any]:
    async def run() -> list[Any]:
        async with DaemonClient(home.settings) as client:
            found = await client.recall_episodes(RecallEpisodeRequest(session=session, limit=50))
            return [hit.episode for hit in found.episodes]

    return anyio.run(run)


def _run(command: list[str], env: dict[str, str], cwd: Path, timeout: float = 180) -> str:
    done = subprocess.run(
        command,
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert done.returncode == 0, (
        f"{' '.join(command[:4])} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
    )
    return done.stdout


NOT_OFFERED = "mnemo's tools were not offered"


def _offered(body: dict[str, Any], tool: str) -> bool:
    namespace, _, name = tool.rpartition("/")
    for offered in body.get("tools", []):
        if offered.get("name") == (namespace or tool) and (
            not namespace or any(t.get("name") == name for t in offered.get("tools", []))
        ):
            return True
    return False


def _script(recall_tool: str, shell: ToolCall, memory_id: str) -> Any:
    def reply(body: dict[str, Any]) -> Block:
        if not body.get("tools"):
            return Text("ok")  # a side request (titles and the like)
        done = len(tool_results(body))
        if done == 0 and not _offered(body, recall_tool):
            return Text(NOT_OFFERED)
        if done == 0:
            return ToolCall(recall_tool, {"query": "which day do we deploy"}, id="call_recall")
        if done == 1:
            return shell
        return Text(f"We deploy on Thursdays, as decided [{memory_id}].")

    return reply


def _check_backfill(home: Home, source: str, transcripts_dir: Path, session: str) -> None:
    """Importing the host's own transcript of the session the hooks recorded adds nothing; into an
    empty store it gives the same episodes (ids, turns, texts) the hooks recorded."""
    [transcript] = transcripts_dir.rglob(
        f"*{session}.jsonl"
    )  # Claude: <id>.jsonl; Codex: rollout-…-<id>.jsonl
    transcripts_dir = transcript
    out = home.mnemo("import", "--from", source, str(transcripts_dir), "--quiet").stdout
    assert "0 new episodes, 3 already present, 0 errors" in out, out
    live = [(e.id, e.turn, e.kind, e.text) for e in _episodes(home, session)]
    fresh = Home(home.path, {**home.env, "MNEMO_HOME": str(home.path / "fresh")})
    try:
        out = fresh.mnemo("import", "--from", source, str(transcripts_dir), "--quiet").stdout
        assert "3 new episodes" in out, out
        imported = [(e.id, e.turn, e.kind, e.text) for e in _episodes(fresh, session)]
    finally:
        stop_daemon(fresh.settings)
    assert [i[:3] for i in imported] == [i[:3] for i in live]
    assert imported[0][3] == live[0][3] and imported[2][3] == live[2][3]  # the prompt, the answer
    assert MARKER in imported[1][3]


def _check_turn(home: Home, server: ScriptedServer, session: str, memory_id: str, client: str) -> None:
    first = json.dumps(server.posted()[0])
    assert "mnemo-memory" in first and memory_id in first, "the injected block did not reach the model"
    results = tool_results(server.posted()[-1])
    # What the model read of recall's answer: the memory's line, not the result's fields (both
    # hosts give the model a tool's structuredContent instead of its text when there is one).
    line = f"[{memory_id}] decision (workspace): {DEPLOY}"
    assert any(line in r for r in results), f"mnemo's recall tool did not answer its line: {results}"
    assert not any("valid_from" in r or "mnemo/result" in r for r in results), results
    episodes = _episodes(home, session)
    kinds = [(e.kind.value, e.client) for e in episodes]
    assert kinds == [("prompt", client), ("tool_result", client), ("response", client)], kinds
    assert MARKER in episodes[1].text, "PostToolUse did not record the shell's result"
    assert episodes[2].text == f"We deploy on Thursdays, as decided [{memory_id}]."
    hooks_log = home.settings.log_dir / "hooks.log"
    assert not hooks_log.exists(), hooks_log.read_text()


def test_claude_code_loads_the_plugin_and_its_hooks_record_inject_and_answer(
    home: Home, plugin_dir: Path
) -> None:
    claude = _host("claude")
    project = home.path / "project"
    project.mkdir()
    memory_id = _remember(home, f"workspace:{project}")
    env = {
        **home.env,
        "HOME": str(home.path / "claude-home"),
        "PATH": f"{BIN}:{os.environ['PATH']}",
        "ANTHROPIC_API_KEY": "sk-test",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "IS_SANDBOX": "1",  # --dangerously-skip-permissions as root
        # `claude -p` connects MCP servers without waiting for them: its first request goes out
        # with the tools of those already connected. This home's first mnemo-mcp start has no
        # start record and loads the MCP SDK (1.5-1.9 s here when quiet), which under CI's load
        # came after that request. The test is about the plugin's plumbing, so Claude Code waits
        # for the server, as long as a slow machine needs (docs/hooks.md says what users can do).
        "MCP_CONNECTION_NONBLOCKING": "0",
        "MCP_CONNECT_TIMEOUT_MS": "60000",
    }
    Path(env["HOME"]).mkdir()
    _run(
        [str(claude), "plugin", "validate", str(plugin_dir / ".claude-plugin" / "plugin.json")], env, project
    )
    _run([str(claude), "plugin", "marketplace", "add", str(plugin_dir)], env, project)
    _run([str(claude), "plugin", "install", "mnemo@mnemo"], env, project)
    listed = json.loads(_run([str(claude), "plugin", "list", "--json"], env, project))
    assert not any(p.get("errors") for p in listed), listed
    shell = ToolCall("Bash", {"command": f"echo {MARKER}", "description": "echo a marker"}, id="call_shell")
    server = ScriptedServer(_script("mcp__plugin_mnemo_mnemo__recall", shell, memory_id))
    with running(server):
        env["ANTHROPIC_BASE_URL"] = server.url
        out = _run(
            [str(claude), "-p", "which day do we deploy?", "--model", "claude-sonnet-4-5",
             "--dangerously-skip-permissions", "--output-format", "json"],
            env, project,
        )  # fmt: skip
    result = json.loads(out)
    assert result["result"] == f"We deploy on Thursdays, as decided [{memory_id}]."
    _check_turn(home, server, result["session_id"], memory_id, "claude-code")
    _check_backfill(home, "claude-code", Path(env["HOME"]) / ".claude" / "projects", result["session_id"])


def test_codex_loads_the_same_plugin_and_its_hooks_record_inject_and_answer(
    codex_user: Home, plugin_dir: Path
) -> None:
    codex = _host("codex")
    home = codex_user
    project = home.path / "project"
    project.mkdir()
    memory_id = _remember(home, f"workspace:{project}")
    codex_home = home.path / "codex-home"
    codex_home.mkdir()
    env = {
        **home.env,
        "CODEX_HOME": str(codex_home),
        "PATH": f"{BIN}:{os.environ['PATH']}",
        "SCRIPTED_API_KEY": "sk-test",
    }
    shell = ToolCall("exec_command", {"cmd": f"echo {MARKER}"}, id="call_shell")
    server = ScriptedServer(_script("mcp__mnemo/recall", shell, memory_id))
    with running(server):
        (codex_home / "config.toml").write_text(CODEX_CONFIG.format(url=server.url))
        _run([str(codex), "plugin", "marketplace", "add", str(plugin_dir)], env, project)
        _run([str(codex), "plugin", "add", "mnemo@mnemo"], env, project)
        command = [str(codex), "exec", "--skip-git-repo-check", "--json", "--dangerously-bypass-hook-trust",
                   "--dangerously-bypass-approvals-and-sandbox", "which day do we deploy?"]  # fmt: skip
        out = _run(command, env, project)
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    [session] = [e["thread_id"] for e in events if e.get("type") == "thread.started"]
    items = [e["item"] for e in events if e.get("type") == "item.completed"]
    answers = [item["text"] for item in items if item.get("type") == "agent_message"]
    assert answers[-1] == f"We deploy on Thursdays, as decided [{memory_id}]."
    _check_turn(home, server, session, memory_id, "codex")
    _check_backfill(home, "codex", codex_home / "sessions", session)
