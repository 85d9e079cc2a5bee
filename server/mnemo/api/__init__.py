"""What crosses the daemon's unix socket: the request and answer bodies of its HTTP API (the
domain models they carry are :mod:`mnemo.episodes` and :mod:`mnemo.memories`).

- ``recall``    recall's requests and results (also the MCP tools' structured output);
- ``memories``  forget;  ``episodes``  appends;  ``keep``  the kept sets;  ``review``  the queue;
- ``writer``    distil now, the judge's log;  ``status``  health and status;  ``stats``  usage.

This module itself imports nothing: the standard-library clients read the limit from it.
"""

MAX_BODY_BYTES = 64 * 1024 * 1024  # a request's body; past it, 413 before it is read whole
