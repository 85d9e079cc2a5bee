"""Two writers on one store: only the lease holder writes; one that lost it writes nothing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from mnemo.distill.decide import DecisionModel
from mnemo.distill.lease import TTL, LeaseLostError, WriterLease
from mnemo.distill.llm import LLM
from mnemo.distill.meter import TokenMeter
from mnemo.distill.writer import Distiller
from mnemo.embed import load_embedder
from mnemo.index.live import RecallEngine
from mnemo.store import ClickHouseStore
from tests.helpers import Clock, Home, record_deploy_day, script_deploy_day
from tests.llm_server import LLMServer


def _clock() -> Clock:
    return Clock(datetime(2026, 3, 2, 12, 0, tzinfo=UTC))


def test_one_writer_holds_the_lease_until_it_stalls_past_its_expiry(store: ClickHouseStore) -> None:
    clock = _clock()
    a = WriterLease(store, "daemon-a", clock, settle_s=0)
    b = WriterLease(store, "daemon-b", clock, settle_s=0)
    assert a.acquire() and not b.acquire()
    a.check()
    clock.now += TTL / 3
    assert a.acquire() and not b.acquire()  # renewed
    first = a.token

    clock.now += TTL + timedelta(seconds=1)  # a stalls past the expiry
    assert b.acquire() and b.token == (first or 0) + 1
    with pytest.raises(LeaseLostError, match="held by daemon-b, not by this daemon \\(daemon-a\\)"):
        a.check()
    assert not a.acquire()


def test_a_writer_that_lost_the_lease_stops_before_it_writes(
    home: Home, llm_server: LLMServer, store: ClickHouseStore
) -> None:
    script_deploy_day(llm_server)
    record_deploy_day(store, [2])
    settings = home.with_env(
        MNEMO_LLM_URL=llm_server.url, MNEMO_LLM_MODEL="scripted-1", MNEMO_EMBEDDER="use-multilingual-v3"
    ).settings
    clock = _clock()
    a = WriterLease(store, "daemon-a", clock, settle_s=0)
    b = WriterLease(store, "daemon-b", clock, settle_s=0)
    assert a.acquire()
    llm = LLM(settings, TokenMeter(store, 0))
    engine = RecallEngine(load_embedder(settings))

    def stall(body: dict[str, object]) -> None:
        """Daemon a stalls while judging: its lease expires and daemon b takes it."""
        if "Transcript:" not in str(body["messages"]):
            clock.now += TTL + timedelta(seconds=1)
            assert b.acquire()

    llm_server.on_request = stall
    writer_a = Distiller(store, engine, llm, DecisionModel(llm, settings), clock=clock, lease=a)
    with pytest.raises(LeaseLostError):
        writer_a.distil_session("s2")
    assert list(store.memories_page("", 10)) == [] and store.judge_log(10) == []
    [left] = store.started_batches()  # for the holder to redo
    llm_server.on_request = None

    writer_b = Distiller(store, engine, llm, DecisionModel(llm, settings), clock=clock, lease=b)
    [done] = writer_b.recover()
    assert done.batch.id == left.id and len(done.added) == 1
    assert [m.what for m in store.memories_page("", 10)] == ["The shop is deployed on Tuesdays"]
