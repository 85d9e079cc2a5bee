"""The SQL of ``mnemo server setup`` against the real ClickHouse engine (chDB).

chDB has no users, so the policies cannot be enforced here. What the engine can show is shown:
every statement parses (``EXPLAIN AST``, the server's own parser), the cluster reaches every
statement (``formatQuery``), and each policy's condition, with ``currentUser()`` set to a member,
selects exactly that member's rows of the real tables. That the server applies a policy to a
member and not to others awaits a real server.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from mnemo.errors import InputError, StoreError
from mnemo.store import ClickHouseStore, open_store
from mnemo.store.access import (
    PERSON_CONDITION,
    AccessPlan,
    namespace_condition,
    parse_workspace_grants,
    setup_statements,
)
from mnemo.store.migrations import CREATE_VERSION_TABLE, MIGRATIONS, for_cluster
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
        assert len(statements) == 4 - (not plan.members) + 2 * 11  # two policies on each of 11 tables
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
