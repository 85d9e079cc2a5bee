"""The background store work waits for the hooks' questions to go quiet (mnemo.daemon.quiet): a
hook's episode reaches the store after a quiet moment, or at once when something must read it; a
new session's first hook does not wait for another session's episodes to be stored."""

from __future__ import annotations

import time
from typing import Any

import anyio
import pytest

from mnemo.daemon.quiet import QuietGate
from mnemo.daemon.runtime import Daemon
from tests.helpers import Home

pytestmark = pytest.mark.anyio


async def test_the_gate_waits_for_quiet_no_longer_than_its_bound_and_not_when_hurried() -> None:
    gate = QuietGate(quiet_s=60, longest_s=60)
    journal, ledger = gate.writer(), gate.writer()
    with anyio.fail_after(5):
        await journal.wait()  # no question yet: nothing to wait for
    gate.asked()
    with anyio.move_on_after(0.2) as waited:
        await journal.wait()
    assert waited.cancelled_caught  # a question just came: the writers wait
    with ledger.hurried():
        with anyio.fail_after(5):
            await ledger.wait()  # someone waits for what it writes
        with anyio.move_on_after(0.2) as waited:
            await journal.wait()
        assert waited.cancelled_caught  # the other writer still waits
    gate.longest_s = 0.1
    started = time.monotonic()
    with anyio.fail_after(5):
        await journal.wait()  # questions may keep coming: the wait is bounded
    assert time.monotonic() - started >= 0.1


def _input(session: str, **fields: Any) -> dict[str, Any]:
    return {"session_id": session, "cwd": "/srv/app", "transcript_path": f"/h/p/{session}.jsonl", **fields}


async def test_a_prompts_episode_waits_for_quiet_but_not_for_a_reader(home: Home) -> None:
    async with Daemon(home.settings) as daemon:
        await daemon.index.built()
        daemon.index.quiet.quiet_s = daemon.index.quiet.longest_s = 60  # never quiet, in this test
        await daemon.hooks.handle("UserPromptSubmit", _input("s-a", prompt="which day do we deploy?"), "")
        await anyio.sleep(0.3)
        assert daemon.recording.journal.pending == 1  # journaled (durable), not stored yet
        # Another session's first hook reads its own history only: it does not store s-a's episode.
        await daemon.hooks.handle("SessionStart", _input("s-b", source="startup"), "")
        await daemon.hooks.handle("UserPromptSubmit", _input("s-b", prompt="and the staging reset?"), "")
        await anyio.sleep(0.3)
        assert daemon.recording.journal.pending == 2
        # Reading s-a's episodes stores them first, without waiting for quiet.
        with anyio.fail_after(10):
            await daemon.recording.session_flushed("s-a")
        assert daemon.recording.journal.pending == 0
        _, history = await daemon.calls(daemon.store.session_state, "s-a")
        assert (history.turn, history.last_prompt) == (1, "which day do we deploy?")
