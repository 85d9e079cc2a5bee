"""Two writers on one store: only the lease holder writes; one that lost it writes nothing; time
is the store's, so a daemon's own clock changes nothing; the heartbeat keeps a working writer's
lease."""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from mnemo import clock as mnemo_clock
from mnemo.distill.decide import DecisionModel
from mnemo.distill.lease import LeaseLostError, WriterLease
from mnemo.distill.llm import LLM
from mnemo.distill.meter import TokenMeter
from mnemo.distill.writer import Distiller
from mnemo.embed import load_embedder
from mnemo.index.live import RecallEngine
from mnemo.store import ClickHouseStore
from mnemo.store.distill import Batch
from tests.helpers import Clock, Home, record_deploy_day, script_deploy_day
from tests.llm_server import LLMServer

TTL_S = 1.0  # short, so that a stall past the expiry takes a second of real (store) time


def _lease(store: ClickHouseStore, holder: str) -> WriterLease:
    return WriterLease(store, holder, ttl_s=TTL_S, settle_s=0)


def test_one_writer_holds_the_lease_until_it_stalls_past_its_expiry(store: ClickHouseStore) -> None:
    a, b = _lease(store, "daemon-a"), _lease(store, "daemon-b")
    assert a.acquire() and not b.acquire()
    a.check()
    first = a.token
    time.sleep(TTL_S / 3)
    assert a.acquire() and not b.acquire()  # still a's

    time.sleep(TTL_S + 0.2)  # a stalls past the expiry
    assert b.acquire() and b.token == (first or 0) + 1
    with pytest.raises(LeaseLostError, match="held by daemon-b, not by this daemon \\(daemon-a\\)"):
        a.check()
    assert not a.acquire()


@pytest.mark.parametrize("skew", [timedelta(minutes=10), timedelta(minutes=-10)])
def test_a_daemon_whose_clock_is_ten_minutes_off_changes_nothing(
    store: ClickHouseStore, monkeypatch: pytest.MonkeyPatch, skew: timedelta
) -> None:
    # Expiry and "newest claim wins" are the store's clock: the daemons' clocks are never read.
    real_ns, real_now = time.time_ns, mnemo_clock.utc_now
    monkeypatch.setattr(time, "time_ns", lambda: real_ns() + int(skew.total_seconds() * 1e9))
    monkeypatch.setattr(mnemo_clock, "utc_now", lambda: real_now() + skew)
    a, b = _lease(store, "daemon-a"), _lease(store, "daemon-b")
    assert a.acquire() and not b.acquire()
    current = store.read_lease("writer")
    assert current is not None and 0 < current.remaining_s <= TTL_S
    time.sleep(TTL_S + 0.2)
    assert b.acquire() and not a.acquire()
    assert a.token is None and b.token == 2


