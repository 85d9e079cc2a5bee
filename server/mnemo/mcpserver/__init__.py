"""``mnemo-mcp``, the stdio MCP server an agent host starts.

- ``relay``  answers the host at once and relays its JSON-RPC lines, each read and checked first,
  to the MCP SDK while that loads (the host's stdio is the relay's);
- ``tools``  the tools (recall, remember, forget, keep, recall_episode) on the MCP SDK, each a call
  to the daemon.
"""
