"""How the command prints what the daemon answers (its JSON, read as plain dicts)."""

from __future__ import annotations

import json
import sys
from datetime import datetime
from typing import Any, TextIO

Doc = dict[str, Any]


def write(text: str, stream: TextIO | None = None) -> None:
    (stream or sys.stdout).write(text + "\n")


def dump(document: object) -> None:
    """``document`` as the indented JSON that ``--json`` prints."""
    write(json.dumps(document, indent=2, ensure_ascii=False))


def when(text: str | None, pattern: str) -> str:
    """An ISO time of an answer, formatted (UTC, as the daemon gives it)."""
    return "" if not text else datetime.fromisoformat(text).strftime(pattern)


def show_memory(memory: Doc, score: float | None = None) -> None:
    head = f"{memory['id']}  {memory['type']}  {memory['status']}  {memory['namespace']}"
    write(head + (f"  score {score:.3f}" if score is not None else ""))
    write(f"  {memory['content']}")
    for label in ("who", "when", "where", "why", "how"):
        if memory.get(label):
            write(f"  {label}: {memory[label]}")
    if memory.get("entities"):
        write("  entities: " + ", ".join(f"{e['name']} ({e['role']})" for e in memory["entities"]))
    if memory.get("code"):
        files = [
            f"{f['path']}@{f['blob'][:7]}"
            + (f" ({', '.join(f['symbols'] + f['values'])})" if f["symbols"] or f["values"] else "")
            for f in memory["code"]["files"]
        ]
        write(f"  code: {', '.join(files)} at commit {memory['code']['commit'][:7]}")


def show_explain(components: dict[str, float] | None) -> None:
    if components:
        write("  score = " + "  ".join(f"{name} {value:.3f}" for name, value in components.items()))


def show_episode(episode: Doc, score: float | None = None) -> None:
    turn = f" turn {episode['turn']}" if episode.get("turn") is not None else ""
    who = f"{episode['role']}/{episode['who']}" if episode.get("who") else episode["role"]
    session = f"session {episode.get('session') or '-'}{turn}"
    head = f"{episode['id']}  {when(episode['time'], '%Y-%m-%d %H:%M')}  {session}  {who}  {episode['kind']}"
    write(head + (f"  score {score:.3f}" if score is not None else ""))
    text = episode["text"] if len(episode["text"]) <= 500 else episode["text"][:500] + " …"
    write("  " + text.replace("\n", "\n  "))
