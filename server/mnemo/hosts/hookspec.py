"""The hooks a host runs for mnemo, in one place: the plugin's ``hooks/hooks.json``, the configs
for users without the plugin (``configs/``) and what ``mnemo setup`` writes are this table
(a unit test holds the files equal to it).

Every hook is one shell string, ``<command> hook <Event>``: Codex substitutes
``${CLAUDE_PLUGIN_ROOT}`` in hook commands but not in MCP server commands, so both name the
command itself.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from mnemo.hosts.edits import with_key

# (event, the host's timeout in seconds, the tools it runs for). The timeouts leave the hook
# process room around the daemon's own deadlines (mnemo.hook_process.DEADLINES_S).
EVENTS: tuple[tuple[str, int, str | None], ...] = (
    ("SessionStart", 10, None),
    ("UserPromptSubmit", 10, None),
    ("PreToolUse", 5, "mcp__.*mnemo.*__(remember|forget|keep)"),
    ("PostToolUse", 5, None),
    ("Stop", 5, None),
    ("PreCompact", 5, None),
    ("SessionEnd", 2, None),
)
COMMAND = "mnemo-mcp"
# A hook command of mnemo's, however its command was written: bare, a path, quoted, or `uvx mnemo-mcp`.
_OURS = re.compile(r"""mnemo-mcp['"]?\s+hook\s""")


def hooks(command: str = COMMAND, client: str | None = None) -> dict[str, list[dict[str, Any]]]:
    """The ``hooks`` table: each event's one group running ``command``'s hook. ``client`` is
    passed as ``--client`` where nothing tells the host (outside the plugin)."""
    suffix = f" --client {client}" if client else ""
    table: dict[str, list[dict[str, Any]]] = {}
    for event, timeout_s, matcher in EVENTS:
        hook = {"type": "command", "command": f"{command} hook {event}{suffix}", "timeout": timeout_s}
        group: dict[str, Any] = {"matcher": matcher} if matcher else {}
        table[event] = [{**group, "hooks": [hook]}]
    return table


def shell_command(argv: list[str]) -> str:
    """``argv`` as a shell string, for a hook's command."""
    return shlex.join(argv)


def is_ours(hook: object) -> bool:
    """Whether a hook entry runs mnemo's hook process."""
    return isinstance(hook, dict) and bool(_OURS.search(str(hook.get("command", ""))))


def without_ours(table: object) -> dict[str, Any]:
    """A host's ``hooks`` table with mnemo's hooks taken out, and the groups and events they
    leave empty; every other hook kept as it was."""
    if not isinstance(table, dict):
        return {}
    kept: dict[str, Any] = {}
    for event, groups in table.items():
        if not isinstance(groups, list):
            kept[event] = groups
            continue
        left = []
        for group in groups:
            inner = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(inner, list) or not any(is_ours(h) for h in inner):
                left.append(group)
            elif others := [h for h in inner if not is_ours(h)]:
                left.append({**group, "hooks": others})
        if left:
            kept[event] = left
    return kept


def with_ours(table: object, command: str, client: str) -> dict[str, Any]:
    """A host's ``hooks`` table with mnemo's hooks in it once, after the host's own."""
    merged = without_ours(table)
    for event, groups in hooks(command, client).items():
        merged[event] = [*merged.get(event, []), *groups]
    return merged


def in_settings(data: dict[str, Any], command: str | None, client: str) -> dict[str, Any]:
    """A host's settings object (Claude Code's ``settings.json``, Codex's ``hooks.json``) with
    mnemo's hooks running ``command`` — or, with None, taken out — and all else kept."""
    current = data.get("hooks")
    table = without_ours(current) if command is None else with_ours(current, command, client)
    return with_key(data, "hooks", table) if table else {k: v for k, v in data.items() if k != "hooks"}


def registered(table: object) -> set[str]:
    """The events a host's ``hooks`` table runs mnemo's hook for."""
    if not isinstance(table, dict):
        return set()
    return {
        event
        for event, groups in table.items()
        if isinstance(groups, list)
        for group in groups
        if isinstance(group, dict)
        and isinstance(group.get("hooks"), list)
        and any(is_ours(h) for h in group["hooks"])
    }
