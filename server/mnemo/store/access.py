"""Who may read what on a shared server, enforced by the server: the SQL of ``mnemo server setup``.

The daemon already scopes its own reads (:mod:`mnemo.store.connection`); this is the other half,
for a person holding their own credentials and a SQL client. One role, ``mnemo_member``, may
SELECT and INSERT in mnemo's database (no ALTER, no DROP: row policies mean nothing to a user who
can move partitions). Row policies on every table that holds a person's rows filter by
``currentUser()``, so one policy per table serves every member:

- memories, their staged commits and history, episodes, batches and the judge log by
  ``namespace``, the kept sets by ``owner``: the shared namespaces and the reader's own
  ``person:<user>``; a workspace named in ``--workspace ID=ana,ben`` only to those members;
- the hook sessions, injections and usage verdicts by their ``person``, the reader's own;
- the vectors by the memory or episode they embed, through the two policies above.

And of those rows, only the ones whose writer may write there (:mod:`mnemo.store.authorship`):
the server stamps every row with the user who inserted it, so a member with a SQL client who adds
a row to another person's namespace, or to a workspace not granted to them, adds a row no member
reads. The writer's user (``--writer``) is a member who reads and writes every workspace, the
granted ones included. The role's ``apply_row_policy_after_final = 0`` keeps the policies applied
before a memory's versions fold, so a forged newer version hides nothing.

Everyone else (the admin, other users) keeps reading every row: a table with a policy shows
nothing to a user no policy names, so a second one, ``USING 1``, is for all but the members.
Entity names, model spend, the lease and the schema version are not filtered.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from clickhouse_connect.driver.exceptions import ClickHouseError

from mnemo.config_sources import redact_dsn
from mnemo.episodes import NAME_CHARS
from mnemo.errors import InputError, StoreError
from mnemo.store.authorship import STAMPED_TABLES, quote_name, quote_text, written_condition
from mnemo.store.connection import explained, first_line, is_access_denied
from mnemo.store.server import ServerOptions, connect

MEMBER_ROLE = "mnemo_member"
_BY_PERSON = ("sessions", "injections", "usage_verdicts")
# Settings the role may not change: the policies apply before FINAL folds versions (a server
# without the setting always did), and no insert is flushed later, away from its user.
ROLE_SETTINGS = {"apply_row_policy_after_final": "0", "async_insert": "0"}
_DATABASE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
_USER = re.compile(f"{NAME_CHARS}{{1,64}}")


@dataclass(frozen=True, slots=True)
class AccessPlan:
    """What ``mnemo server setup`` makes: the database, the members (existing server users given
    the role), the workspaces readable only by some members, the cluster to run it on, and the
    writer's users (members who read and write every workspace)."""

    database: str
    members: tuple[str, ...] = ()
    workspaces: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    cluster: str = ""
    writers: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not _DATABASE.fullmatch(self.database):
            raise InputError(f"{self.database!r} is not a database name (letters, digits, _)")
        for user in (*self.members, *self.writers, *(u for us in self.workspaces.values() for u in us)):
            if not _USER.fullmatch(user):
                raise InputError(
                    f"{user!r} is not a server user mnemo can name (1 to 64 characters, no spaces)"
                )
        for workspace, users in self.workspaces.items():
            if not workspace or not users:
                raise InputError(f"--workspace {workspace}={','.join(users)}: give ID=USER[,USER…]")


def parse_workspace_grants(values: Sequence[str]) -> dict[str, tuple[str, ...]]:
    """``["shop=ana,ben", …]`` (the ``workspace:`` prefix optional) as {workspace id: users}."""
    grants: dict[str, tuple[str, ...]] = {}
    for value in values:
        workspace, _, users = value.rpartition("=")
        names = tuple(u.strip() for u in users.split(",") if u.strip())
        if not workspace or not names:
            raise InputError(f"--workspace {value!r}: give ID=USER[,USER…], e.g. github.com/shop/api=ana,ben")
        key = workspace.removeprefix("workspace:")
        grants[key] = grants.get(key, ()) + names
    return grants


def namespace_condition(
    column: str, workspaces: Mapping[str, tuple[str, ...]], writers: Sequence[str] = ()
) -> str:
    """Rows a member may read, by a namespace-valued column: not another person's, and a
    restricted workspace only for the members it is granted to and the writers."""
    own = f"{column} = concat('person:', currentUser())"
    shared = f"NOT startsWith({column}, 'person:')"
    if not workspaces:
        return f"{shared} OR {own}"
    restricted = ", ".join(quote_text(f"workspace:{w}") for w in sorted(workspaces))
    granted = " OR ".join(
        f"({column} = {quote_text(f'workspace:{w}')} AND currentUser() IN "
        f"({', '.join(quote_text(u) for u in sorted({*users, *writers}))}))"
        for w, users in sorted(workspaces.items())
    )
    return f"({shared} AND {column} NOT IN ({restricted})) OR {own} OR {granted}"


