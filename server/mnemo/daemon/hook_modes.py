"""The permission mode each host last reported: in plan mode mnemo does not write."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import anyio

# A host's reported permission mode counts this long (a pid is reused, eventually).
MODE_TTL_S = 12 * 3_600.0


class HostModes:
    def __init__(self) -> None:
        self._modes: dict[int, tuple[str, float]] = {}  # host pid → (permission mode, when)

    def note_mode(self, host: int, payload: Mapping[str, Any]) -> None:
        """Remember the permission mode the host reported (every hook input carries it)."""
        mode = payload.get("permission_mode")
        if isinstance(mode, str) and host > 1:
            self._modes[host] = (mode, anyio.current_time())

    def is_plan_mode(self, host: int | None) -> bool:
        """Whether the host (a Claude Code or Codex process: its MCP server's parent) last
        reported plan mode, within the last MODE_TTL_S."""
        if host is None:
            return False
        mode, at = self._modes.get(host, ("", 0.0))
        return mode == "plan" and anyio.current_time() - at < MODE_TTL_S
