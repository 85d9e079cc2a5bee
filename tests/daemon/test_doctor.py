"""``mnemo doctor``: what a host lacks to run mnemo — mnemo-mcp, the server and hooks (by setup
or the plugin, not both), a version mnemo was tested with, a model server with room for the
host's first request.

The hosts here are stand-ins: scripts named ``claude`` and ``codex`` that print a version (the
real binaries are in tests/e2e/test_install.py). The model server is the scripted one, answering
llama.cpp's ``/props`` over real HTTP.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from mnemo.cli import main
from mnemo.hosts import claude, codex, doctor
from tests.llm_server import running_llm_server


def _bin(directory: Path, name: str, version: str) -> None:
    path = directory / name
    path.write_text(f"#!/bin/sh\necho '{version}'\n")
    path.chmod(0o755)


@pytest.fixture
def world(tmp_path: Path) -> tuple[dict[str, str], Path]:
    home, bin_dir = tmp_path / "home", tmp_path / "bin"
    home.mkdir()
    bin_dir.mkdir()
    _bin(bin_dir, "mnemo-mcp", "mnemo-mcp 0.1.0")
    return {"HOME": str(home)}, bin_dir


def _checks(env: dict[str, str], bin_dir: Path) -> list[doctor.Check]:
    return doctor.checks(env, lambda name: shutil.which(name, path=str(bin_dir)))


def _said(found: list[doctor.Check], host: str) -> list[tuple[str, str]]:
    return [(c.state, c.detail) for c in found if c.subject == host]


def test_a_host_not_installed_is_skipped_and_one_not_set_up_is_told_how(
    world: tuple[dict[str, str], Path],
) -> None:
    env, bin_dir = world
    _bin(bin_dir, "codex", "codex-cli 0.171.0")
    found = _checks(env, bin_dir)
    assert found[0].state == "ok" and found[0].subject == "mnemo-mcp"
    assert _said(found, "claude-code") == [("skip", "`claude` is not on PATH")]
    codex_says = [c for c in found if c.subject == "codex"]
    assert [c.state for c in codex_says] == ["ok", "fail", "fail"]
    assert {c.fix for c in codex_says[1:]} == {"mnemo setup codex"}


def test_a_host_set_up_with_an_old_version_and_a_removed_command(world: tuple[dict[str, str], Path]) -> None:
    env, bin_dir = world
    _bin(bin_dir, "claude", "2.0.1 (Claude Code)")
    state = claude.state_path(env)
    state.write_text(json.dumps({"mcpServers": {"mnemo": {"command": "/gone/mnemo-mcp", "args": []}}}))
    found = _said(_checks(env, bin_dir), "claude-code")
    assert found[0][0] == "warn" and "older than 2.1.197" in found[0][1]
    assert ("fail", "the MCP server's command /gone/mnemo-mcp does not exist") in found


def test_the_plugin_and_setup_both_registered_is_a_warning_to_undo_one(
    world: tuple[dict[str, str], Path],
) -> None:
    env, bin_dir = world
    _bin(bin_dir, "codex", "codex-cli 0.171.0")
    home = codex.codex_home(env)
    home.mkdir()
    (home / "config.toml").write_text('[plugins."mnemo@mnemo"]\nenabled = true\n')
    assert _said(_checks(env, bin_dir), "codex")[1] == ("ok", "the mnemo plugin: MCP server and hooks")
    plan = codex.plan(env, [str(bin_dir / "mnemo-mcp")], force=True)
    for change in plan.changes:
        change.write()
    [both] = [c for c in _checks(env, bin_dir) if c.subject == "codex" and c.state == "warn"]
    assert "every hook runs twice" in both.detail and both.fix == "mnemo setup codex --undo"
    (bin_dir / "mnemo-mcp").unlink()
    for change in codex.plan(env, [], undo=True).changes:
        change.write()
    assert ("fail", "the mnemo plugin runs mnemo-mcp from PATH, and there is none") in _said(
        _checks(env, bin_dir), "codex"
    )


def test_a_model_server_with_too_small_a_context_for_the_host_is_named(
    world: tuple[dict[str, str], Path],
) -> None:
    env, bin_dir = world
    _bin(bin_dir, "claude", "2.1.197 (Claude Code)")
    _bin(bin_dir, "codex", "codex-cli 0.171.0")
    with running_llm_server() as server:
        server.serve_json("/props", {"default_generation_settings": {"n_ctx": 8192}})
        home = codex.codex_home(env)
        home.mkdir()
        (home / "config.toml").write_text(
            f'model = "qwen"\nmodel_provider = "local"\n[model_providers.local]\nbase_url = "{server.url}"\n'
        )
        found = _checks({**env, "ANTHROPIC_BASE_URL": server.url.removesuffix("/v1")}, bin_dir)
    claude_model = [c for c in found if c.subject == "claude-code" and "context" in c.detail]
    codex_model = [c for c in found if c.subject == "codex" and "context" in c.detail]
    assert claude_model[0].state == "warn", found
    assert "first request is about 22100" in claude_model[0].detail
    assert "--tools ''" in claude_model[0].fix
    assert codex_model[0].state == "warn" and "a session soon outgrows it" in codex_model[0].detail


def test_doctor_exits_1_when_something_fails_and_prints_json(
    world: tuple[dict[str, str], Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    env, bin_dir = world
    _bin(bin_dir, "codex", "codex-cli 0.171.0")
    monkeypatch.setenv("HOME", env["HOME"])
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    assert main(["doctor", "--json"]) == 1
    said = json.loads(capsys.readouterr().out)
    assert {"subject": "codex", "state": "fail", "detail": "mnemo's MCP server is not registered",
            "fix": "mnemo setup codex"} in said  # fmt: skip
    assert main(["setup", "codex", "--command", str(bin_dir / "mnemo-mcp")]) == 0
    capsys.readouterr()
    assert main(["doctor"]) == 0
    assert "FAIL" not in capsys.readouterr().out
