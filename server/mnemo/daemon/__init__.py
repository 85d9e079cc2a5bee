"""The daemon (sidecar): the one process that opens the store and serves every client.

- ``rundir``    the 0700 run directory, its file locks and pid file;
- ``service``   what the daemon does, independent of HTTP (append, remember, recall, forget …);
- ``app``       the Starlette HTTP+JSON API over the service;
- ``server``    the daemon process: store, uvicorn on the unix socket, idle exit.

Clients reach it through :mod:`mnemo.client`.
"""
