"""Claude Code's files: the user-scope MCP server in ``~/.claude.json`` (where ``claude mcp add
--scope user`` writes it) and the hooks in ``~/.claude/settings.json``; both under
``CLAUDE_CONFIG_DIR`` when it is set."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mnemo.hosts import hookspec
from mnemo.hosts.edits import json_change, parse_json, read_text, with_key
from mnemo.hosts.found import Found, Plan, plugin_note, server_command

NAME = "claude-code"
SERVER = "mnemo"


def _home(env: Mapping[str, str]) -> Path:
    return Path(env.get("HOME") or Path.home())


def settings_path(env: Mapping[str, str]) -> Path:
    configured = env.get("CLAUDE_CONFIG_DIR")
    return (Path(configured) if configured else _home(env) / ".claude") / "settings.json"


def state_path(env: Mapping[str, str]) -> Path:
    configured = env.get("CLAUDE_CONFIG_DIR")
    return Path(configured) / ".claude.json" if configured else _home(env) / ".claude.json"


def _plugin_enabled(settings: dict[str, Any]) -> bool:
    return any(str(k).startswith("mnemo@") and v for k, v in (settings.get("enabledPlugins") or {}).items())


def found(env: Mapping[str, str]) -> Found:
    settings = parse_json(settings_path(env), read_text(settings_path(env)))
    state = parse_json(state_path(env), read_text(state_path(env)))
    server = (state.get("mcpServers") or {}).get(SERVER)
    return Found(
        host=NAME,
        server=server_command(server),
        hooks=hookspec.registered(settings.get("hooks")),
        plugin=_plugin_enabled(settings),
    )


def plan(env: Mapping[str, str], argv: list[str], *, undo: bool = False, force: bool = False) -> Plan:
    """What ``mnemo setup claude-code`` changes: the MCP server running ``argv`` and the hooks
    running it — or, with ``undo``, mnemo's entries taken out, every other setting kept."""
    settings_file, state_file = settings_path(env), state_path(env)
    settings_text, state_text = read_text(settings_file), read_text(state_file)
    settings, state = parse_json(settings_file, settings_text), parse_json(state_file, state_text)
    notes: list[str] = []
    if not undo and not force and _plugin_enabled(settings):
        return Plan(NAME, [], [plugin_note("Claude Code", "claude plugin uninstall mnemo@mnemo")])
    servers: dict[str, Any] = dict(state.get("mcpServers") or {})
    existing = servers.get(SERVER)
    if existing is not None and server_command(existing) is None:
        notes.append(f"an MCP server named {SERVER!r} that does not run mnemo-mcp is left as it is")
    elif undo:
        servers.pop(SERVER, None)
    else:
        servers = with_key(
            servers, SERVER, {"type": "stdio", "command": argv[0], "args": argv[1:], "env": {}}
        )
    new_state = with_key(state, "mcpServers", servers) if servers or "mcpServers" in state else state
    new_settings = hookspec.in_settings(settings, None if undo else hookspec.shell_command(argv), NAME)
    changes = [
        json_change(state_file, state_text, new_state),
        json_change(settings_file, settings_text, new_settings),
    ]
    return Plan(NAME, [c for c in changes if c.changes], notes)
