"""The SQL of ``mnemo server setup`` against the real ClickHouse engine (chDB).

chDB has no users, so the policies cannot be enforced here. What the engine can show is shown:
every statement parses (``EXPLAIN AST``, the server's own parser), the cluster reaches every
statement (``formatQuery``), and each policy's condition, with ``currentUser()`` set to a member,
selects exactly that member's rows of the real tables. That the server applies a policy to a
member and not to others awaits a real server.

The stamp of who wrote a row (``written_by``, MATERIALIZED ``currentUser()``) is shown the same
way: chDB refuses an INSERT that names it, as a server does, and the rows a policy keeps are read
with each row's stamp given as the server would give it (the column's expression set to that
user's name for the insert: chDB has one user).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime

import pytest

from mnemo.errors import InputError, StoreError
from mnemo.store import ClickHouseStore, open_store
from mnemo.store.access import (
    PERSON_CONDITION,
    ROLE_SETTINGS,
    AccessPlan,
    namespace_condition,
    parse_workspace_grants,
    read_condition,
    setup_statements,
)
from mnemo.store.authorship import STAMPED_TABLES
from mnemo.store.migrations import CREATE_VERSION_TABLE, MIGRATIONS
from mnemo.store.server import for_cluster
from tests.helpers import make_memory

NAMESPACES = ("person:ana", "person:ben", "workspace:shop", "workspace:secret", "workspace:o'hara")
AT = datetime(2026, 11, 30, 12, tzinfo=UTC)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClickHouseStore]:
    opened = open_store(f"chdb://{tmp_path_factory.mktemp('access') / 'store'}")
    opened.put_memories(
        [make_memory(f"m-{i}", f"note {i}", AT, namespace=ns) for i, ns in enumerate(NAMESPACES)]
    )
    for person in ("person:ana", "person:ben"):
        opened._db.command(
            "INSERT INTO sessions (id, person, version) VALUES ({id:String}, {person:String}, 1)",
            parameters={"id": f"s-{person}", "person": person},
        )
    yield opened
    opened.close()


def _as(condition: str, user: str) -> str:
    return re.sub(r"currentUser\(\)", f"'{user}'", condition)


def _readable(store: ClickHouseStore, condition: str, user: str) -> set[str]:
    sql = f"SELECT namespace FROM memories FINAL WHERE {_as(condition, user)}"
    return {str(row[0]) for row in store._db.query(sql).result_rows}


def test_every_statement_parses_in_the_servers_own_parser(store: ClickHouseStore) -> None:
    plans = (
        AccessPlan("team"),
        AccessPlan("team", ("ana", "ben"), {"github.com/shop/secret": ("ana",), "o'hara": ("ben",)}, "prod"),
    )
    for plan in plans:
        statements = setup_statements(plan)
        # the database, the role, its grant, to whom, the settings it holds, two policies a table
        assert len(statements) == 5 - (not plan.members) + 2 * 11
        for statement in statements:
            store._db.command(f"EXPLAIN AST {statement}")  # a syntax error raises


def test_the_cluster_reaches_every_setup_and_migration_statement(store: ClickHouseStore) -> None:
    for statement in setup_statements(AccessPlan("team", ("ana",), cluster="prod")):
        formatted = str(store._db.command("SELECT formatQuery({q:String})", parameters={"q": statement}))
        assert "ON CLUSTER prod" in formatted, formatted
    migrations = [CREATE_VERSION_TABLE, *(s for m in MIGRATIONS for s in m.statements)]
    for statement in migrations:
        clustered = for_cluster(statement, "prod")
        formatted = str(store._db.command("SELECT formatQuery({q:String})", parameters={"q": clustered}))
        assert "ON CLUSTER prod" in formatted, formatted
        if "ENGINE" in statement:
            assert re.search(r"ENGINE = Replicated(Replacing)?MergeTree\b", formatted), formatted
        assert for_cluster(statement, "") == statement


def test_a_member_reads_the_shared_namespaces_and_their_own_person_namespace(store: ClickHouseStore) -> None:
    condition = namespace_condition("namespace", {})
    shared = {"workspace:shop", "workspace:secret", "workspace:o'hara"}
    assert _readable(store, condition, "ana") == shared | {"person:ana"}
    assert _readable(store, condition, "ben") == shared | {"person:ben"}
    assert _readable(store, condition, "eva") == shared
    assert _readable(store, condition, "person:ana") == shared  # a name is not a namespace


def test_a_granted_workspace_is_read_only_by_its_members(store: ClickHouseStore) -> None:
    condition = namespace_condition(
        "namespace", parse_workspace_grants(["workspace:secret=ana", "o'hara=ben"])
    )
    assert _readable(store, condition, "ana") == {"workspace:shop", "workspace:secret", "person:ana"}
    assert _readable(store, condition, "ben") == {"workspace:shop", "workspace:o'hara", "person:ben"}
    assert _readable(store, condition, "eva") == {"workspace:shop"}


def test_hook_sessions_are_read_only_by_their_person(store: ClickHouseStore) -> None:
    for user, expected in (("ana", {"person:ana"}), ("ben", {"person:ben"}), ("eva", set())):
        sql = f"SELECT person FROM sessions FINAL WHERE {_as(PERSON_CONDITION, user)}"
        assert {str(r[0]) for r in store._db.query(sql).result_rows} == expected


def test_bad_names_and_grants_are_refused_clearly() -> None:
    with pytest.raises(InputError, match="not a server user"):
        AccessPlan("team", ("ana smith",))
    with pytest.raises(InputError, match="not a database name"):
        AccessPlan("team-db")
    with pytest.raises(InputError, match="ID=USER"):
        parse_workspace_grants(["shop"])
    with pytest.raises(InputError, match="ID=USER"):
        parse_workspace_grants(["shop="])


def test_a_refused_grant_names_what_is_missing_and_who_can_give_it(store: ClickHouseStore) -> None:
    # chDB refuses access management to its one user as a server refuses it to a member.
    with pytest.raises(StoreError) as refused, store._db.translated("creating a user"):
        store._db.command("CREATE USER IF NOT EXISTS ana")
    message = str(refused.value)
    assert "necessary to have the grant CREATE USER" in message
    assert "your server user lacks that grant" in message and "mnemo server setup --apply" in message


def _written_by(store: ClickHouseStore, user: str) -> None:
    """The stamp every insert from now on gets, as a server gives it to ``user``'s inserts."""
    for table in STAMPED_TABLES:
        store._db.command(
            f"ALTER TABLE {table} MODIFY COLUMN written_by LowCardinality(String) MATERIALIZED '{user}'"
        )


