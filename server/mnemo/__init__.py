"""mnemo: long-term memory for coding agents.

The package is split by what each module owns:

- ``config``       settings, read once from the TOML file and the environment;
- ``errors``       the one exception hierarchy;
- ``episodes``     what reaches mnemo, validated before it is stored;
- ``memories``     distilled or explicitly remembered knowledge;
- ``recall``       recall's requests and results (the engine is ``index``; models: ``embed``);
- ``store``        the only code that talks to ClickHouse (embedded chDB or a server);
- ``daemon``       the sidecar process that owns the store, its HTTP API, client and launcher;
- ``distill``      the writer's model work: extraction, the judge, the decision model;
- ``usage``        what hooks inject (budgets, sessions), the usage audit, stats;
- ``transcripts``  Claude Code and Codex transcripts read into turns;
- ``workspace``    the workspace namespace of a directory (git remote, else the repo root);
- ``importer``     JSONL and transcript import of episodes;
- ``paths``        where the files live (stdlib only: the hook process needs it);
- ``hook_process`` the hook process (``mnemo-mcp hook <event>``), stdlib only;
- ``entry``        ``mnemo-mcp``'s entry point: the hook or the MCP server;
- ``mcpserver``    the stdio MCP server (``mnemo-mcp``);
- ``cli``          the ``mnemo`` command.
"""

from __future__ import annotations


def __getattr__(name: str) -> str:
    # importlib.metadata is slow to import: only pay for it when the version is asked for, so
    # that the hook process (mnemo.hook_process) and the command start fast.
    if name != "__version__":
        raise AttributeError(f"module 'mnemo' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version  # noqa: PLC0415

    try:
        found = version("mnemo-mcp")
    except PackageNotFoundError:  # running from a source tree that was never installed
        found = "0.0.0+unknown"
    globals()["__version__"] = found
    return found
