"""``mnemo server setup`` and the errors of credentials and grants, through the real CLI and daemon.

The server is the test fixture of :mod:`tests.clickhouse_http` (chDB behind ClickHouse's HTTP
interface), here checking one user's password. chDB refuses access management (CREATE ROLE) to
its one user, as a server refuses it to a user without the grant; so ``--apply`` is seen creating
the database and tables and then stopping at the role with an error that says who may run it.
Applying the policies on a server that accepts them awaits a real server.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.clickhouse_http import clickhouse_http_server
from tests.helpers import Home


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    with (
        tempfile.TemporaryDirectory(prefix="mnemo-ch-") as directory,
        clickhouse_http_server(Path(directory), passwords={"ana": "right-one"}) as url,
    ):
        yield url


def _on(home: Home, server_url: str, user: str, database: str, **env: str) -> Home:
    host = server_url.removeprefix("http://")
    return home.with_env(MNEMO_STORE=f"http://{user}@{host}/{database}", MNEMO_EMBEDDER="none", **env)


def test_setup_prints_the_sql_for_the_database_the_role_the_members_and_the_policies(
    home: Home, server_url: str
) -> None:
    admin = _on(home, server_url, "admin", "team")
    printed = admin.mnemo("server", "setup", "--member", "ana", "--workspace", "shop/secret=ana").stdout
    statements = [line for line in printed.splitlines() if line]
    assert statements[:4] == [
        "CREATE DATABASE IF NOT EXISTS `team`;",
        "CREATE ROLE IF NOT EXISTS `mnemo_member`;",
        "GRANT SELECT, INSERT ON `team`.* TO `mnemo_member`;",
        "GRANT `mnemo_member` TO `ana`;",
    ]
    policies = [s for s in statements if s.startswith("CREATE ROW POLICY OR REPLACE mnemo_member ON `team`.")]
    assert {s.split("`.`")[1].split("`")[0] for s in policies} == {
        "memories", "memories_staged", "memory_history", "episodes", "distill_batches", "judge_log", "kept",
        "sessions", "injections", "usage_verdicts", "embeddings",
    }  # fmt: skip
    assert "'workspace:shop/secret' AND currentUser() IN ('ana')" in printed
    # Printing changes nothing on the server: the database is not there yet.
    assert "mnemo server init" in admin.mnemo("status", check=False).stderr


def test_setup_apply_makes_the_schema_then_stops_where_the_server_refuses_access_management(
    home: Home, server_url: str
) -> None:
    admin = _on(home, server_url, "admin", "applied")
    refused = admin.mnemo("server", "setup", "--member", "ana", "--apply", check=False)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert "the server refused statement 2 of 27 (CREATE ROLE IF NOT EXISTS `mnemo_member`" in refused.stderr
    assert "necessary to have the grant CREATE ROLE" in refused.stderr
    assert "as a user with access management (an admin)" in refused.stderr
    assert "database applied" in refused.stdout  # the schema part ran first
    assert json.loads(admin.mnemo("status", "--json").stdout)["person"] == "admin"


def test_a_wrong_password_is_refused_with_what_to_check_and_is_never_shown(
    home: Home, server_url: str
) -> None:
    wrong = _on(home, server_url, "ana", "default", MNEMO_STORE_PASSWORD="wrong-one-xyz")
    for args in (("status",), ("server", "init")):
        refused = wrong.mnemo(*args, check=False)
        assert refused.returncode == 1 and "Traceback" not in refused.stderr
        assert "ana: Authentication failed" in refused.stderr
        assert "check the user in the store DSN and store_password" in refused.stderr
        assert "wrong-one-xyz" not in refused.stderr + refused.stdout
    right = _on(home, server_url, "ana", "default", MNEMO_STORE_PASSWORD="right-one")
    assert json.loads(right.mnemo("status", "--json").stdout)["person"] == "ana"


def test_setup_and_init_are_refused_on_the_embedded_store(home: Home) -> None:
    for action in ("init", "setup"):
        refused = home.mnemo("server", action, check=False)
        assert refused.returncode == 1 and "the store is embedded" in refused.stderr
    misplaced = home.with_env(MNEMO_STORE="http://x@127.0.0.1:1/db").mnemo(
        "server", "init", "--apply", check=False
    )
    assert misplaced.returncode == 1 and "are for mnemo server setup" in misplaced.stderr
