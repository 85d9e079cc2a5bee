"""How every client reaches the daemon.

- ``http``      HTTP/1.1 over the unix socket, standard library only: the one transport;
- ``spawn``     the one way the daemon is started, detached, with the resolved settings;
- ``launcher``  start on demand (exactly one), stop, ask whether it runs;
- ``policy``    the daemon's health read, and whether a failed request is sent again;
- ``typed``     the async client with pydantic models in and out (mnemo-mcp, the importer);
- ``plain``     the synchronous JSON client of the ``mnemo`` command, which starts in milliseconds.
"""
