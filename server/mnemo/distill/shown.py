"""What the writer's model is shown of a session: its lines, each cut to its share, and the
stretches a long session is read in, each sized to the model's context.

A line is ``[id] role (who): text``, mnemo's own injected blocks cut out (:mod:`mnemo.injected`).
What a line may keep depends on who wrote it: a person's line up to ``PERSON_CHARS`` (its start
and its end when longer: a pasted log's tail is often the point), an answer up to
``ANSWER_CHARS``, and a tool's output — the bulk of a real session, and what a memory is least
often about — its call and, up to ``TOOL_CHARS``, the lines of its output that share the most
words with what the person and the agent said in the stretch. Of a turn's tool runs (an agent's
turn may make a hundred), the ``TOOLS_PER_TURN`` whose lines share the most words with the turn's
person's line and answer are shown, in their order. A long session is read in consecutive
stretches of whole turns (:func:`stretches`), each fitting the model's context beside the system
prompt and the reply (:mod:`mnemo.distill.sizing`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from mnemo.distill.sizing import ModelLimits
from mnemo.episodes import Episode, Role
from mnemo.injected import strip_injected

PERSON_CHARS = 4_000
ANSWER_CHARS = 1_500
TOOL_CHARS = 320
TOOLS_PER_TURN = 6
CUT = " …[cut] "
_WORD = re.compile(r"[^\W\d_]{4,}|\w*\d\w*", re.UNICODE)


def transcript(episodes: Sequence[Episode], *, line_chars: int = 0, tool_chars: int = TOOL_CHARS) -> str:
    """The lines the model reads. A tool's output keeps, up to ``tool_chars``, the lines nearest to
    what the others say; ``line_chars`` > 0 cuts every line shorter."""
    return "\n".join(lines(episodes, _said_words(episodes), line_chars, tool_chars))


def lines(
    episodes: Sequence[Episode], said: frozenset[str], line_chars: int = 0, tool_chars: int = TOOL_CHARS
) -> list[str]:
    """Each episode's line (none for an episode with nothing left to show)."""
    found = []
    for episode in episodes:
        text = _shown_text(episode, said, tool_chars)
        if not text:
            continue
        if line_chars and len(text) > line_chars:
            text = _ends(text, line_chars)
        speaker = "person" if episode.role == Role.USER else episode.role.value
        who = f" ({episode.who})" if episode.who else ""
        found.append(f"[{episode.id}] {speaker}{who}: {text}")
    return found


def stretches(episodes: Sequence[Episode], limits: ModelLimits, room_tokens: int) -> list[list[Episode]]:
    """``episodes`` in consecutive stretches of whole turns (each turn with its
    ``TOOLS_PER_TURN`` nearest tool runs) whose transcripts take at most ``room_tokens`` of the
    model's tokens each (a turn too long alone is a stretch of its own, its lines cut at
    :func:`fitted`)."""
    said = _said_words(episodes)
    found: list[list[Episode]] = []
    current: list[Episode] = []
    used = 0
    for turn in _turns(episodes):
        shown = _nearest_tools(turn)
        cost = sum(limits.tokens(line) + 1 for line in lines(shown, said))
        if current and used + cost > room_tokens:
            found.append(current)
            current, used = [], 0
        current += shown
        used += cost
    if current:
        found.append(current)
    return found


def _turns(episodes: Sequence[Episode]) -> list[list[Episode]]:
    """``episodes`` (in order) grouped into turns: a person's line and what followed it."""
    turns: list[list[Episode]] = []
    for episode in episodes:
        starts = episode.role == Role.USER and (not turns or any(e.role != Role.USER for e in turns[-1]))
        if starts or not turns:
            turns.append([])
        turns[-1].append(episode)
    return turns


def _nearest_tools(turn: list[Episode]) -> list[Episode]:
    """The turn with only its ``TOOLS_PER_TURN`` tool runs nearest to what was said in it."""
    tools = [e for e in turn if e.role == Role.TOOL]
    if len(tools) <= TOOLS_PER_TURN:
        return turn
    said = _said_words(turn)
    ranked = sorted(range(len(tools)), key=lambda i: (-len(_words(strip_injected(tools[i].text)) & said), i))
    kept = {tools[i].id for i in ranked[:TOOLS_PER_TURN]}
    return [e for e in turn if e.role != Role.TOOL or e.id in kept]


