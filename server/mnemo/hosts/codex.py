"""Codex's files, under ``CODEX_HOME`` (``~/.codex``): the MCP server in ``config.toml`` and the
hooks in ``hooks.json``.

``config.toml`` is edited as text, so that its comments and layout stay as the user wrote them:
what mnemo adds is a marked block (``# >>> mnemo`` … ``# <<< mnemo``), which ``--undo`` removes.
``mcp_optional_startup_grace_ms = 0`` goes at the top, as a top-level key must: Codex (0.147+)
runs a turn without the tools of an MCP server not started within about a second, which
mnemo-mcp's first start can exceed ([hooks.md](../../../docs/hooks.md#codex)).
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mnemo.errors import ConfigError
from mnemo.hosts import hookspec
from mnemo.hosts.edits import FileChange, json_change, parse_json, read_text
from mnemo.hosts.found import Found, Plan, plugin_note, server_command

NAME = "codex"
BEGIN = "# >>> mnemo (added by `mnemo setup codex`; `mnemo setup codex --undo` removes it)"
END = "# <<< mnemo"
GRACE = "mcp_optional_startup_grace_ms"


def codex_home(env: Mapping[str, str]) -> Path:
    configured = env.get("CODEX_HOME")
    return Path(configured) if configured else Path(env.get("HOME") or Path.home()) / ".codex"


def config_path(env: Mapping[str, str]) -> Path:
    return codex_home(env) / "config.toml"


def hooks_path(env: Mapping[str, str]) -> Path:
    return codex_home(env) / "hooks.json"


def parse_toml(path: Path, text: str | None) -> dict[str, Any]:
    try:
        return tomllib.loads(text or "")
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"{path} is not valid TOML ({exc}); fix it and run this again: nothing was changed"
        ) from exc


def without_ours(text: str) -> str:
    """``config.toml``'s text with mnemo's blocks taken out, and the blank line each brought (the
    one after a block at the top, the one before any other). A block with no end is not ours."""
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    index = 0
    while index < len(lines):
        end = _block_end(lines, index)
        if end is None:
            out.append(lines[index])
            index += 1
            continue
        index = end + 1
        if not out:
            index += 1 if index < len(lines) and not lines[index].strip() else 0
        elif not out[-1].strip():
            out.pop()
    return "".join(out)


def _block_end(lines: list[str], start: int) -> int | None:
    if lines[start].rstrip("\r\n") != BEGIN:
        return None
    for index in range(start + 1, len(lines)):
        if lines[index].rstrip("\r\n") == END:
            return index
    return None


def _toml_string(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)  # a TOML basic string: JSON's escapes are TOML's


def _server_block(argv: list[str]) -> str:
    args = ", ".join(_toml_string(a) for a in argv[1:])
    return "\n".join(
        [
            BEGIN,
            "[mcp_servers.mnemo]",
            f"command = {_toml_string(argv[0])}",
            f"args = [{args}]",
            "# The first call may start the mnemo daemon: more than Codex's default 10 s on a cold machine.",
            "startup_timeout_sec = 60",
            "tool_timeout_sec = 60",
            "# `codex exec` refuses MCP calls that need approval; mnemo's tools only read or write memory.",
            'default_tools_approval_mode = "approve"',
            END,
            "",
        ]
    )


def _plugin_enabled(config: dict[str, Any]) -> bool:
    plugins = config.get("plugins") or {}
    return any(
        str(k).startswith("mnemo@") and isinstance(v, dict) and v.get("enabled", True)
        for k, v in plugins.items()
    )


def found(env: Mapping[str, str]) -> Found:
    config = parse_toml(config_path(env), read_text(config_path(env)))
    server = (config.get("mcp_servers") or {}).get("mnemo")
    hooks = parse_json(hooks_path(env), read_text(hooks_path(env)))
    return Found(
        host=NAME,
        server=server_command(server),
        hooks=hookspec.registered(hooks.get("hooks")),
        plugin=_plugin_enabled(config),
    )


def _config_change(path: Path, text: str | None, argv: list[str], undo: bool, notes: list[str]) -> FileChange:
    base = without_ours(text or "")
    config = parse_toml(path, base)
    if undo:
        return FileChange(path, text, base if text is not None else "")
    top = "" if GRACE in config else f"{BEGIN}\n{GRACE} = 0\n{END}\n\n"
    tail = ""
    if "mnemo" in (config.get("mcp_servers") or {}):
        notes.append(f"an [mcp_servers.mnemo] of your own in {path} is left as it is")
    else:
        tail = ("\n" if base.strip() else "") + _server_block(argv)
    if base and not base.endswith("\n"):
        base += "\n"
    after = top + base + tail
    parse_toml(path, after)  # what is written must read back
    return FileChange(path, text, after)


def plan(env: Mapping[str, str], argv: list[str], *, undo: bool = False, force: bool = False) -> Plan:
    """What ``mnemo setup codex`` changes: the MCP server running ``argv`` (and the start grace)
    in ``config.toml``, the hooks in ``hooks.json`` — or, with ``undo``, mnemo's taken out."""
    config_file, hooks_file = config_path(env), hooks_path(env)
    config_text, hooks_text = read_text(config_file), read_text(hooks_file)
    hooks = parse_json(hooks_file, hooks_text)
    if not undo and not force and _plugin_enabled(parse_toml(config_file, config_text)):
        return Plan(NAME, [], [plugin_note("Codex", "codex plugin remove mnemo@mnemo")])
    notes: list[str] = []
    config = _config_change(config_file, config_text, argv, undo, notes)
    new_hooks = hookspec.in_settings(hooks, None if undo else hookspec.shell_command(argv), NAME)
    changes = [config, json_change(hooks_file, hooks_text, new_hooks)]
    if not undo and changes[1].changes:
        notes.append(
            "Codex runs these hooks once they are trusted: its TUI asks at the next start "
            "(a headless `codex exec` needs --dangerously-bypass-hook-trust)"
        )
    return Plan(NAME, [c for c in changes if c.changes], notes)