def test_a_batch_state_written_by_a_slow_clocked_writer_after_a_fast_one_is_the_state(
    store: ClickHouseStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Writer a (clock ten minutes fast) starts a batch and stops; writer b (ten minutes slow)
    # redoes it. The store stamps each state, so b's "done" is newer than a's "started".
    at = datetime(2026, 12, 1, tzinfo=UTC)
    started = Batch("batch-1", "s1", "workspace:shop", at, "e1", at, "e2", 2, "started")
    real_ns = time.time_ns
    for status, skew in (("started", 600), ("done", -600)):
        monkeypatch.setattr(time, "time_ns", lambda skew=skew: real_ns() + skew * 10**9)
        store.put_batch(replace(started, status=status), at + timedelta(seconds=skew))
    assert store.started_batches() == []


def test_the_heartbeat_keeps_the_lease_while_the_holder_works(store: ClickHouseStore) -> None:
    a, b = _lease(store, "daemon-a"), _lease(store, "daemon-b")
    assert a.acquire()
    with a.heartbeat():  # a long extraction: three lease lengths
        deadline = time.monotonic() + 3 * TTL_S
        while time.monotonic() < deadline:
            assert not b.acquire()
            time.sleep(0.1)
    a.check()
    time.sleep(TTL_S + 0.2)  # no heartbeat after the work: the lease runs out
    assert b.acquire()


def _two_writers(
    home: Home, llm_server: LLMServer, store: ClickHouseStore
) -> tuple[WriterLease, WriterLease, Distiller, Distiller]:
    """Leases a (held) and b, and a writer with each, on one store; deploy-day session s2 recorded
    and scripted."""
    script_deploy_day(llm_server)
    record_deploy_day(store, [2])
    settings = home.with_env(
        MNEMO_LLM_URL=llm_server.url, MNEMO_LLM_MODEL="scripted-1", MNEMO_EMBEDDER="use-multilingual-v3"
    ).settings
    clock = Clock(datetime(2026, 3, 2, 12, 0, tzinfo=UTC))
    a, b = _lease(store, "daemon-a"), _lease(store, "daemon-b")
    assert a.acquire()
    llm = LLM(settings, TokenMeter(store, 0))
    engine = RecallEngine(load_embedder(settings))
    writer_a, writer_b = (
        Distiller(store, engine, llm, DecisionModel(llm, settings), clock=clock, lease=lease)
        for lease in (a, b)
    )
    return a, b, writer_a, writer_b


def _b_redoes_the_batch_a_left(store: ClickHouseStore, b: WriterLease, writer_b: Distiller) -> None:
    """Nothing of a's is stored; b, having the lease, redoes a's started batch exactly once."""
    assert list(store.memories_page("", 10)) == []
    [left] = store.started_batches()
    # b took the lease during a's stall and has not renewed it since: on a loaded machine its
    # second may be over. As the daemon does, b renews it and keeps it beating while it works.
    assert b.acquire()
    with b.heartbeat():
        [done] = writer_b.recover()
    assert done.batch.id == left.id and len(done.added) == 1
    assert [m.what for m in store.memories_page("", 10)] == ["The shop is deployed on Tuesdays"]


def test_a_writer_that_lost_the_lease_stops_before_it_writes(
    home: Home, llm_server: LLMServer, store: ClickHouseStore
) -> None:
    a, b, writer_a, writer_b = _two_writers(home, llm_server, store)

    def stall(body: dict[str, object]) -> None:
        """Daemon a stalls while judging (no heartbeat): its lease expires and daemon b takes it."""
        if "Transcript:" not in str(body["messages"]) and a.token is not None and b.token is None:
            time.sleep(TTL_S + 0.2)
            assert b.acquire()

    llm_server.on_request = stall
    with pytest.raises(LeaseLostError):
        writer_a.distil_session("s2")
    assert store.judge_log(10) == []
    llm_server.on_request = None
    _b_redoes_the_batch_a_left(store, b, writer_b)


def test_a_writer_paused_between_its_check_and_its_commit_writes_nothing(
    home: Home, llm_server: LLMServer, store: ClickHouseStore
) -> None:
    # The check passes; then the writer sleeps (a laptop lid closed) past the expiry and daemon b
    # takes over; then it commits. The store, not the writer, refuses the commit.
    a, b, writer_a, writer_b = _two_writers(home, llm_server, store)
    checked = a.check

    def check_then_sleep() -> None:
        checked()
        time.sleep(TTL_S + 0.2)
        assert b.acquire()

    a.check = check_then_sleep  # type: ignore[method-assign]
    with pytest.raises(LeaseLostError, match="moved on before daemon-a's commit; nothing was written"):
        writer_a.distil_session("s2")
    assert store.judge_log(10) == []  # the judgement of a commit the store refused is not told
    _b_redoes_the_batch_a_left(store, b, writer_b)
    [told] = store.judge_log(10)  # one story for the batch: b's, whose commit landed
    assert told.batch == store.last_batch().id and told.action == "add"
