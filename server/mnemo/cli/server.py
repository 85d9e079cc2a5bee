"""``mnemo server init``: make a ClickHouse server ready for mnemo — the database the store DSN
names, and mnemo's tables — before the first daemon starts on it."""

from __future__ import annotations

import argparse

from mnemo.cli.context import EXIT_OK, Context
from mnemo.cli.render import write
from mnemo.config_sources import redact_dsn
from mnemo.errors import InputError


def cmd_server(args: argparse.Namespace, context: Context) -> int:
    # Imported here: clickhouse-connect is the store's, which no daemon-bound command needs.
    from mnemo.store import open_store  # noqa: PLC0415
    from mnemo.store.server import ServerOptions, create_database  # noqa: PLC0415

    settings = context.settings()
    if settings.store.startswith("chdb://"):
        raise InputError(
            "mnemo server init is for a ClickHouse server; the store is embedded "
            f"({redact_dsn(settings.store)}) and is created by the daemon"
        )
    options = ServerOptions.from_settings(settings)
    database = create_database(settings.store, options)
    store = open_store(settings.store, options)  # migrates; idempotent with concurrent starts
    try:
        version, person = store.schema_version(), store.person
    finally:
        store.close()
    write(f"database {database} on {redact_dsn(settings.store)}: schema version {version}, you are {person}")
    return EXIT_OK
