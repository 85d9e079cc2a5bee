"""The usage audit: cited → used, the decision model's probability otherwise (usage_audit =
"model"), and suppression of memories clearly unused 6 times in 30 days (the daemon's hook service
in this process, with the real store, index and embedder, a scripted model over HTTP, and a clock
the test moves). Without a model: tests/unit/test_usage_signal.py."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest

from mnemo.api.recall import RecallRequest
from mnemo.clock import as_stored
from mnemo.daemon.hook_events import HookEvents
from mnemo.daemon.runtime import Daemon
from mnemo.memories import RememberRequest
from mnemo.store import Store
from mnemo.store.usage import SessionRow, VerdictRow
from mnemo.usage.audit import UNUSED_BELOW, USED_AT, verdict_of
from mnemo.usage.budget import estimate_tokens
from mnemo.usage.stats import render_html
from mnemo.vocabulary import MemoryType
from tests.helpers import Clock, Home
from tests.llm_server import LLMServer

pytestmark = pytest.mark.anyio
WORKSPACE = "workspace:/srv/app"
DEPLOY = "Deploys happen on Thursdays because QA tests on Wednesday"
STAGING = "The staging database is reset from a snapshot every night at 02:00"


@asynccontextmanager
async def hook_service(home: Home, llm_url: str | None, clock: Clock) -> AsyncIterator[Daemon]:
    """A daemon runtime in this process (no HTTP), its hooks on the test's clock."""
    env = {"MNEMO_LLM_URL": llm_url, "MNEMO_LLM_MODEL": "test-model", "MNEMO_USAGE_AUDIT": "model"}
    env = env if llm_url else {}
    async with Daemon(home.with_env(**env).settings, clock=clock) as daemon:
        await daemon.index.built()
        yield daemon


def _input(session: str, **fields: Any) -> dict[str, Any]:
    return {
        "session_id": session,
        "cwd": "/srv/app",
        "transcript_path": f"/h/.claude/projects/p/{session}.jsonl",
        **fields,
    }


async def _turn(daemon: Daemon, session: str, prompt: str, answer: str) -> str:
    """One turn: the prompt's injected block, then the answer (which queues the audit)."""
    out = await daemon.hooks.handle("UserPromptSubmit", _input(session, prompt=prompt), "")
    block = json.loads(out)["hookSpecificOutput"]["additionalContext"] if out else ""
    await daemon.hooks.handle("Stop", _input(session, last_assistant_message=answer), "")
    return block


async def _audited(daemon: Daemon, count: int) -> None:
    with anyio.fail_after(30):
        while daemon.ledger.audits_done < count:
            await anyio.sleep(0.02)


def _verdicts(store: Store, session: str) -> list[VerdictRow]:
    """The verdicts stored for ``session``, in turn order, read from their table (production reads
    only their sums, so the store has no reader for the rows)."""
    columns = [f.name for f in dataclasses.fields(VerdictRow)]
    rows = store._db.current_rows(
        "usage_verdicts", columns, "session = {s:String}", {"s": session}, "turn, memory", 1_000
    )
    found = []
    for row in rows:
        values = dict(zip(columns, row, strict=True))
        found.append(
            VerdictRow(
                **{**values, "at": as_stored(values["at"]), "probability": float(values["probability"])}
            )
        )
    return found


def _session_row(store: Store, session: str) -> SessionRow | None:
    row, _ = store.session_state(session)
    return row


def _script(server: LLMServer) -> None:
    # "Did the ANSWER use the MEMORY?" A) yes B) no — the answer text decides.
    server.answer(contains="ANSWER: Tuesday", choices={"A": 0.30, "B": 0.70})  # used (≥ 0.08)
    server.answer(contains="ANSWER: maybe", choices={"B": 0.95, "A": 0.05})  # unclear
    server.answer(contains="ANSWER: ", choices={"B": 0.99, "A": 0.01})  # clearly unused


def test_thresholds() -> None:
    assert verdict_of(USED_AT) == "used"
    assert verdict_of(0.05) == "unclear"
    assert verdict_of(UNUSED_BELOW) == "unclear"
    assert verdict_of(0.0299) == "unused"


