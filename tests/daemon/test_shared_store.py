"""Several daemons on one ClickHouse server: each one's index follows what the others write.

The server is the test fixture of :mod:`tests.clickhouse_http` (chDB behind ClickHouse's HTTP
interface): it shows the protocol and the store's own clock, not grants, row policies, replicas
or a real server's concurrency. The daemons and their clients are the real ones, each in its own
home, as on three machines.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from tests.clickhouse_http import clickhouse_http_server
from tests.helpers import Home, isolated_home, wait_until

NS = "workspace:shop"


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    with (
        tempfile.TemporaryDirectory(prefix="mnemo-ch-") as directory,
        clickhouse_http_server(Path(directory)) as url,
    ):
        yield url


@pytest.fixture
def homes(server_url: str) -> Iterator[list[Home]]:
    """Three daemons' homes on the one server, words-only recall (no model to load)."""
    with ExitStack() as stack:
        made = [stack.enter_context(isolated_home()) for _ in range(3)]
        yield [
            h.with_env(MNEMO_STORE=server_url, MNEMO_EMBEDDER="none", MNEMO_PERSON=name)
            for h, name in zip(made, ("ana", "ben", "eva"), strict=True)
        ]


def _recalled(home: Home, query: str) -> list[dict[str, object]]:
    found = json.loads(home.mnemo("recall", query, "--namespace", NS, "--json").stdout)
    return [r["memory"] for r in found["memories"]]


def _ids(home: Home, query: str) -> set[str]:
    return {str(m["id"]) for m in _recalled(home, query)}


def _remember(home: Home, text: str) -> str:
    out = json.loads(home.mnemo("remember", text, "--type", "fact", "--namespace", NS, "--json").stdout)
    return str(out["id"])


def test_what_one_daemon_remembers_the_others_recall_and_a_forget_reaches_them(homes: list[Home]) -> None:
    ana, ben, eva = homes
    for home in homes:  # every daemon up and built before the write
        assert home.mnemo("status", "--json").returncode == 0
    memory = _remember(ana, "The gateway timeout is 600 s, set in lb.tf")
    for home in (ben, eva):
        wait_until(
            lambda h=home: memory in _ids(h, "gateway timeout"), timeout_s=15, what="the memory elsewhere"
        )
    status = json.loads(ben.mnemo("status", "--json").stdout)["store_follow"]
    assert status["applied"] >= 1 and status["last_error"] == ""

    ben.mnemo("forget", memory, "--reason", "the gateway moved to the new load balancer")
    for home in (ana, eva):
        wait_until(
            lambda h=home: memory not in _ids(h, "gateway timeout"), timeout_s=15, what="the forget elsewhere"
        )


def test_status_says_how_far_behind_the_store_the_index_is(homes: list[Home]) -> None:
    ana = homes[0]
    shown = ana.mnemo("status").stdout
    assert "with the store; reads others' writes every 1 s" in shown
    follow = json.loads(ana.mnemo("status", "--json").stdout)["store_follow"]
    assert follow["poll_s"] == 1.0 and follow["behind_versions"] >= 0


def test_an_embedded_store_has_nothing_to_follow(home: Home) -> None:
    status = json.loads(home.with_env(MNEMO_EMBEDDER="none").mnemo("status", "--json").stdout)
    assert status["store_follow"] is None
