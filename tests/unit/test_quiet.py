"""The background store work waits for the hooks' questions to go quiet (mnemo.daemon.quiet): a
hook's episode and rows reach the store after a quiet moment, or at once when something must read
them; a new session's first hook does not wait for another session's episodes to be stored."""

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


async def test_a_hooks_writes_wait_for_quiet_but_not_for_a_reader(home: Home) -> None:
    async with Daemon(home.settings) as daemon:
        await daemon.index.built()
        daemon.index.quiet.quiet_s = daemon.index.quiet.longest_s = 60  # never quiet, in this test
        await daemon.hooks.handle("UserPromptSubmit", _input("s-a", prompt="which day do we deploy?"), "")
        await anyio.sleep(0.3)
        assert daemon.recording.journal.pending == 1  # journaled (durable), not stored yet
        # Another session's first hooks read their own history only: s-a's episode stays unstored.
        await daemon.hooks.handle("SessionStart", _input("s-b", source="startup"), "")
        await daemon.hooks.handle("UserPromptSubmit", _input("s-b", prompt="and the staging reset?"), "")
        await anyio.sleep(0.3)
        assert daemon.recording.journal.pending == 2
        # Their rows wait too, until a reader needs them: stats count both sessions.
        with anyio.fail_after(10):
            stats = await daemon.ledger.stats(1)
        assert stats.sessions == 2
        # s-a picked up again (dropped from memory, as after SessionEnd): its first hook has its
        # episode stored before reading its history, so it goes on at turn 2.
        daemon.hooks.sessions.drop("s-a")
        with anyio.fail_after(10):
            await daemon.hooks.handle("UserPromptSubmit", _input("s-a", prompt="and on Fridays?"), "")
        state = daemon.hooks.sessions.get("s-a")
        assert state is not None and state.turn == 2
        with anyio.fail_after(10):
            await daemon.recording.journal_flushed()
        assert daemon.recording.journal.pending == 0