async def test_a_cited_memory_is_used_an_unrelated_answer_clearly_unused(
    home: Home, llm_server: LLMServer
) -> None:
    _script(llm_server)
    clock = Clock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC))
    async with hook_service(home, llm_server.url, clock) as daemon:
        deploy = await daemon.remembering.remember(
            RememberRequest(content=DEPLOY, type=MemoryType.DECISION, namespace=WORKSPACE)
        )
        block = await _turn(daemon, "s-1", "which day do we deploy?", f"Thursdays, as decided [{deploy.id}].")
        assert deploy.id in block
        block = await _turn(daemon, "s-2", "which day do we deploy?", "I renamed the variable in utils.py.")
        assert deploy.id in block
        block = await _turn(daemon, "s-3", "which day do we deploy?", "maybe later")
        block = await _turn(daemon, "s-4", "which day do we deploy?", "Tuesday, I think")
        await _audited(daemon, 4)
        verdicts = {s: _verdicts(daemon.store, s) for s in ("s-1", "s-2", "s-3", "s-4")}
    assert [(v.verdict, v.method) for v in verdicts["s-1"]] == [("used", "citation")]
    [unused] = verdicts["s-2"]
    assert (unused.verdict, unused.method, unused.memory, unused.turn) == ("unused", "logprobs", deploy.id, 1)
    assert unused.probability == pytest.approx(0.01, abs=1e-3)
    assert [v.verdict for v in verdicts["s-3"]] == ["unclear"]
    assert [v.verdict for v in verdicts["s-4"]] == ["used"]
    # The model was asked only where there was no citation, and saw the memory and the answer.
    asked = [p for p in llm_server.prompts() if "Did the ANSWER use the MEMORY" in p]
    assert len(asked) == 3
    assert all(DEPLOY in p for p in asked)


async def test_six_clear_non_uses_in_30_days_stop_injection_but_not_recall(
    home: Home, llm_server: LLMServer
) -> None:
    _script(llm_server)
    clock = Clock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC))
    question = "is the staging database reset at night?"
    async with hook_service(home, llm_server.url, clock) as daemon:
        staging = await daemon.remembering.remember(
            RememberRequest(content=STAGING, type=MemoryType.FACT, namespace=WORKSPACE)
        )
        # Day 0, then five more sessions within the next 30 days: each injects it, none uses it.
        for n in range(6):
            if n:
                clock.now += timedelta(days=5)
            block = await _turn(daemon, f"s-{n}", question, "I fixed the typo in the README.")
            assert staging.id in block, f"session {n}: still injected before the sixth non-use"
            await _audited(daemon, n + 1)
        block = await _turn(daemon, "s-6", question, "I fixed another typo.")
        assert staging.id not in block, "six clear non-uses in 30 days: no longer injected"
        found = await daemon.recall.recall(RecallRequest(query=question))
        assert staging.id in [hit.memory.id for hit in found.memories], "explicit recall still finds it"
        await _audited(daemon, 6)  # s-6 had nothing injected, so no audit
        # Day 0's non-use leaves the 30-day window: five remain, and it is injected again.
        clock.now = datetime(2026, 3, 2, 9, 0, tzinfo=UTC) + timedelta(days=30, hours=1)
        block = await _turn(daemon, "s-7", question, "done")
        assert staging.id in block


async def test_a_use_starts_the_count_of_non_uses_over(home: Home, llm_server: LLMServer) -> None:
    _script(llm_server)
    clock = Clock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC))
    question = "is the staging database reset at night?"
    async with hook_service(home, llm_server.url, clock) as daemon:
        staging = await daemon.remembering.remember(
            RememberRequest(content=STAGING, type=MemoryType.FACT, namespace=WORKSPACE)
        )
        for n in range(5):
            clock.now += timedelta(hours=1)
            await _turn(daemon, f"s-{n}", question, "unrelated work")
        clock.now += timedelta(hours=1)
        await _turn(daemon, "s-used", question, f"Yes, nightly [{staging.id}].")
        for n in range(5, 10):
            clock.now += timedelta(hours=1)
            await _turn(daemon, f"s-{n}", question, "unrelated work")
        await _audited(daemon, 11)
        clock.now += timedelta(minutes=2)  # past the ledger's cache of what is suppressed
        block = await _turn(daemon, "s-10", question, "unrelated")
        assert staging.id in block, "five non-uses since the use: still injected"
        await _audited(daemon, 12)
        clock.now += timedelta(minutes=2)
        block = await _turn(daemon, "s-11", question, "unrelated")
        assert staging.id not in block, "six since the use: suppressed"