# The hook tables' person column holds the person's namespace, ``person:<name>``.
PERSON_CONDITION = "person = concat('person:', currentUser())"


def embedding_condition(database: str) -> str:
    """A vector may be read by whoever may read the memory or episode it embeds (their own
    policies apply inside the subqueries)."""
    db = quote_name(database)
    return f"owner IN (SELECT id FROM {db}.memories) OR owner IN (SELECT id FROM {db}.episodes)"


def read_condition(table: str, plan: AccessPlan) -> str:
    """The row policy of ``table`` for a member: what they may read, of the rows whose writer
    may write there (the vectors: those of the memories and episodes they may read)."""
    if table == "embeddings":
        return embedding_condition(plan.database)
    column = STAMPED_TABLES[table]
    readable = (
        PERSON_CONDITION
        if table in _BY_PERSON
        else namespace_condition(column, plan.workspaces, plan.writers)
    )
    return f"({readable}) AND {written_condition(column, plan.workspaces, plan.writers)}"


def setup_statements(plan: AccessPlan, settings: Sequence[str] | None = None) -> list[str]:
    """The SQL, in order, that an admin runs to make the server enforce mnemo's isolation.
    ``settings``: the names the server knows (None: all of :data:`ROLE_SETTINGS`, for a server
    new enough to know them); the role is held to those it knows."""
    db, role = quote_name(plan.database), quote_name(MEMBER_ROLE)
    cluster = f" ON CLUSTER {quote_name(plan.cluster)}" if plan.cluster else ""
    out = [
        f"CREATE DATABASE IF NOT EXISTS {db}{cluster}",
        f"CREATE ROLE IF NOT EXISTS {role}{cluster}",
        f"GRANT{cluster} SELECT, INSERT ON {db}.* TO {role}",
    ]
    users = tuple(dict.fromkeys((*plan.members, *plan.writers)))
    if users:
        out.append(f"GRANT{cluster} {role} TO {', '.join(quote_name(u) for u in users)}")
    held = [f"{n} = {v} CONST" for n, v in ROLE_SETTINGS.items() if settings is None or n in settings]
    if held:
        out.append(
            f"CREATE SETTINGS PROFILE OR REPLACE mnemo_member{cluster} SETTINGS {', '.join(held)} TO {role}"
        )
    for table in (*STAMPED_TABLES, "embeddings"):
        condition = read_condition(table, plan)
        target = f"{db}.{quote_name(table)}"
        out.append(
            f"CREATE ROW POLICY OR REPLACE mnemo_member{cluster} ON {target} USING {condition} TO {role}"
        )
        out.append(
            f"CREATE ROW POLICY OR REPLACE mnemo_others{cluster} ON {target} USING 1 TO ALL EXCEPT {role}"
        )
    return out


def known_settings(dsn: str, options: ServerOptions) -> list[str]:
    """Which of :data:`ROLE_SETTINGS` the server knows (an older one lacks some)."""
    try:
        client = connect(dsn, options)
    except ClickHouseError as exc:
        raise StoreError(f"cannot reach the server {redact_dsn(dsn)}: {explained(exc)}") from None
    try:
        rows = client.query(
            "SELECT name FROM system.settings WHERE name IN {names:Array(String)}",
            parameters={"names": list(ROLE_SETTINGS)},
        ).result_rows
    except ClickHouseError as exc:
        raise StoreError(f"the server refused reading its settings: {explained(exc)}") from None
    finally:
        client.close()
    return [str(row[0]) for row in rows]


def apply_statements(
    dsn: str, options: ServerOptions, statements: Sequence[str], done: Callable[[str], None]
) -> None:
    """Run ``statements`` in order as the DSN's user (an admin), calling ``done`` after each. The
    first one the server refuses stops it with an error naming the statement and what was missing."""
    try:
        client = connect(dsn, options)
    except ClickHouseError as exc:
        raise StoreError(f"cannot reach the server {redact_dsn(dsn)}: {explained(exc)}") from None
    try:
        _apply(client, statements, done)
    finally:
        client.close()


def _apply(client: Any, statements: Sequence[str], done: Callable[[str], None]) -> None:
    for number, statement in enumerate(statements, 1):
        try:
            client.command(statement)
        except ClickHouseError as exc:
            message = first_line(exc)
            where = f"statement {number} of {len(statements)} ({statement[:70]}…)"
            if is_access_denied(message):
                raise StoreError(
                    f"the server refused {where}: {message} — run `mnemo server setup --apply` as a user "
                    "with access management (an admin), or give the SQL it prints to one"
                ) from None
            raise StoreError(f"the server refused {where}: {message}") from None
        done(statement)
