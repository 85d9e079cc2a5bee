"""Two daemons whose clocks are ten minutes apart each way, on one server: nothing changes.

Each daemon runs under libfaketime (LD_PRELOAD, from the libfaketime wheel on PyPI), its wall
clock 10 minutes ahead (ana) or behind (ben) of the server's; monotonic clocks are left alone.
The server is the test fixture of :mod:`tests.clickhouse_http` (chDB behind ClickHouse's HTTP
interface) on the real clock. Following and the lease use the server's clock only, so what one
remembers the other recalls, a forget reaches the first, and the lease's time left is the
server's five minutes, not five plus or minus ten.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import UTC, datetime, timedelta
from pathlib import Path

import libfaketime
import pytest

from tests.clickhouse_http import clickhouse_http_server
from tests.helpers import Home, isolated_home, wait_until
from tests.llm_server import LLMServer

NS = "workspace:shop"
LIBFAKETIME = Path(libfaketime.__file__).parent / "vendor" / "libfaketime" / "src" / "libfaketime.so.1"
SKEWS = {"ana": timedelta(minutes=10), "ben": timedelta(minutes=-10)}


@pytest.fixture
def skewed(llm_server: LLMServer) -> Iterator[dict[str, Home]]:
    with (
        tempfile.TemporaryDirectory(prefix="mnemo-ch-") as directory,
        clickhouse_http_server(Path(directory)) as url,
        ExitStack() as stack,
    ):
        host = url.removeprefix("http://")
        yield {
            user: stack.enter_context(isolated_home()).with_env(
                MNEMO_STORE=f"http://{user}@{host}",
                MNEMO_EMBEDDER="none",
                MNEMO_LLM_URL=llm_server.url,
                MNEMO_LLM_MODEL="scripted-1",
                MNEMO_WRITER="always",
                LD_PRELOAD=str(LIBFAKETIME),
                FAKETIME=f"{int(skew.total_seconds()):+d}s",
                DONT_FAKE_MONOTONIC="1",
            )
            for user, skew in SKEWS.items()
        }


def _recall(home: Home, query: str) -> dict[str, dict[str, object]]:
    found = json.loads(home.mnemo("recall", query, "--namespace", NS, "--json").stdout)
    return {str(r["memory"]["id"]): r["memory"] for r in found["memories"]}


def _remember(home: Home, text: str) -> str:
    made = home.mnemo("remember", text, "--type", "fact", "--namespace", NS, "--json").stdout
    return str(json.loads(made)["id"])


def test_daemons_ten_minutes_apart_follow_each_other_and_share_one_lease(skewed: dict[str, Home]) -> None:
    ana, ben = skewed["ana"], skewed["ben"]
    for home in (ana, ben):
        assert home.mnemo("status", "--json").returncode == 0
    from_ana = _remember(ana, "The gateway timeout is 600 s, set in lb.tf")
    wait_until(lambda: from_ana in _recall(ben, "gateway timeout"), timeout_s=15, what="ana's memory on ben")
    from_ben = _remember(ben, "The deploy window is Tuesday 10:00 UTC")
    wait_until(lambda: from_ben in _recall(ana, "deploy window"), timeout_s=15, what="ben's memory on ana")

    # The skew is real: each daemon stamped its memory by its own clock.
    now = datetime.now(UTC)
    for user, memory_id, query in (("ana", from_ana, "gateway timeout"), ("ben", from_ben, "deploy window")):
        made = datetime.fromisoformat(str(_recall(ana, query)[memory_id]["created_at"]))
        assert abs(made - (now + SKEWS[user])) < timedelta(minutes=2), (user, made, now)

    ben.mnemo("forget", from_ana, "--reason", "moved to the new load balancer")
    wait_until(
        lambda: from_ana not in _recall(ana, "gateway timeout"), timeout_s=15, what="the forget on ana"
    )

    def leases() -> list[str]:
        return [json.loads(h.mnemo("status", "--json").stdout)["distillation"]["lease"] for h in (ana, ben)]

    wait_until(
        lambda: sum(s.startswith("this daemon") for s in leases()) == 1, timeout_s=30, what="one holder"
    )
    for shown in leases():
        left = re.search(r"(\d+(?:\.\d+)?)\s*s left", shown)
        assert left is not None and 0 < float(left.group(1)) <= 300, shown