def fitted(episodes: Sequence[Episode], limits: ModelLimits, room_tokens: int) -> str:
    """The transcript of ``episodes``, its lines cut shorter until it takes at most
    ``room_tokens`` (a stretch of one long line, or an estimate the server proved short)."""
    shown = transcript(episodes)
    limit = max(len(line) for line in shown.splitlines()) if shown else 0
    while shown and limits.tokens(shown) > room_tokens and limit > 200:
        limit = int(limit * 0.7)
        shown = transcript(episodes, line_chars=limit)
    return shown


def _said_words(episodes: Sequence[Episode]) -> frozenset[str]:
    """The words the person and the agent used (their first five letters: "release" is
    "releases"), and any token with a digit, whole."""
    return frozenset(w for e in episodes if e.role != Role.TOOL for w in _words(strip_injected(e.text)))


def _words(text: str) -> set[str]:
    return {w if any(c.isdigit() for c in w) else w[:5] for w in _WORD.findall(text.lower())}


def _shown_text(episode: Episode, said: frozenset[str], tool_chars: int) -> str:
    text = strip_injected(episode.text)
    if episode.role == Role.TOOL:
        return _tool_text(text, said, tool_chars)
    text = " ".join(text.split())
    limit = PERSON_CHARS if episode.role == Role.USER else ANSWER_CHARS
    return _ends(text, limit) if len(text) > limit else text


def _ends(text: str, limit: int) -> str:
    """``text``'s start and end, ``limit`` characters in all."""
    head = (limit * 3) // 4
    return text[:head] + CUT + text[len(text) - (limit - head - len(CUT)) :]


def _tool_text(text: str, said: frozenset[str], limit: int) -> str:
    """A tool's call and the lines of its output that share most words with what was said, in
    their order, up to ``limit`` characters."""
    call, _, output = text.partition("\n")
    call = " ".join(call.split())
    if len(call) > limit // 2:
        call = _ends(call, limit // 2)
    rows = [" ".join(line.split()) for line in output.splitlines()]
    rows = [r for r in rows if r]
    room = limit - len(call)
    if sum(len(r) + 3 for r in rows) <= room:
        return " | ".join([call, *rows]) if rows else call
    scored = sorted(
        range(len(rows)),
        key=lambda i: (-len(_words(rows[i]) & said), i),
    )
    kept: list[int] = []
    for i in scored:
        cost = min(len(rows[i]), 200) + 3
        if cost > room:
            break
        kept.append(i)
        room -= cost
    parts = [call]
    last = -1
    for i in sorted(kept):
        if i != last + 1:
            parts.append("…")
        parts.append(rows[i][:200])
        last = i
    if last != len(rows) - 1:
        parts.append("…")
    return " | ".join(parts)


# How a host words a turn that failed in place of an answer: Claude Code's "API Error: 529 …",
# "Request timed out", a refused prompt; Codex's stream errors.
_FAILED_ANSWER = re.compile(
    r"^\s*(?:API Error\b|Error: \d{3}\b|Request timed out|Prompt is too long|Credit balance is too low|"
    r"Invalid API key|stream (?:error|disconnected)|Claude AI usage limit reached)",
    re.IGNORECASE,
)


def is_failed_answer(text: str) -> bool:
    """Whether an answer is only a host's report that the turn failed."""
    return _FAILED_ANSWER.match(text) is not None


def answered(episodes: Sequence[Episode]) -> list[Episode]:
    """``episodes`` without the turns that failed: a host's report of a failure in place of an
    answer, and the person's lines it answered (back to the last answer or tool run) — what a
    person said to a model that never answered led nowhere, and a session of such turns leaves
    nothing to read."""
    kept: list[Episode] = []
    waiting: list[Episode] = []  # the person's lines since the last answer or tool run
    for episode in episodes:
        if episode.role == Role.USER:
            waiting.append(episode)
        elif episode.role != Role.TOOL and is_failed_answer(episode.text):
            waiting = []
        else:
            kept += [*waiting, episode]
            waiting = []
    return kept + waiting