async def test_without_a_model_an_unrelated_answer_is_clearly_unused_by_the_signal(home: Home) -> None:
    clock = Clock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC))
    async with hook_service(home, None, clock) as daemon:
        deploy = await daemon.remembering.remember(
            RememberRequest(content=DEPLOY, type=MemoryType.DECISION, namespace=WORKSPACE)
        )
        await _turn(daemon, "s-a", "which day do we deploy?", f"Thursday [{deploy.id}]")
        for n in range(7):
            await _turn(daemon, f"s-{n}", "which day do we deploy?", "unrelated")
        await _audited(daemon, 8)
        verdicts = [v for n in range(7) for v in _verdicts(daemon.store, f"s-{n}")]
        assert [(v.verdict, v.method) for v in _verdicts(daemon.store, "s-a")] == [("used", "citation")]
        assert {(v.verdict, v.method) for v in verdicts} == {("unused", "signal")}


async def test_stats_count_what_was_injected_and_used_and_read_the_share_from_transcripts(
    home: Home, llm_server: LLMServer, tmp_path: Path
) -> None:
    _script(llm_server)
    clock = Clock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC))
    # A Claude Code transcript: two model calls of one session (one message's usage is repeated
    # on each of its content blocks, and counts once).
    transcript = tmp_path / "s-read.jsonl"
    calls = [("msg_1", 1000, 500, 20_000), ("msg_1", 1000, 500, 20_000), ("msg_2", 200, 0, 21_300)]
    lines = []
    for message_id, fresh, created, cached in calls:
        usage = {
            "input_tokens": fresh,
            "cache_creation_input_tokens": created,
            "cache_read_input_tokens": cached,
        }
        message = {
            "id": message_id,
            "role": "assistant",
            "content": [{"type": "text", "text": "x"}],
            "usage": usage,
        }
        lines.append(json.dumps({"type": "assistant", "sessionId": "s-read", "message": message}))
    transcript.write_text("\n".join(lines))
    async with hook_service(home, llm_server.url, clock) as daemon:
        deploy = await daemon.remembering.remember(
            RememberRequest(content=DEPLOY, type=MemoryType.DECISION, namespace=WORKSPACE)
        )
        start = await daemon.hooks.handle(
            "SessionStart", {**_input("s-read"), "transcript_path": str(transcript)}, ""
        )
        block = json.loads(start)["hookSpecificOutput"]["additionalContext"]
        assert deploy.id in block
        await _turn(daemon, "s-read", "which day do we deploy?", f"Thursdays [{deploy.id}]")
        await _turn(daemon, "s-2", "which day do we deploy?", "unrelated")
        await _audited(daemon, 2)
        await daemon.ledger.written()  # the ledger writes injections after the hook answered
        stats = await daemon.ledger.stats(7)
    assert (stats.sessions, stats.memories_injected, stats.used, stats.unused, stats.unclear) == (
        2,
        2,
        1,
        1,
        0,
    )
    assert stats.tokens_injected >= 2 * estimate_tokens(DEPLOY)
    assert stats.sessions_read == 1
    assert stats.tokens_read == 1000 + 500 + 20_000 + 200 + 21_300
    assert stats.memory_share == pytest.approx(estimate_tokens(block) / stats.tokens_read)
    assert [d.day.isoformat() for d in stats.days] == ["2026-03-02"]
    page = render_html(stats)
    assert "<svg" in page and "2026-03-02: 2 injected" in page and "2026-03-02: 1 used" in page


