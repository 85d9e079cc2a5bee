"""mnemo: long-term memory for coding agents.

The package is split by what each module owns:

- ``config``       settings, read once from the TOML file and the environment;
- ``errors``       the one exception hierarchy;
- ``episodes``     what reaches mnemo, validated before it is stored;
- ``memories``     distilled or explicitly remembered knowledge;
- ``recall``       the query side: simple lexical ranking (the in-RAM engine comes later);
- ``store``        the only code that talks to ClickHouse (embedded chDB or a server);
- ``daemon``       the sidecar process that owns the store, its HTTP API, client and launcher;
- ``importer``     JSONL import of episodes;
- ``mcpserver``    the stdio MCP server (``mnemo-mcp``);
- ``cli``          the ``mnemo`` command.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("mnemo-mcp")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"
