"""A prompt's block holds what scores at least prompt_floor of the best memory's score; a
session's start gets what the workspace used (the daemon's hook service in this process, with the
real store, index and embedder)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import anyio
import pytest

from mnemo.daemon.runtime import Daemon
from mnemo.memories import RememberRequest
from mnemo.vocabulary import MemoryType
from tests.helpers import Clock, Home

pytestmark = pytest.mark.anyio
WORKSPACE = "workspace:/srv/app"
STAGING = "The staging database listens on port 6432 behind pgbouncer"
LOGS = "Staging logs are kept for 14 days in Loki"
QUESTION = "which port does the staging database use with pgbouncer?"


@asynccontextmanager
async def hook_service(home: Home, **env: str) -> AsyncIterator[Daemon]:
    clock = Clock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC))
    async with Daemon(home.with_env(**env).settings, clock=clock) as daemon:
        await daemon.index.built()
        yield daemon


def _input(session: str, **fields: Any) -> dict[str, Any]:
    return {"session_id": session, "cwd": "/srv/app", "transcript_path": f"/h/{session}.jsonl", **fields}


async def _block(daemon: Daemon, event: str, session: str, **fields: Any) -> str:
    out = await daemon.hooks.handle(event, _input(session, **fields), "")
    return json.loads(out)["hookSpecificOutput"]["additionalContext"] if out else ""


async def _remember(daemon: Daemon, *texts: str) -> list[str]:
    ids = []
    for text in texts:
        memory = await daemon.remembering.remember(
            RememberRequest(content=text, type=MemoryType.FACT, namespace=WORKSPACE)
        )
        ids.append(memory.id)
    return ids


@pytest.mark.parametrize(("floor", "both"), [("0.5", False), ("0", True)])
async def test_a_prompt_gets_what_scores_near_the_best_and_not_what_merely_shares_a_word(
    home: Home, floor: str, both: bool
) -> None:
    async with hook_service(home, MNEMO_PROMPT_FLOOR=floor) as daemon:
        staging, logs = await _remember(daemon, STAGING, LOGS)
        block = await _block(daemon, "UserPromptSubmit", "s-1", prompt=QUESTION)
    assert staging in block
    assert (logs in block) is both


async def test_a_sessions_start_gets_what_the_workspace_used(home: Home) -> None:
    facts = [
        STAGING,
        LOGS,
        "Deploys go out on Thursdays with make release",
        "Frontend tests run Vitest in jsdom",
    ]
    async with hook_service(home) as daemon:
        texts = dict(zip(await _remember(daemon, *facts), facts, strict=True))
        start = await _block(daemon, "SessionStart", "s-0", source="startup")
        given = [i for i in texts if i in start]
        assert len(given) == 3, "a new workspace: a few"
        answer = f"{texts[given[-1]]}."  # the agent states one of them: used
        await daemon.hooks.handle("Stop", _input("s-0", last_assistant_message=answer), "")
        with anyio.fail_after(30):
            while daemon.ledger.audits_done < 1:
                await anyio.sleep(0.02)
        person = daemon.settings.namespace_of_person
        assert [(await daemon.calls(daemon.store.memory_usage, i, person)).used for i in given] == [0, 0, 1]
        await daemon.ledger.written()  # the session's row, which ties its verdicts to the workspace
        start = await _block(daemon, "SessionStart", "s-1", source="startup")
    order = [i for i in sorted(texts, key=start.find) if i in start]
    assert order[0] == given[-1], "what the workspace used comes first"
    assert len(order) == 4, "then a few others"
