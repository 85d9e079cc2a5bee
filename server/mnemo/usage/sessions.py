"""Each hook session's state: its turn, what it was given, what came from it.

Kept in the daemon's memory and rebuilt from the store (episodes and injections) the first time a
session is seen after a restart, so a restarted daemon neither repeats a memory nor overspends.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from mnemo.injected import strip_injected
from mnemo.store.usage import SessionHistory, SessionRow
from mnemo.usage.signal import Act, TurnActs, act_of, turn_of

MAX_ACTS = 64  # tool calls kept per turn for the usage audit (the first ones)


@dataclass
class SessionState:
    id: str
    client: str
    person: str  # the person's namespace, person:<name>
    workspace: str  # workspace:<id>
    turn: int = 0
    tokens: int = 0  # injected so far
    blocks: int = 0  # injected so far
    injected: set[str] = field(default_factory=set)  # memories this session has received
    by_turn: dict[int, list[str]] = field(default_factory=dict)
    episodes: set[str] = field(default_factory=set)  # episode ids known to be of this session
    elsewhere: set[str] = field(default_factory=set)  # episode ids known to be of other sessions
    prompts: dict[int, str] = field(default_factory=dict)  # the person's prompt, per turn (audit)
    acts: dict[int, list[Act]] = field(default_factory=dict)  # tool calls' acts, per turn
    row: SessionRow | None = None  # as recorded in the store's sessions table

    @classmethod
    def resumed(
        cls, id: str, client: str, person: str, workspace: str, history: SessionHistory
    ) -> SessionState:
        state = cls(id, client, person, workspace, turn=history.turn, episodes=set(history.episode_ids))
        if history.last_prompt:  # the audit of a turn answered after the restart shows its prompt
            state.prompts[history.turn] = history.last_prompt
        for row in history.injected:
            state.tokens += row.tokens
            state.blocks = max(state.blocks, row.block)
            if row.memory:
                state.injected.add(row.memory)
                # Turns up to the last answered one were audited then (answers start at turn 1;
                # 0 means none yet, and the session start's injections, turn 0, still wait).
                if row.turn > history.answered_turn or not history.answered_turn:
                    state.by_turn.setdefault(row.turn, []).append(row.memory)
        return state

    def act(self, tool: str, tool_input: object) -> None:
        """Note a tool call of the current turn (what it did, for the usage audit)."""
        kept = self.acts.setdefault(self.turn, [])
        if len(kept) < MAX_ACTS:
            kept.append(act_of(tool, tool_input))

    def answered(self, turn: int, answer: str, redact: Callable[[str], str]) -> tuple[list[str], TurnActs]:
        """The memories given up to ``turn`` not yet audited, and what the agent did since: its
        prompt, acts and ``answer``, redacted. Both are taken: a turn is audited once."""
        memories = [m for t in sorted(self.by_turn) if t <= turn for m in self.by_turn.pop(t)]
        acts = [a for t in sorted(self.acts) if t <= turn for a in self.acts.pop(t)]
        prompt = strip_injected(self.prompts.get(turn, ""))
        return list(dict.fromkeys(memories)), turn_of(prompt, strip_injected(answer), acts, redact)

    def unknown(self, sources: list[str]) -> list[str]:
        """Of a memory's source episodes, those not yet known to be of this session or another."""
        return [s for s in sources if s not in self.episodes and s not in self.elsewhere]

    def learn(self, asked: list[str], here: set[str]) -> None:
        self.episodes |= here
        self.elsewhere.update(s for s in asked if s not in here)

    def came_from_here(self, sources: list[str]) -> bool:
        """Whether a memory with these sources was distilled from (or noted in) this session."""
        return any(source in self.episodes for source in sources)


class SessionBook:
    """The sessions a daemon is serving, by id (bounded: the oldest are dropped, the store keeps them)."""

    def __init__(self, limit: int = 1_000) -> None:
        self._sessions: dict[str, SessionState] = {}
        self._limit = limit

    def get(self, session: str) -> SessionState | None:
        return self._sessions.get(session)

    def put(self, state: SessionState) -> SessionState:
        self._sessions.pop(state.id, None)
        self._sessions[state.id] = state
        while len(self._sessions) > self._limit:
            self._sessions.pop(next(iter(self._sessions)))
        return state

    def drop(self, session: str) -> None:
        self._sessions.pop(session, None)
