"""What mnemo adds to the hosts' own settings — Claude Code's and Codex's MCP server entry and
hooks — and what it finds there: ``mnemo setup`` and ``mnemo doctor``.

Standard library only, and nothing here talks to the daemon: it reads and writes the hosts' files
and runs their ``--version``.
"""