@contextmanager
def _written_as(store: ClickHouseStore, written: Sequence[tuple[str, str, int, str, str]]) -> Iterator[None]:
    """Memories inserted each by its user, (who inserts, id, version, namespace, text), as a server
    stamps them; after, the engine's own stamp and no person again (the store is the module's)."""
    try:
        for user, memory_id, version, namespace, text in written:
            _written_by(store, user)
            store.put_memories([make_memory(memory_id, text, AT, version=version, namespace=namespace)])
        yield
    finally:
        store._db.person = None
        for table in STAMPED_TABLES:
            store._db.command(
                f"ALTER TABLE {table} MODIFY COLUMN written_by LowCardinality(String) "
                "MATERIALIZED currentUser()"
            )


def test_no_insert_can_say_who_wrote_its_rows(store: ClickHouseStore) -> None:
    for table in STAMPED_TABLES:
        with pytest.raises(StoreError, match="MATERIALIZED column"), store._db.translated("forging"):
            store._db.command(f"INSERT INTO {table} (written_by) VALUES ('ana')")
        with pytest.raises(StoreError, match="MATERIALIZED column"), store._db.translated("forging"):
            store._db.command(f"INSERT INTO {table} (written_by) SELECT 'ana'")
    store.put_memories([make_memory("m-stamped", "a note", AT)])
    stamp = store._db.command("SELECT written_by FROM memories WHERE id = 'm-stamped'")
    assert stamp == str(store._db.command("SELECT currentUser()"))  # the engine's own user


