"""``mnemo setup claude-code|codex``: mnemo's MCP server and hooks written into the hosts' own
files — idempotent, every other setting kept, shown as a diff, undone by ``--undo`` — and a file
it cannot read stops it with nothing written. The real hosts read what it writes in
tests/e2e/test_install.py."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from mnemo.cli import main
from mnemo.errors import ConfigError
from mnemo.hosts import claude, codex, hookspec, locate

MCP = "/opt/mnemo/bin/mnemo-mcp"
USER_HOOK = {"type": "command", "command": "~/bin/notify.sh", "timeout": 3}


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    monkeypatch.delenv("CODEX_HOME", raising=False)
    return {"HOME": str(home)}


def _setup(*args: str) -> int:
    return main(["setup", *args, "--command", MCP])


def _read(path: Path) -> dict[str, object]:
    return json.loads(path.read_text())


def test_claude_code_gets_the_server_and_every_hook_and_keeps_the_users_settings(
    env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    state, settings = claude.state_path(env), claude.settings_path(env)
    # As Claude Code writes them: two-space indents.
    state.write_text(
        json.dumps({"mcpServers": {"other": {"command": "other-mcp"}}, "userID": "u1"}, indent=2)
    )
    settings.parent.mkdir()
    settings.write_text(json.dumps({"model": "opus", "hooks": {"Stop": [{"hooks": [USER_HOOK]}]}}, indent=2))
    assert _setup("claude-code") == 0
    out = capsys.readouterr().out
    assert f'+      "command": "{MCP}",' in out and "changed" in out
    assert "u1" not in out and "opus" not in out  # only lines of mnemo's are shown
    written = _read(state)
    assert written["userID"] == "u1" and written["mcpServers"] == {
        "mnemo": {"type": "stdio", "command": MCP, "args": [], "env": {}},
        "other": {"command": "other-mcp"},
    }
    hooks = _read(settings)["hooks"]
    assert _read(settings)["model"] == "opus"
    assert hooks["Stop"][0] == {"hooks": [USER_HOOK]}  # theirs first, kept
    assert hooks["Stop"][1]["hooks"][0]["command"] == f"{MCP} hook Stop --client claude-code"
    assert claude.found(env).missing_hooks == [] and claude.found(env).server == [MCP]
    assert (state.parent / ".claude.json.before-mnemo").exists()
    before = (state.read_text(), settings.read_text())
    assert _setup("claude-code") == 0  # again: nothing to change
    assert "nothing to change" in capsys.readouterr().out
    assert (state.read_text(), settings.read_text()) == before


def test_claude_code_undo_takes_out_only_mnemos_entries(env: dict[str, str]) -> None:
    state, settings = claude.state_path(env), claude.settings_path(env)
    state.write_text(json.dumps({"mcpServers": {"other": {"command": "other-mcp"}}}))
    settings.parent.mkdir()
    settings.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [USER_HOOK]}]}}))
    assert _setup("claude-code") == 0
    assert main(["setup", "claude-code", "--undo"]) == 0
    assert _read(state) == {"mcpServers": {"other": {"command": "other-mcp"}}}
    assert _read(settings) == {"hooks": {"Stop": [{"hooks": [USER_HOOK]}]}}
    assert claude.found(env).server is None and claude.found(env).hooks == set()


def test_a_hook_group_shared_with_the_users_hook_keeps_theirs() -> None:
    ours = {"type": "command", "command": "'/a b/mnemo-mcp' hook Stop --client codex"}
    table = {"Stop": [{"hooks": [USER_HOOK, ours]}], "SessionEnd": [{"hooks": [ours]}]}
    assert hookspec.registered(table) == {"Stop", "SessionEnd"}
    assert hookspec.without_ours(table) == {"Stop": [{"hooks": [USER_HOOK]}]}


def test_claude_code_with_the_plugin_enabled_is_left_alone_unless_forced(
    env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    settings = claude.settings_path(env)
    settings.parent.mkdir()
    settings.write_text(json.dumps({"enabledPlugins": {"mnemo@mnemo": True}}))
    assert _setup("claude-code") == 0
    assert "plugin is enabled" in capsys.readouterr().out
    assert not claude.state_path(env).exists() and "hooks" not in _read(settings)
    assert _setup("claude-code", "--force") == 0
    assert claude.found(env).server == [MCP]


def test_a_file_that_is_not_json_stops_the_setup_of_every_host_with_nothing_written(
    env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    hooks = codex.hooks_path(env)
    hooks.parent.mkdir()
    hooks.write_text('{"hooks": {,}')
    assert _setup("claude-code", "codex") == 1
    err = capsys.readouterr().err
    assert str(hooks) in err and "not valid JSON (line 1" in err and "nothing was changed" in err
    assert hooks.read_text() == '{"hooks": {,}'
    assert not claude.state_path(env).exists() and not codex.config_path(env).exists()


CONFIGS = [
    "",
    'model = "gpt-5"\n\n[model_providers.local]\nbase_url = "http://127.0.0.1:8080/v1"\n',
    '# mine\nmodel = "o3"\n[projects."/src/app"]\ntrust_level = "trusted"\n',
]


@pytest.mark.parametrize("text", CONFIGS)
def test_codex_config_gets_a_marked_block_that_undo_removes_to_the_byte(
    env: dict[str, str], text: str
) -> None:
    config = codex.config_path(env)
    config.parent.mkdir()
    config.write_text(text)
    assert _setup("codex") == 0
    parsed = tomllib.loads(config.read_text())
    assert parsed["mcp_optional_startup_grace_ms"] == 0
    assert parsed["mcp_servers"]["mnemo"]["command"] == MCP
    assert parsed["mcp_servers"]["mnemo"]["default_tools_approval_mode"] == "approve"
    assert {k: v for k, v in parsed.items() if k not in ("mcp_servers", "mcp_optional_startup_grace_ms")} == (
        tomllib.loads(text)
    )
    assert codex.found(env).missing_hooks == []
    written = config.read_text()
    assert _setup("codex") == 0 and config.read_text() == written  # idempotent
    assert main(["setup", "codex", "--undo"]) == 0
    assert config.read_text() == text
    assert codex.found(env).server is None and codex.found(env).hooks == set()


def test_codex_keeps_a_server_and_a_start_grace_the_user_wrote(
    env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    config = codex.config_path(env)
    config.parent.mkdir()
    mine = 'mcp_optional_startup_grace_ms = 2000\n\n[mcp_servers.mnemo]\ncommand = "mnemo-mcp"\n'
    config.write_text(mine)
    assert _setup("codex") == 0
    assert "[mcp_servers.mnemo] of your own" in capsys.readouterr().out
    assert config.read_text() == mine  # only hooks.json changed
    assert codex.found(env).missing_hooks == []


def test_codex_config_that_is_not_toml_is_refused(
    env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    config = codex.config_path(env)
    config.parent.mkdir()
    config.write_text("model = \n")
    assert _setup("codex") == 1
    assert "not valid TOML" in capsys.readouterr().err and config.read_text() == "model = \n"
    assert not codex.hooks_path(env).exists()


def test_dry_run_shows_the_diff_and_writes_nothing(
    env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert _setup("claude-code", "codex", "--dry-run") == 0
    out = capsys.readouterr().out
    assert f'command = "{MCP}"' in out and "hook SessionStart --client codex" in out and "--dry-run" in out
    assert not any(Path(env["HOME"]).rglob("*"))


def test_the_command_is_the_mnemo_mcp_beside_this_mnemo_unless_uv_may_remove_it(tmp_path: Path) -> None:
    installed = tmp_path / "tools" / "mnemo-mcp" / "bin"
    installed.mkdir(parents=True)
    (installed / "mnemo-mcp").write_text("#!/bin/sh\n")
    assert locate.mnemo_mcp(str(installed / "python"), lambda _: None) == [str(installed / "mnemo-mcp")]
    cached = tmp_path / ".cache" / "uv" / "archive-v0" / "x1" / "bin"
    cached.mkdir(parents=True)
    (cached / "mnemo-mcp").write_text("#!/bin/sh\n")
    assert locate.mnemo_mcp(str(cached / "python"), lambda _: "/usr/local/bin/mnemo-mcp") == [
        "/usr/local/bin/mnemo-mcp"
    ]
    with pytest.raises(ConfigError, match="uv tool install mnemo-mcp"):
        locate.mnemo_mcp(str(cached / "python"), lambda _: None)


def test_claude_config_dir_moves_both_files(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path / "home"), "CLAUDE_CONFIG_DIR": str(tmp_path / "cfg")}
    assert claude.state_path(env) == tmp_path / "cfg" / ".claude.json"
    assert claude.settings_path(env) == tmp_path / "cfg" / "settings.json"
    assert codex.config_path({"CODEX_HOME": str(tmp_path / "cx")}) == tmp_path / "cx" / "config.toml"
