"""What a host's files say about mnemo, and a setup's plan: the same shape for every host."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from mnemo.hosts import hookspec
from mnemo.hosts.edits import FileChange

ALL_EVENTS = frozenset(event for event, _, _ in hookspec.EVENTS)


@dataclass(frozen=True, slots=True)
class Found:
    host: str
    server: list[str] | None  # the command line of mnemo's MCP server entry, if there is one
    hooks: set[str]  # the events a hook of mnemo's runs for
    plugin: bool  # the mnemo plugin is installed and enabled

    @property
    def missing_hooks(self) -> list[str]:
        return [event for event, _, _ in hookspec.EVENTS if event not in self.hooks]


@dataclass(frozen=True, slots=True)
class Plan:
    host: str
    changes: list[FileChange]
    notes: list[str] = field(default_factory=list)


def plugin_note(host: str, uninstall: str) -> str:
    return (
        f"the mnemo plugin is enabled in {host}: it brings the MCP server and the hooks already, "
        f"and registering them too would run every hook twice. Nothing changed (--force registers "
        f"them anyway; `{uninstall}` removes the plugin)"
    )


def server_command(server: object) -> list[str] | None:
    """The command line of an MCP server entry that runs mnemo-mcp; None for any other."""
    if not isinstance(server, dict):
        return None
    words = [str(server.get("command", "")), *map(str, server.get("args") or [])]
    return words if any(Path(word).name == hookspec.COMMAND for word in words) else None
