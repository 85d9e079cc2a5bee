"""The daemon (sidecar): the one process that opens the store and serves every client.

- ``rundir``    the 0700 run directory, its file locks and pid file;
- ``service``   what the daemon does, independent of HTTP (append, remember, recall, forget …);
- ``app``       the Starlette HTTP+JSON API over the service;
- ``server``    the daemon process: store, uvicorn on the unix socket, idle exit;
- ``launcher``  start on demand (exactly one), stop, status — used by every client;
- ``client``    the async HTTP client over the unix socket that the MCP server and CLI use.
"""
