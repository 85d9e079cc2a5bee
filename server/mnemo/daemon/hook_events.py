"""The hooks' side of the daemon: each host event → what to record, what to inject, what to print.

``POST /v1/hooks/<Event>`` carries the host's hook JSON unchanged (see :mod:`mnemo.hook_process`); the
answer (text/plain) is exactly what the hook process prints (often nothing).

- SessionStart: register the session; inject the curated sets of ``keep`` (the workspace's and
  the person's, whole) and what this workspace's sessions used lately, then a few others
  (:mod:`mnemo.usage.start`).
- UserPromptSubmit: record what the person typed of the prompt (:mod:`mnemo.typed`) as this turn's
  episode; recall on it; inject a block of what scores ``prompt_floor`` of the best or more. A
  prompt starting with ``<task-notification>`` is a background task's notice, not the person:
  nothing is recorded or injected.
- PostToolUse: record the tool's result (mnemo's own tools excepted: their output is memory).
- Stop: record the final answer; queue the usage audit of what this turn was given.
- PreCompact: distil the session now. SessionEnd: mark it ended.

Injection rules: ≤ 800 tokens a block and 4,000 a session (:mod:`mnemo.usage.budget`),
never a memory this session already has in context, never one whose sources are this session's
episodes, never one suppressed in this workspace (clearly unused there 6 times in 30 days, not
used since) unless the prompt asks for it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import socket
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from mnemo import transcripts
from mnemo.api.recall import MAX_QUERY_CHARS
from mnemo.clock import utc_now
from mnemo.config import Settings
from mnemo.daemon.hook_ledger import AuditJob, HookLedger
from mnemo.daemon.keeping import KeepSets
from mnemo.daemon.recalling import Recall, Related
from mnemo.daemon.recording import Recording
from mnemo.daemon.starting import start_candidates
from mnemo.daemon.storecalls import StoreCalls
from mnemo.distill.newest import newest_led
from mnemo.episodes import EpisodeIn, Role, clip_text
from mnemo.errors import InputError
from mnemo.injected import strip_injected
from mnemo.jsonread import read_json
from mnemo.keep import render_injection
from mnemo.paths import SPOOL_NAME
from mnemo.private import remove_private
from mnemo.store.usage import InjectionRow, SessionRow
from mnemo.typed import typed
from mnemo.usage.budget import BLOCK_TOKENS, SESSION_TOKENS, estimate_tokens, pack
from mnemo.usage.sessions import SessionBook, SessionState
from mnemo.usage.suppression import left_out_of_prompt
from mnemo.workspace import workspace_namespace

logger = logging.getLogger(__name__)

EVENTS = ("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop", "PreCompact", "SessionEnd")
MAX_SESSION_CHARS = 500  # as an episode's session
MAX_PATH_CHARS = 4_096  # cwd and transcript_path, as an episode's cwd
CANDIDATES = 24  # memories ranked per injection, before the session's filters
SPOOL_POLL_S = 5.0
# A live event waits at most this long for the events spooled before the daemon was up.
SPOOL_FIRST_WAIT_S = 0.5  # well under the hooks' own deadlines (0.8–3 s)


class HookEvents:
    """Each host event: what to record, what to inject, what the hook prints."""

    def __init__(
        self,
        calls: StoreCalls,
        settings: Settings,
        recording: Recording,
        recall: Recall,
        keep: KeepSets,
        ledger: HookLedger,
        distil: Callable[[str], object],
        clock: Callable[[], datetime] = utc_now,
    ) -> None:
        self._calls = calls
        self.store = calls.store
        self._settings = settings
        self._recording = recording
        self._recall = recall
        self._keep = keep
        self.ledger = ledger
        self._distil = distil
        self._clock = clock
        self.sessions = SessionBook()
        self._loading: dict[str, anyio.Lock] = {}
        self._host = socket.gethostname()
        # Events spooled while the daemon was down happened before any live one: live events wait
        # (bounded) for their first replay, or a PreCompact could distil a session without them.
        self._spool_replayed = anyio.Event()
        if not self.spooled():
            self._spool_replayed.set()

    # -- the API -------------------------------------------------------------------------------

    async def handle(self, event: str, payload: Mapping[str, Any], client: str, *, live: bool = True) -> str:
        """What to print for ``event`` (an empty string: nothing). ``live=False``: an event replayed
        from the spool — recorded, but nothing is injected (nobody would read it)."""
        if event not in EVENTS:
            raise InputError(f"unknown hook event {event!r}; known: {', '.join(EVENTS)}")
        session_id = payload.get("session_id")
        if not isinstance(session_id, str) or not session_id.strip():
            raise InputError("the hook input has no session_id")
        session_id = _session_key(session_id)
        client = client or _client_of(payload)
        if live and not self._spool_replayed.is_set():
            with anyio.move_on_after(SPOOL_FIRST_WAIT_S):
                await self._spool_replayed.wait()
        if event == "SessionEnd":
            await self._end(session_id, client, payload)
            self._distil(session_id)  # no need to wait for the session to go quiet
            return ""
        if event == "UserPromptSubmit":
            return await self._prompt(session_id, client, payload, live)
        state = await self._session(session_id, client, payload)
        match event:
            case "SessionStart":
                return await self._start(state, payload) if live else ""
            case "PostToolUse":
                await self._tool_result(state, payload)
            case "Stop":
                await self._stop(state, payload)
            case "PreCompact":
                self._distil(state.id)
        return ""

    async def run(self) -> None:
        """Replay the events hooks spooled while the daemon was down (:mod:`mnemo.hook_process`):
        now, then every few seconds (a hook that raced the daemon's start may spool after)."""
        while True:
            try:
                await self.replay_spool()
            except Exception:
                logger.exception("replaying the hooks' spool failed")
            self._spool_replayed.set()
            await anyio.sleep(SPOOL_POLL_S)

    def spooled(self) -> bool:
        """Whether hook events wait in the spool (or a replay of it was cut short)."""
        spool = self._settings.run_dir / SPOOL_NAME
        return spool.exists() or spool.with_suffix(".replaying").exists()

    async def replay_spool(self) -> int:
        """Replay the spooled events in order; return how many were replayed."""
        spool = self._settings.run_dir / SPOOL_NAME
        taken = spool.with_suffix(".replaying")  # a daemon stopped mid-replay left this: first
        if not taken.exists():
            try:
                spool.replace(taken)  # new hook events start a new spool meanwhile
            except FileNotFoundError:
                return 0
        lines = await anyio.to_thread.run_sync(taken.read_bytes)
        replayed = 0
        for number, line in enumerate(lines.splitlines(), 1):
            try:
                item = json.loads(line)  # the hook's own line; its input is the host's JSON
                payload = read_json(item["input"] or "{}", cut_deeper=True)
                if not isinstance(payload, dict):
                    raise InputError("the hook input is not a JSON object")
                await self.handle(str(item["event"]), payload, str(item.get("client") or ""), live=False)
                replayed += 1
            except Exception as exc:  # a bad line must not hold back the others
                logger.warning("%s:%d: spooled hook event not replayed: %r", taken, number, exc)
        taken.unlink(missing_ok=True)
        if replayed:
            logger.info("replayed %d hook events spooled while the daemon was down", replayed)
        return replayed

    # -- sessions ------------------------------------------------------------------------------

    async def _session(self, session_id: str, client: str, payload: Mapping[str, Any]) -> SessionState:
        state = self.sessions.get(session_id)
        if state is not None:
            return state
        lock = self._loading.setdefault(session_id, anyio.Lock())
        async with lock:
            state = self.sessions.get(session_id)
            if state is None:
                state = await self._load(session_id, client, payload)
        self._loading.pop(session_id, None)
        return state

    async def _load(self, session_id: str, client: str, payload: Mapping[str, Any]) -> SessionState:
        # What this daemon journaled (or replayed) of the session must be in the store before its
        # history is read; another session's episodes need not be (they wait for a quiet moment).
        await self._recording.session_flushed(session_id[:MAX_SESSION_CHARS])
        await self.ledger.session_written(session_id)  # its injections, as its history reads them
        row, history = await self._calls(self.store.session_state, session_id)
        if row is None:
            row = self._new_row(session_id, client, payload)
            self.ledger.later([row])
        person = self._settings.namespace_of_person
        state = SessionState.resumed(session_id, client, person, row.workspace, history)
        state.row = row
        return self.sessions.put(state)

    def _new_row(self, session_id: str, client: str, payload: Mapping[str, Any]) -> SessionRow:
        """The row of a session seen for the first time."""
        cwd, transcript = _cwd(payload), str(payload.get("transcript_path") or "")[:MAX_PATH_CHARS]
        person = self._settings.namespace_of_person
        return SessionRow(
            session_id, client, person, workspace_namespace(cwd or "/"), cwd, transcript, self._clock()
        )

    async def _end(self, session_id: str, client: str, payload: Mapping[str, Any]) -> None:
        state = self.sessions.get(session_id)
        row = state.row if state is not None else None
        if row is None:
            row, _ = await self._calls(self.store.session_state, session_id)
        if row is None:
            row = self._new_row(session_id, client, payload)
        now = self._clock()
        self.ledger.later(
            [dataclasses.replace(row, ended_at=now, end_reason=str(payload.get("reason") or "")[:200])]
        )
        self.sessions.drop(session_id)

    # -- events --------------------------------------------------------------------------------

    async def _start(self, state: SessionState, payload: Mapping[str, Any]) -> str:
        if payload.get("source") in ("clear", "compact"):
            state.injected.clear()  # the context that held them is gone
        found = await start_candidates(
            self._calls, self.ledger, self._recall, self._settings, person=state.person,
            workspace=state.workspace, cwd=state.row.cwd if state.row else _cwd(payload), now=self._clock(),
        )  # fmt: skip
        # The curated sets come first, whole: their own hard budgets bound them (mnemo.keep).
        kept = await self._keep.sets(state.workspace)
        kept_text = render_injection(kept.project.entries if kept.project else [], kept.user.entries)
        if kept_text:
            state.blocks += 1
            tokens = estimate_tokens(kept_text)
            row = InjectionRow(
                state.id, state.blocks, state.turn, "", "SessionStart", state.person, tokens, self._clock()
            )
            self.ledger.later([row])
            state.tokens += tokens
        return await self._inject(state, "SessionStart", Related(found, ""), before=kept_text or "")

    async def _prompt(self, session_id: str, client: str, payload: Mapping[str, Any], live: bool) -> str:
        prompt = str(payload.get("prompt") or "")
        if not transcripts.is_person_prompt(prompt):  # e.g. a background task's <task-notification>
            return ""
        # What the person typed: the IDE's context and an expanded template are not their words.
        prompt = remove_private(typed(prompt))  # neither recalled on nor kept in the session's state
        question = strip_injected(prompt).strip()[:MAX_QUERY_CHARS]
        person = self._settings.namespace_of_person
        # The host waits on this hook: the question is embedded and ranked while the session is
        # loaded and the prompt's episode stored, in the namespaces the cwd names (a session that
        # was registered in another workspace is asked again below).
        guessed = [workspace_namespace(_cwd(payload) or "/"), person]
        floor = self._settings.prompt_floor
        found = Related([], "")

        async def recall() -> None:
            nonlocal found
            if question and live:
                found = await self._recall.related_current(question, guessed, CANDIDATES, floor=floor)

        async with anyio.create_task_group() as tg:
            tg.start_soon(recall)
            state = await self._session(session_id, client, payload)
            state.turn += 1  # hosts do not retry hooks; a prompt sent again is a turn of its own
            state.prompts[state.turn] = prompt
            if prompt.strip():  # a command's template alone is a turn with no words of the person's
                await self._record(state, "prompt", prompt, Role.USER, self._settings.person, payload)
        if not live:
            return ""
        if question and [state.workspace, state.person] != guessed:
            found = await self._recall.related_current(
                question, [state.workspace, state.person], CANDIDATES, floor=floor
            )
        return await self._inject(state, "UserPromptSubmit", found, asked=question)

    async def _tool_result(self, state: SessionState, payload: Mapping[str, Any]) -> None:
        tool = str(payload.get("tool_name") or "tool")
        if transcripts.is_mnemo_tool(tool):
            return
        state.act(tool, payload.get("tool_input"))
        text = transcripts.tool_text(tool, payload.get("tool_input"), payload.get("tool_response"))
        key = str(payload.get("tool_use_id") or "") or hashlib.sha256(text.encode()).hexdigest()[:16]
        await self._record(state, f"tool:{key}", text, Role.TOOL, tool[:200], payload)

    async def _stop(self, state: SessionState, payload: Mapping[str, Any]) -> None:
        answer = str(payload.get("last_assistant_message") or "")
        if not answer.strip():
            return
        turn = state.turn
        await self._record(state, "answer", answer, Role.ASSISTANT, "assistant", payload)
        audited, acts = state.answered(turn, answer, self._recording.redact)
        if audited:
            self.ledger.audit_later(AuditJob(state.id, state.person, turn, audited, acts))

    # -- helpers -------------------------------------------------------------------------------

    async def _record(
        self, state: SessionState, part: str, text: str, role: Role, who: str, payload: Mapping[str, Any]
    ) -> None:
        text = clip_text(text, self._settings.max_episode_chars)
        episode_id = transcripts.episode_id(state.client, state.id, state.turn, part)
        episode = EpisodeIn(
            id=episode_id,
            text=text,
            who=who,
            role=role,
            session=state.id[:500],
            turn=state.turn,
            namespace=state.workspace,
            client=state.client,
            workspace=state.workspace.removeprefix("workspace:")[:500],
            cwd=_cwd(payload),
            host=self._host[:500],
        )
        await self._recording.record([episode])
        state.episodes.add(episode_id)

    async def _inject(
        self, state: SessionState, event: str, found: Related, *, before: str = "", asked: str = ""
    ) -> str:
        """The hook's output: ``before`` (already counted) and a block of the best of what was
        ``found`` that fits the budgets; '' when there is nothing to add. A prompt (``asked``)
        gets a suppressed memory it asks for, or that its recall ranks first by far."""
        ranked = found.memories
        budget = min(BLOCK_TOKENS, SESSION_TOKENS - state.tokens)
        if budget <= 0 or not ranked:
            return _context(event, before)
        left_out = await self.ledger.left_out(state.person, state.workspace)
        suppressed = left_out_of_prompt(left_out, ranked, asked, found.leader)
        # Sources the session has not seen yet: a memory noted in it (remember) or distilled from it.
        unknown = list(dict.fromkeys(s for m in ranked for s in state.unknown(m.sources)))
        if unknown:
            here = await self._calls(self.store.in_session, unknown, state.id)
            state.learn(unknown, here)
        ranked, earlier = newest_led(ranked)  # each group of one thing's values led by its newest
        fresh = [
            m
            for m in ranked
            if m.id not in state.injected and m.id not in suppressed and not state.came_from_here(m.sources)
        ]
        block = pack(fresh, budget, source=event, outdated=self._recall.code.notes(fresh), earlier=earlier)
        if block is None:
            return _context(event, before)
        now = self._clock()
        state.blocks += 1
        rows: list[InjectionRow | SessionRow] = [
            InjectionRow(state.id, state.blocks, state.turn, m.id, event, state.person, tokens, now)
            for m, tokens in zip(block.memories, block.line_tokens, strict=True)
        ]
        rows.append(
            InjectionRow(state.id, state.blocks, state.turn, "", event, state.person, block.frame_tokens, now)
        )
        self.ledger.later(rows)
        state.tokens += block.tokens
        for memory in block.memories:
            state.injected.add(memory.id)
            state.by_turn.setdefault(state.turn, []).append(memory.id)
        return _context(event, f"{before}\n{block.text}" if before else block.text)


def _session_key(session_id: str) -> str:
    """The host's session id, or for one longer than a session's field its start and a digest of
    it all: the same for every event of that session, and the turn is kept."""
    if len(session_id) <= MAX_SESSION_CHARS:
        return session_id
    digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:24]
    return f"{session_id[: MAX_SESSION_CHARS - 25]}~{digest}"


def _cwd(payload: Mapping[str, Any]) -> str:
    return str(payload.get("cwd") or "")[:MAX_PATH_CHARS]


def _client_of(payload: Mapping[str, Any]) -> str:
    """The host, when the hook command does not say (``--client``): Codex's transcripts are
    rollout-….jsonl files and its turn events carry a turn_id; anything else is Claude Code. (Not
    the environment: a Codex started from a Claude Code shell inherits CLAUDECODE=1.)"""
    name = Path(str(payload.get("transcript_path") or "")).name
    return "codex" if name.startswith("rollout-") or "turn_id" in payload else "claude-code"


def _context(event: str, text: str) -> str:
    """What a hook prints to add ``text`` to the context ('' for nothing)."""
    if not text:
        return ""
    return json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}})
