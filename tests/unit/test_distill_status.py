"""What `mnemo status` says of the writer: paused only until the pause's time (the pass after a
pause may take minutes before the loop clears it, and its calls are work, not a pause); failed
batches of this daemon's, not an earlier one's (a restart, a change of writer)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from mnemo.clock import utc_now
from mnemo.daemon.runtime import Daemon
from mnemo.embed.fallback import FALLBACK_ID
from mnemo.store import Store, open_store
from mnemo.store.distill import Batch
from tests.helpers import Home

pytestmark = pytest.mark.anyio


async def test_a_pause_whose_time_has_come_is_not_shown(home: Home) -> None:
    async with Daemon(home.with_env(MNEMO_EMBEDDER=FALLBACK_ID).settings) as daemon:
        await daemon.index.built()
        state = daemon.distilling.state
        state.paused_until, state.last_error = utc_now() + timedelta(minutes=5), "the day's budget is spent"
        shown = (await daemon.status()).distillation
        assert shown.paused_until == state.paused_until and shown.last_error == state.last_error
        state.paused_until = utc_now() - timedelta(seconds=1)
        shown = (await daemon.status()).distillation
        assert shown.paused_until is None, "its time came: the writer is working again"


def _failed(store: Store, n: int, error: str, at: datetime) -> None:
    batch = Batch(f"b-{n}", f"s-{n}", "workspace:/srv/app", at, f"e-{n}", at, f"e-{n}", 1, "failed", error)
    store.put_batch(batch, at)


async def test_failed_batches_are_this_daemons(home: Home) -> None:
    model = home.with_env(
        MNEMO_EMBEDDER=FALLBACK_ID, MNEMO_LLM_URL="http://127.0.0.1:9/v1", MNEMO_LLM_MODEL="m"
    )
    store = open_store(model.settings.store)
    try:
        _failed(store, 1, "the earlier writer's model refused", utc_now() - timedelta(hours=1))
    finally:
        store.close()
    async with Daemon(model.settings) as daemon:
        await daemon.index.built()
        shown = (await daemon.status()).distillation
        assert (shown.failed_batches, shown.last_failure) == (0, ""), "an earlier daemon's failure"
        _failed(daemon.store, 2, "this writer's", utc_now())
        shown = (await daemon.status()).distillation
        assert (shown.failed_batches, shown.last_failure) == (1, "this writer's")
