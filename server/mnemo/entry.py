"""``mnemo-mcp``'s entry point: ``mnemo-mcp hook <Event>`` runs the hook process, anything else
the stdio MCP server. Kept tiny so that a hook does not import the MCP server's dependencies."""

from __future__ import annotations

import sys


def main() -> int:
    args = sys.argv[1:]
    if args[:1] == ["hook"]:
        from mnemo.hook import main as hook_main  # noqa: PLC0415 - the hook must start fast

        return hook_main(args[1:])
    if args:  # --version, usage
        from mnemo.mcpserver import main as server_main  # noqa: PLC0415 - heavy; not for hooks

        return server_main(args)
    # Not through mcpserver.main: the relay answers the host while the SDK it imports loads.
    from mnemo.mcpstart import serve  # noqa: PLC0415

    return serve()