async def test_an_endpoint_without_logprobs_says_used_or_unclear_never_clearly_unused(
    home: Home, llm_server: LLMServer
) -> None:
    llm_server.supports_logprobs = False
    llm_server.answer(contains="ANSWER: Tuesday", choices={"A": 0.6, "B": 0.4})  # it writes "A": yes
    llm_server.answer(contains="ANSWER: ", choices={"B": 0.99, "A": 0.01})  # it writes "B": no
    clock = Clock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC))
    async with hook_service(home, llm_server.url, clock) as daemon:
        deploy = await daemon.remembering.remember(
            RememberRequest(content=DEPLOY, type=MemoryType.DECISION, namespace=WORKSPACE)
        )
        await _turn(daemon, "s-yes", "which day do we deploy?", "Tuesday, I think")
        for n in range(7):
            await _turn(daemon, f"s-no-{n}", "which day do we deploy?", "unrelated work")
        await _audited(daemon, 8)
        [yes] = _verdicts(daemon.store, "s-yes")
        noes = [v for n in range(7) for v in _verdicts(daemon.store, f"s-no-{n}")]
        block = await _turn(daemon, "s-after", "which day do we deploy?", "unrelated")
    assert (yes.verdict, yes.method) == ("used", "answer")
    assert {(v.verdict, v.method) for v in noes} == {("unclear", "answer")}
    assert deploy.id in block, "a bare 'no' seven times does not suppress"


async def test_a_session_picked_up_again_keeps_its_spend_and_its_turn(home: Home) -> None:
    """Two blocks in one turn (a prompt, then the context compacted), then the daemon's memory of
    the session lost: what it spent and where it was come back from the store. (No model: the
    audit its Stop queues must not leave a model call open when the test ends.)"""
    clock = Clock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC))
    async with hook_service(home, None, clock) as daemon:
        await daemon.remembering.remember(
            RememberRequest(content=DEPLOY, type=MemoryType.DECISION, namespace=WORKSPACE)
        )
        await daemon.remembering.remember(
            RememberRequest(content=STAGING, type=MemoryType.FACT, namespace=WORKSPACE)
        )
        await daemon.hooks.handle("UserPromptSubmit", _input("s-r", prompt="which day do we deploy?"), "")
        await daemon.hooks.handle("SessionStart", _input("s-r", source="compact"), "")
        state = daemon.hooks.sessions.get("s-r")
        assert state is not None and state.blocks == 2
        spent, turn = state.tokens, state.turn
        await daemon.ledger.written()  # the rows are written after the answers
        d = daemon  # a new daemon's view of the same store: hook handling with no sessions in memory
        again = HookEvents(d.calls, d.settings, d.recording, d.recall, d.keep, d.ledger, d.distil, clock)
        await again.handle("Stop", _input("s-r", last_assistant_message="Thursdays."), "")
        resumed = again.sessions.get("s-r")
        assert resumed is not None
        assert (resumed.tokens, resumed.turn, resumed.blocks) == (spent, turn, 2)
        await again.handle("UserPromptSubmit", _input("s-r", prompt="and staging?"), "")
        assert resumed.turn == turn + 1


async def test_session_end_marks_the_session_ended(home: Home) -> None:
    clock = Clock(datetime(2026, 3, 2, 9, 0, tzinfo=UTC))
    async with hook_service(home, None, clock) as daemon:
        await daemon.hooks.handle("SessionStart", _input("s-end", source="startup"), "")
        clock.now += timedelta(minutes=5)
        await daemon.hooks.handle("SessionEnd", _input("s-end", reason="prompt_input_exit"), "")
        with anyio.fail_after(10):
            while (row := _session_row(daemon.store, "s-end")) is None or row.ended_at is None:
                await anyio.sleep(0.05)
    assert (row.started_at, row.ended_at, row.end_reason) == (
        datetime(2026, 3, 2, 9, 0, tzinfo=UTC),
        datetime(2026, 3, 2, 9, 5, tzinfo=UTC),
        "prompt_input_exit",
    )
    assert row.client == "claude-code" and row.workspace == WORKSPACE
