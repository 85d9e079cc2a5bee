"""`mnemo status` says the writer is paused only until the pause's time: the pass after a pause
may take minutes before the loop clears it, and its calls are work, not a pause."""

from __future__ import annotations

from datetime import timedelta

import pytest

from mnemo.clock import utc_now
from mnemo.daemon.runtime import Daemon
from mnemo.embed.fallback import FALLBACK_ID
from tests.helpers import Home

pytestmark = pytest.mark.anyio


async def test_a_pause_whose_time_has_come_is_not_shown(home: Home) -> None:
    async with Daemon(home.with_env(MNEMO_EMBEDDER=FALLBACK_ID).settings) as daemon:
        state = daemon.distilling.state
        state.paused_until, state.last_error = utc_now() + timedelta(minutes=5), "the day's budget is spent"
        shown = (await daemon.status()).distillation
        assert shown.paused_until == state.paused_until and shown.last_error == state.last_error
        state.paused_until = utc_now() - timedelta(seconds=1)
        shown = (await daemon.status()).distillation
        assert shown.paused_until is None, "its time came: the writer is working again"
