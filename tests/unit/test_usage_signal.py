"""The usage audit without a model: the turn's answer and acts tell used from unused
(mnemo.usage.signal), and what a workspace never uses stops being injected there — the daemon's
hook service in this process, with the real store, index and embedder, and a clock the test moves."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import pytest

from mnemo.daemon.runtime import Daemon
from mnemo.memories import RememberRequest
from mnemo.usage import signal
from mnemo.usage.signal import Act, TurnActs, act_of, turn_of
from mnemo.usage.suppression import asked_for
from mnemo.vocabulary import MemoryType
from tests.helpers import Clock, Home

STAGING = "The staging database is pg-stg-2 on port 6432, behind pgbouncer"
PATCH = "*** Begin Patch\n*** Update File: deploy/db.env\n@@\n-DB_PORT=5432\n+DB_PORT=6432\n*** End Patch"


def _acts(prompt: str, answer: str, *calls: tuple[str, object]) -> TurnActs:
    return turn_of(prompt, answer, (act_of(name, tool_input) for name, tool_input in calls))


def test_a_command_that_uses_the_memorys_values_is_use_though_the_answer_never_says_them() -> None:
    turn = _acts(
        "count the users on staging",
        "There are 1,204 users.",
        ("Bash", {"command": "psql -h pg-stg-2 -p 6432 -c 'select count(*) from users'"}),
    )
    assert signal.score(STAGING, turn) >= signal.USED_AT


def test_an_edit_elsewhere_is_clearly_unused() -> None:
    turn = _acts(
        "fix the typo in the README",
        "Fixed.",
        ("Edit", {"file_path": "README.md", "old_string": "teh", "new_string": "the"}),
    )
    assert signal.score(STAGING, turn) < signal.UNUSED_BELOW


def test_an_edit_counts_by_what_it_writes_not_by_what_it_removes() -> None:
    removed = _acts(
        "tidy the env file",
        "Done.",
        ("Edit", {"file_path": "deploy/db.env", "old_string": "pg-stg-2:6432", "new_string": ""}),
    )
    written = _acts(
        "tidy the env file",
        "Done.",
        ("Edit", {"file_path": "deploy/db.env", "old_string": "", "new_string": "pg-stg-2:6432"}),
    )
    assert signal.score(STAGING, removed) < signal.score(STAGING, written)


def test_a_codex_patch_counts_by_its_added_lines() -> None:
    text, kind = act_of("apply_patch", PATCH)
    assert kind == "edit" and "DB_PORT=6432" in text and "5432" not in text


def test_reading_a_file_is_looking_not_acting() -> None:
    assert act_of("Read", {"file_path": "deploy/db.env"}) == Act("deploy/db.env", "look")


def test_terms_the_prompt_already_held_weigh_less() -> None:
    answer = "Use pg-stg-2 on port 6432."
    echoed = signal.score(STAGING, TurnActs("is staging pg-stg-2 on port 6432?", answer))
    told = signal.score(STAGING, TurnActs("where is the staging database?", answer))
    assert echoed < told


def test_an_answer_in_spanish_uses_the_memorys_identifiers() -> None:
    turn = TurnActs("¿dónde está la base de staging?", "Está en pg-stg-2, puerto 6432, detrás de pgbouncer.")
    assert signal.score(STAGING, turn) >= signal.USED_AT


def test_a_prompt_asks_for_a_memory_when_it_names_what_the_memory_holds() -> None:
    assert asked_for(STAGING, "connect to pg-stg-2 on 6432 through pgbouncer")
    assert not asked_for(STAGING, "fix the flaky login test")


# -- the daemon ---------------------------------------------------------------------------------

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def hook_service(home: Home, clock: Clock) -> AsyncIterator[Daemon]:
    async with Daemon(home.settings, clock=clock) as daemon:
        await daemon.index.built()
        yield daemon


def _input(session: str, cwd: str, **fields: Any) -> dict[str, Any]:
    return {"session_id": session, "cwd": cwd, "transcript_path": f"/h/{session}.jsonl", **fields}


async def _turn(
    daemon: Daemon, session: str, cwd: str, prompt: str, answer: str, *calls: tuple[str, Any]
) -> str:
    out = await daemon.hooks.handle("UserPromptSubmit", _input(session, cwd, prompt=prompt), "")
    for n, (tool, tool_input) in enumerate(calls):
        payload = _input(
            session, cwd, tool_name=tool, tool_input=tool_input, tool_response="ok", tool_use_id=f"t{n}"
        )
        await daemon.hooks.handle("PostToolUse", payload, "")
    await daemon.hooks.handle("Stop", _input(session, cwd, last_assistant_message=answer), "")
    return json.loads(out)["hookSpecificOutput"]["additionalContext"] if out else ""


async def _audited(daemon: Daemon, count: int) -> None:
    with anyio.fail_after(30):
        while daemon.ledger.audits_done < count:
            await anyio.sleep(0.02)


async def test_without_a_model_the_agents_command_tells_that_it_used_the_memory(home: Home) -> None:
    clock = Clock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC))
    async with hook_service(home, clock) as daemon:
        staging = await daemon.remembering.remember(
            RememberRequest(content=STAGING, type=MemoryType.FACT, namespace="workspace:/srv/app")
        )
        command = {"command": "psql -h pg-stg-2 -p 6432 -c 'select count(*) from users'"}
        block = await _turn(
            daemon,
            "s-1",
            "/srv/app",
            "how many users are on the staging database?",
            "1,204.",
            ("Bash", command),
        )
        assert staging.id in block
        await _audited(daemon, 1)
        usage = await daemon.calls(daemon.store.memory_usage, staging.id, daemon.settings.namespace_of_person)
    assert (usage.used, usage.unused, usage.unclear) == (1, 0, 0)


async def test_unused_in_one_workspace_it_stops_there_only_until_asked_for_or_brought_back(
    home: Home,
) -> None:
    clock = Clock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC))
    question = "is the staging database ready for the migration?"
    async with hook_service(home, clock) as daemon:
        person = daemon.settings.namespace_of_person
        staging = await daemon.remembering.remember(
            RememberRequest(content=STAGING, type=MemoryType.FACT, namespace=person)
        )
        for n in range(6):  # six sessions in /srv/app given it, none using it
            clock.now += timedelta(hours=1)
            block = await _turn(daemon, f"a-{n}", "/srv/app", question, "I fixed a typo in the README.")
            assert staging.id in block
        await _audited(daemon, 6)
        clock.now += timedelta(minutes=2)
        assert staging.id not in await _turn(daemon, "a-6", "/srv/app", question, "done"), (
            "suppressed in /srv/app"
        )
        assert staging.id in await _turn(daemon, "b-0", "/srv/web", question, "done"), (
            "not in another workspace"
        )
        asking = "check that pg-stg-2 on port 6432 answers through pgbouncer"
        assert staging.id in await _turn(daemon, "a-7", "/srv/app", asking, "done"), (
            "a prompt that asks for it gets it"
        )
        stats = await daemon.ledger.stats(7)
        [suppressed] = stats.suppressed
        assert (suppressed.memory, suppressed.workspace, suppressed.unused) == (
            staging.id,
            "workspace:/srv/app",
            6,
        )
        page = await daemon.browsing.memory_page(staging.id)
        assert page.usage.suppressed == ["workspace:/srv/app"]
        done = await daemon.ledger.unsuppress(staging.id, person)
        assert done.workspaces == ["workspace:/srv/app"]
        assert staging.id in await _turn(daemon, "a-8", "/srv/app", question, "done"), "brought back"
        assert (await daemon.ledger.stats(7)).suppressed == []


async def test_a_suppressed_memory_that_a_prompts_recall_ranks_first_by_far_gets_through_there(
    home: Home,
) -> None:
    """A question asks for a value it cannot name ("what port…?" holds none of the memory's
    values): where recall ranks the suppressed memory first by far, the prompt gets it; where
    another memory ranks close to it (a prompt on the shared subject), it stays out."""
    clock = Clock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC))
    subject = "is the staging database ready for the migration?"
    async with hook_service(home, clock) as daemon:
        person = daemon.settings.namespace_of_person
        staging, web = [
            await daemon.remembering.remember(
                RememberRequest(content=text, type=MemoryType.FACT, namespace=person)
            )
            for text in (STAGING, "The staging database migrations run from the web-stg-1 host")
        ]
        for n in range(6):
            clock.now += timedelta(hours=1)
            await _turn(daemon, f"a-{n}", "/srv/app", subject, "I fixed a typo in the README.")
        await _audited(daemon, 6)
        clock.now += timedelta(minutes=2)
        places = ["workspace:/srv/app", person]
        port = "what port is the staging db on?"
        assert (await daemon.recall.related_current(port, places, 24)).leader == staging.id
        assert not asked_for(STAGING, port)
        assert staging.id in await _turn(daemon, "a-6", "/srv/app", port, "done"), "ranked first by far"
        # The subject's prompt ranks the other memory first (0.70 against 0.36 here): no lead of its.
        assert (await daemon.recall.related_current(subject, places, 24)).leader in ("", web.id)
        assert staging.id not in await _turn(daemon, "a-7", "/srv/app", subject, "done"), "still suppressed"


async def test_with_suppression_off_what_is_never_used_is_still_injected_and_listed(home: Home) -> None:
    clock = Clock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC))
    question = "is the staging database ready for the migration?"
    async with Daemon(home.with_env(MNEMO_SUPPRESS_UNUSED="false").settings, clock=clock) as daemon:
        await daemon.index.built()
        staging = await daemon.remembering.remember(
            RememberRequest(content=STAGING, type=MemoryType.FACT, namespace="workspace:/srv/app")
        )
        for n in range(6):
            clock.now += timedelta(hours=1)
            await _turn(daemon, f"a-{n}", "/srv/app", question, "I fixed a typo in the README.")
        await _audited(daemon, 6)
        clock.now += timedelta(minutes=2)
        assert staging.id in await _turn(daemon, "a-6", "/srv/app", question, "done"), "still injected"
        stats = await daemon.ledger.stats(7)
        [listed] = stats.suppressed
        assert (listed.memory, listed.workspace) == (staging.id, "workspace:/srv/app")
        assert not stats.suppressing, "stats say what is listed is injected all the same"


def test_a_prompt_on_the_memorys_subject_does_not_ask_for_it() -> None:
    assert not asked_for(STAGING, "is the staging database ready for the migration?")
