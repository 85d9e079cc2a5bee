"""``mnemo server init`` and ``mnemo server setup``: make a ClickHouse server ready for mnemo — the
database the store DSN names and mnemo's tables; then its users' access, enforced by the server —
before the first daemon starts on it."""

from __future__ import annotations

import argparse
import sys
from urllib.parse import urlsplit

from mnemo.cli.context import EXIT_OK, Context
from mnemo.cli.render import write
from mnemo.config import Settings
from mnemo.config_sources import redact_dsn
from mnemo.errors import InputError


def cmd_server(args: argparse.Namespace, context: Context) -> int:
    settings = context.settings()
    if settings.store.startswith("chdb://"):
        raise InputError(
            f"mnemo server {args.action} is for a ClickHouse server; the store is embedded "
            f"({redact_dsn(settings.store)}): one person's, created by the daemon, with nothing to share"
        )
    if args.action == "setup":
        return _setup(args, settings)
    if args.member or args.workspace or args.apply:
        raise InputError("--member, --workspace and --apply are for mnemo server setup")
    _init(settings)
    return EXIT_OK


def _init(settings: Settings) -> None:
    # Imported here: clickhouse-connect is the store's, which no daemon-bound command needs.
    from mnemo.store import open_store  # noqa: PLC0415
    from mnemo.store.server import ServerOptions, create_database  # noqa: PLC0415

    options = ServerOptions.from_settings(settings)
    database = create_database(settings.store, options)
    store = open_store(settings.store, options)  # migrates; idempotent with concurrent starts
    try:
        version, person = store.schema_version(), store.person
    finally:
        store.close()
    write(f"database {database} on {redact_dsn(settings.store)}: schema version {version}, you are {person}")


def _setup(args: argparse.Namespace, settings: Settings) -> int:
    from mnemo.store.access import (  # noqa: PLC0415
        AccessPlan,
        apply_statements,
        known_settings,
        parse_workspace_grants,
        setup_statements,
    )
    from mnemo.store.server import ServerOptions  # noqa: PLC0415

    plan = AccessPlan(
        database=urlsplit(settings.store).path.strip("/") or "default",
        members=tuple(dict.fromkeys(args.member)),
        workspaces=parse_workspace_grants(args.workspace),
        cluster=settings.store_cluster,
        writers=tuple(dict.fromkeys(args.writer)),
    )
    if not args.apply:
        write("\n".join(f"{statement};" for statement in setup_statements(plan)))
        return EXIT_OK
    _init(settings)  # the database and the tables the policies name
    options = ServerOptions.from_settings(settings)
    statements = setup_statements(plan, known_settings(settings.store, options))
    apply_statements(settings.store, options, statements, _applied)
    write(f"access set up on {redact_dsn(settings.store)}: {len(statements)} statements applied")
    return EXIT_OK


def _applied(statement: str) -> None:
    sys.stderr.write(f"applied: {statement[:100]}\n")
