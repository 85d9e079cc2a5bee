"""``mnemo-mcp``'s entry point: ``mnemo-mcp hook <Event>`` runs the hook process, anything else
the stdio MCP server. Kept tiny so that a hook does not import the MCP server's dependencies."""

from __future__ import annotations

import sys


def main() -> int:
    args = sys.argv[1:]
    if args[:1] == ["hook"]:
        from mnemo.hook_process import main as hook_main  # noqa: PLC0415 - the hook must start fast

        return hook_main(args[1:])
    if args in (["--version"], ["-V"]):
        from mnemo import __version__  # noqa: PLC0415

        sys.stderr.write(f"mnemo-mcp {__version__}\n")
        return 0
    if args:
        sys.stderr.write(
            "usage: mnemo-mcp [--version]  (serves MCP over stdio)\n"
            "       mnemo-mcp hook <Event> [--client claude-code|codex]  (a host's hook command)\n"
        )
        return 2
    # The relay answers the host while the MCP SDK, which it imports last, loads.
    from mnemo.mcpserver.relay import serve  # noqa: PLC0415

    return serve()
