"""What the model reads of each tool's answer: compact text, written for it.

A tool's answer is the text content; every field of the result goes to client programs in the
answer's ``_meta`` (:func:`mnemo.mcpserver.tools._answered` says why not ``structuredContent``).
Dumping the whole result as the text cost a recalled memory ten times its own text (24 fields as
indented JSON, a third of them empty), so the text says only what is set, as the injected block
does: one line per memory with its id (to cite, to ``forget``, to ask ``recall_episode(memory=…)``
for the episodes it comes from), type, scope, status when it is not active, the content, and the
fields that hold something the content does not already say.

Every stored text is put on one line (whitespace collapsed), so no text can start a line that
reads as another memory or as this answer's own header; an episode's text keeps its lines, each
indented under the episode's header line.
"""

from __future__ import annotations

from mnemo.api.keep import KeepResult, KeptSet
from mnemo.api.recall import EpisodeHit, EpisodesResult, RecallResult
from mnemo.episodes import Episode
from mnemo.memories import Memory
from mnemo.vocabulary import MemoryStatus

RECALL_EPISODE_CHARS = 600  # of each episode recall answers with when no memory matched
_W_LABELS = (
    ("what", "What"),
    ("who", "Who"),
    ("when", "When"),
    ("where", "Where"),
    ("why", "Why"),
    ("how", "How"),
)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _says(content: str, value: str) -> bool:
    return value.lower() in content.lower()


def _labelled(label: str, value: str) -> str:
    return f"{label}: {value}" + ("" if value.endswith((".", "!", "?", "…")) else ".")


def memory_text(memory: Memory, outdated: str = "", earlier: str = "", replaces: str = "") -> str:
    """One line for ``memory``: what is set, nothing empty or repeated; ``outdated``, ``earlier``
    (a newer memory states another value of it) and ``replaces`` (the closed memory it
    replaced, which the question found) marked."""
    scope = memory.namespace.split(":", 1)[0]
    notes = [scope]
    if memory.status is not MemoryStatus.ACTIVE:
        status = memory.status.value
        if memory.valid_to is not None and memory.status is MemoryStatus.CLOSED:
            status += f" {memory.valid_to.date().isoformat()}"
        if memory.closed_by:
            status += f" by {memory.closed_by}"
        notes.append(status)
    if outdated:
        notes.append(f"may be outdated: {_one_line(outdated)}")
    if earlier:
        notes.append(_one_line(earlier))
    if replaces:
        notes.append(f"replaced {replaces}")
    content = _one_line(memory.content)
    parts = [f"[{memory.id}] {memory.type.value} ({'; '.join(notes)}): {content}"]
    for field, label in _W_LABELS:
        value = _one_line(getattr(memory, field))
        if value and not _says(content, value):
            parts.append(_labelled(label, value))
    if memory.code is not None:
        files = ", ".join(f.path for f in memory.code.files)
        parts.append(_labelled("Code", f"{files} at {memory.code.commit[:10]}"))
    if memory.status_reason and memory.status is not MemoryStatus.ACTIVE:
        parts.append(_labelled("Reason", _one_line(memory.status_reason)))
    return " ".join(parts)


def episode_text(episode: Episode, limit: int | None = None) -> str:
    """A header line (id, session and turn, who, time) and the text indented under it; ``limit``
    cuts the text, saying so."""
    where = episode.session + (f" turn {episode.turn}" if episode.turn is not None else "")
    who = episode.who or episode.role.value
    when = f"{episode.time:%Y-%m-%d %H:%M}"
    header = f"[{episode.id}] {episode.kind.value} in {where or 'no session'}, {who}, {when}"
    text = episode.text
    if limit is not None and len(text) > limit:
        text = text[:limit].rstrip() + f" […{len(text) - limit:,} more characters: recall_episode(id)]"
    body = "\n".join("  " + line for line in text.splitlines() or [""])
    return f"{header}\n{body}"


def recall_text(result: RecallResult) -> str:
    if result.memories:
        lines = [_count(len(result.memories), "memory", "memories") + ", best first:"]
        lines += [memory_text(hit.memory, hit.outdated, hit.earlier, hit.replaces) for hit in result.memories]
        return "\n".join(lines)
    if result.episodes:
        return _episodes("No memory matched; past episodes instead", result.episodes, RECALL_EPISODE_CHARS)
    return "Nothing in memory matches."


def episodes_text(result: EpisodesResult) -> str:
    if not result.episodes:
        return "No episodes found."
    return _episodes("Episodes", result.episodes, None)


def stored_text(verb: str, memory: Memory) -> str:
    """remember's and forget's answer: what was done, and the memory's line."""
    return f"{verb}:\n{memory_text(memory)}"


def keep_text(result: KeepResult) -> str:
    return f"{_one_line(result.message)}\n{kept_text(result.kept)}"


def kept_text(kept: KeptSet) -> str:
    head = f"{kept.scope.value} entries ({kept.used_chars:,} of {kept.budget_chars:,} characters):"
    return "\n".join([head, *(f"- {_one_line(entry)}" for entry in kept.entries)])


def _episodes(title: str, hits: list[EpisodeHit], limit: int | None) -> str:
    return "\n".join([f"{title} ({len(hits)}):", *(episode_text(hit.episode, limit) for hit in hits)])


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"