def test_a_policy_keeps_only_rows_their_writer_may_write_and_a_forged_version_hides_nothing(
    store: ClickHouseStore,
) -> None:
    plan = AccessPlan("team", ("ana", "ben", "carl"), {"secret": ("ana", "ben")}, writers=("scribe",))
    written = (  # (who inserts, id, version, namespace, text)
        ("ana", "m-ana", 1, "person:ana", "ana's own"),
        ("ben", "m-ana", 2, "person:ana", "forged by ben"),
        ("scribe", "m-ana", 3, "person:ana", "the writer in a person's namespace"),
        ("ben", "m-ben-in-ana", 1, "person:ana", "a new memory ben forged for ana"),
        ("ana", "m-secret", 1, "workspace:secret", "granted workspace, by a member"),
        ("carl", "m-secret", 2, "workspace:secret", "forged by carl, no member"),
        ("scribe", "m-secret-2", 1, "workspace:secret", "granted workspace, by the writer"),
        ("carl", "m-shop", 1, "workspace:shop", "open workspace, by any member"),
    )
    with _written_as(store, written):
        condition = read_condition("memories", plan)

        def read(user: str) -> dict[str, str]:
            # PREWHERE: applied while reading, before FINAL folds versions, as the policies are
            # with apply_row_policy_after_final = 0 (the role's setting)
            sql = (
                f"SELECT id, what FROM memories FINAL PREWHERE {_as(condition, user)} "
                "AND startsWith(id, 'm-') AND id != 'm-stamped' AND id NOT LIKE 'm-_' ORDER BY id"
            )
            return {str(i): str(w) for i, w in store._db.query(sql).result_rows}

        assert read("ana") == {
            "m-ana": "ana's own",
            "m-secret": "granted workspace, by a member",
            "m-secret-2": "granted workspace, by the writer",
            "m-shop": "open workspace, by any member",
        }
        assert read("carl") == {"m-shop": "open workspace, by any member"}
        assert read("scribe") == {  # the writer reads every workspace
            "m-secret": "granted workspace, by a member",
            "m-secret-2": "granted workspace, by the writer",
            "m-shop": "open workspace, by any member",
        }
        # A memory's versions fold per writer: merged, the forged newest version still hides nothing.
        before = read("ana")
        store._db.command("OPTIMIZE TABLE memories FINAL")
        assert read("ana") == before
        kept = store._db.query("SELECT version, written_by FROM memories WHERE id = 'm-ana' ORDER BY 1")
        assert kept.result_rows == [(1, "ana"), (2, "ben"), (3, "scribe")]
        for table in STAMPED_TABLES:  # every stamped table's policy parses and runs
            store._db.query(f"SELECT count() FROM {table} PREWHERE {_as(read_condition(table, plan), 'ana')}")


def test_one_memory_is_read_as_the_lists_read_it_its_newest_genuine_version_if_readable(
    store: ClickHouseStore,
) -> None:
    # A daemon's reads on a shared server narrow to its person and to rows their writer may write
    # (the connection's person set here, as the server's user sets it there).
    written = (  # (who inserts, id, version, namespace, text)
        ("ana", "m-moved", 1, "workspace:shop", "a shop note"),
        ("ana", "m-moved", 2, "person:ana", "moved into ana's own namespace"),
        ("ana", "m-own", 1, "person:ana", "ana's own"),
        ("ben", "m-own", 2, "person:ana", "forged by ben"),
    )
    with _written_as(store, written):
        store._db.person = "ben"
        # Its newest version is ana's own: ben reads no older one in its place, one by id or listed.
        assert store.get_memory("m-moved") is None
        assert "m-moved" not in {m.id for m in store.active_memories(["workspace:shop"], 100)}
        store._db.person = "ana"
        moved, own = store.get_memory("m-moved"), store.get_memory("m-own")
        assert moved is not None and (moved.version, moved.what) == (2, "moved into ana's own namespace")
        assert own is not None and (own.version, own.what) == (1, "ana's own")  # the forgery hides nothing


def test_the_role_holds_only_the_settings_the_server_knows() -> None:
    plan = AccessPlan("team", ("ana",), writers=("scribe",))
    every = setup_statements(plan)
    assert any("SETTINGS PROFILE" in s and all(n in s for n in ROLE_SETTINGS) for s in every)
    assert "GRANT `mnemo_member` TO `ana`, `scribe`" in every
    older = setup_statements(plan, ["async_insert"])
    profile = [s for s in older if "SETTINGS PROFILE" in s]
    assert len(profile) == 1 and "async_insert = 0 CONST" in profile[0]
    assert "apply_row_policy_after_final" not in profile[0]
    assert not [s for s in setup_statements(plan, []) if "SETTINGS PROFILE" in s]
    with pytest.raises(InputError, match="not a server user"):
        AccessPlan("team", writers=("the writer",))
