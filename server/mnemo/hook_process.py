"""The hook process: ``mnemo-mcp hook <Event> [--client claude-code|codex]``.

Claude Code and Codex start one process per hook event and wait for it, so this module imports
nothing but a few modules of the standard library, :mod:`mnemo.paths` and :mod:`mnemo.client.http`
(a Python start plus a few milliseconds; :mod:`mnemo.private`, with ``re``, ``typing``, ``json``
and ``datetime``, only on the way to the spool): it reads the host's hook JSON on stdin, posts it
unparsed to the daemon's ``/v1/hooks/<Event>`` over the unix socket, and prints the answer's body:
exactly what the host expects (often nothing). The daemon owns every decision (what to record, what
to inject, budgets); this process only carries.

It never blocks the agent: whatever goes wrong (daemon down, slow, an error, bad input) it exits
0 with nothing on stdout, within the event's deadline, and notes why in ``hooks.log``. A daemon
that is not running is started in the background, and the event is appended to the spool
(``run/hooks.spool``), which the daemon replays when it is up: the turn is recorded all the same
(nothing is injected for it, as nobody is waiting any more).

PreToolUse is answered here without the daemon: in plan mode mnemo's write tools are denied. In
a call the writer makes through a host's CLI (``MNEMO_WRITER_CALL`` set), every hook returns at
once with nothing: the writer's own calls never become episodes.
"""

from __future__ import annotations

import os
import sys
import time

from mnemo.client.http import NotSentError, TransportError, UnixHTTP
from mnemo.paths import (
    MAX_HOOK_INPUT_BYTES,
    SPAWNED_NAME,
    Layout,
    hook_timeout_override,
    host_pid,
    is_locked,
    layout,
)

# Seconds the daemon may take, per event: inside the hosts' limits with room to spare (SessionEnd
# has 1.5 s in Claude Code). MNEMO_HOOK_TIMEOUT_S overrides them all.
DEADLINES_S = {
    "SessionStart": 3.0,
    "UserPromptSubmit": 3.0,
    "PostToolUse": 1.0,
    "Stop": 1.0,
    "PreCompact": 1.0,
    "SessionEnd": 0.8,
}
EVENTS = (*DEADLINES_S, "PreToolUse")
# mnemo.vocabulary.TRANSCRIPT_HOSTS (a unit test holds them equal), not imported: enum is not
# worth its import to the hook process.
CLIENTS = ("claude-code", "codex")
MAX_SPOOL_BYTES = 64 * 1024 * 1024  # a daemon that never comes up must not fill the disk
SPAWN_GRACE_S = 15.0  # a daemon started this recently is still on its way up
MODE_NOTE_S = 0.3  # PreToolUse tells the daemon the mode of a mnemo write, within this
# Set by the writer on its own calls to a host's CLI (mnemo.distill.hostcli.WRITER_CALL_ENV, which
# a unit test holds equal): whatever hooks that host runs, mnemo's record nothing of them.
WRITER_CALL_ENV = "MNEMO_WRITER_CALL"
# mnemo's tools that write; plan mode denies them (the MCP server's name varies with how it was
# installed — mnemo, or plugin_mnemo_mnemo — so the match is on the suffix).
WRITE_TOOLS = ("remember", "forget", "keep")


def main(argv: list[str]) -> int:
    if os.environ.get(WRITER_CALL_ENV):  # noqa: TID251 - a marker, not a setting
        return 0  # the writer's own call to a host's CLI: nothing of it comes back into mnemo
    started = time.monotonic()
    where = layout()
    try:
        event, client = _parse_args(argv)
        data = sys.stdin.buffer.read(MAX_HOOK_INPUT_BYTES + 1)
        if len(data) > MAX_HOOK_INPUT_BYTES:
            raise ValueError(f"hook input over {MAX_HOOK_INPUT_BYTES:,} bytes")
        if not data.lstrip().removeprefix(b"\xef\xbb\xbf").lstrip().startswith(b"{"):  # a BOM is read
            raise ValueError("the hook input is not a JSON object")
        if event == "PreToolUse":
            import json  # noqa: PLC0415 - the other events pass the input through unparsed

            payload = json.loads(data or b"{}")
            out = plan_mode_denial(payload)
            if not out and _mnemo_write(payload):
                # Tell the daemon the mode the write comes in (it may have last heard "plan"
                # from this host, before the plan was approved), briefly, and never waiting on it.
                try:  # noqa: SIM105 - contextlib would cost the hook an import
                    _ask_daemon(where, event, client, data, time.monotonic() + MODE_NOTE_S, spool=False)
                except (OSError, RuntimeError, ValueError, TransportError):
                    pass  # no daemon, or slow: the write goes on, the PreToolUse answer stands
        else:
            deadline = started + _deadline_s(event)
            out = _ask_daemon(where, event, client, data, deadline)
        if out:
            sys.stdout.write(out)
            sys.stdout.flush()
    except Exception as exc:  # fail open: the agent goes on without memory
        _note(where, f"{' '.join(argv)}: {type(exc).__name__}: {exc}")
    return 0


def _parse_args(argv: list[str]) -> tuple[str, str]:
    if not argv or argv[0] not in EVENTS:
        raise ValueError(f"usage: mnemo-mcp hook <{'|'.join(EVENTS)}> [--client {'|'.join(CLIENTS)}]")
    client = ""  # the daemon tells the host from the input (Codex's carries its rollout path)
    if len(argv) == 3 and argv[1] == "--client" and argv[2] in CLIENTS:
        client = argv[2]
    elif len(argv) != 1:
        raise ValueError(f"unexpected arguments {argv[1:]}")
    return argv[0], client


def _deadline_s(event: str) -> float:
    override = hook_timeout_override()
    return DEADLINES_S[event] if override is None else override


def _mnemo_write(payload: dict[str, object]) -> str:
    """The name of the mnemo write tool the host is about to call, or "" for any other tool."""
    tool = str(payload.get("tool_name") or "")
    if not tool.startswith("mcp__"):
        return ""
    server, _, name = tool[len("mcp__") :].rpartition("__")
    return name if "mnemo" in server and name in WRITE_TOOLS else ""


def plan_mode_denial(payload: dict[str, object]) -> str:
    """The PreToolUse answer: deny mnemo's write tools in plan mode, else nothing (allowed)."""
    name = _mnemo_write(payload)
    if payload.get("permission_mode") != "plan" or not name:
        return ""
    reason = f"mnemo: `{name}` writes memory, and writes are not allowed in plan mode"
    import json  # noqa: PLC0415

    decision = {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": reason,
    }
    return json.dumps({"hookSpecificOutput": decision})


def _ask_daemon(
    where: Layout, event: str, client: str, body: bytes, deadline: float, *, spool: bool = True
) -> str:
    query = f"?host={host_pid()}" + (f"&client={client}" if client else "")
    try:
        response = UnixHTTP(where.socket_path).request(
            "POST",
            f"/v1/hooks/{event}{query}",
            body,
            timeout_s=max(0.05, deadline - time.monotonic()),
            is_last=True,
        )
    except NotSentError as exc:
        if not exc.is_absent:
            raise
        if not spool:
            raise ConnectionError("the daemon is not running") from None
        _spool(where, event, client, body)
        _start_daemon(where)
        raise ConnectionError("the daemon is not running: event spooled for it; starting it") from None
    if response.status != 200:
        raise RuntimeError(f"daemon answered {response.status}: {response.body[:300]!r}")
    return response.body.decode("utf-8")  # exactly what to print


def _spool(where: Layout, event: str, client: str, body: bytes) -> None:
    """Keep an event the daemon could not take (it surely did not: the connection failed)."""
    import json  # noqa: PLC0415 - only on this path

    os.makedirs(where.run_dir, mode=0o700, exist_ok=True)
    try:
        if os.path.getsize(where.spool_path) > MAX_SPOOL_BYTES:
            _note(where, f"{event}: the spool is over {MAX_SPOOL_BYTES:,} bytes; event dropped")
            return
    except FileNotFoundError:
        pass
    text = _without_private(body.decode("utf-8", "replace"))
    line = json.dumps({"event": event, "client": client, "input": text}) + "\n"
    fd = os.open(where.spool_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        data = line.encode("utf-8")
        if os.write(fd, data) != len(data):  # one write, so that appends do not interleave
            raise OSError(f"short write to {where.spool_path} (disk full?)")
    finally:
        os.close(fd)


def _without_private(text: str) -> str:
    """The hook's input with its private spans removed (:mod:`mnemo.private`) before it is
    spooled to a file: in each string of the JSON, so that a span never closed cannot swallow the
    rest of the input; in the raw text when it is not JSON."""
    import json  # noqa: PLC0415 - only on this path

    from mnemo.private import has_private, remove_private  # noqa: PLC0415 - re, typing: this path only

    def without(value: object) -> object:
        if isinstance(value, str):
            return remove_private(value)
        if isinstance(value, list):
            return [without(v) for v in value]
        if isinstance(value, dict):
            return {k: without(v) for k, v in value.items()}
        return value

    if not has_private(text):
        return text
    try:
        return json.dumps(without(json.loads(text)), ensure_ascii=False)
    except ValueError:
        return remove_private(text)


def _start_daemon(where: Layout) -> None:
    """Start the daemon detached, for the next event; this one goes on without it."""
    if is_locked(where.daemon_lock_path):  # one is starting (it locks before it listens)
        return
    # Nor when another hook started one moments ago (before that daemon could take its lock):
    # the marker is created exclusively, so of hooks racing here one spawns.
    marker = os.path.join(where.run_dir, SPAWNED_NAME)
    os.makedirs(where.run_dir, mode=0o700, exist_ok=True)
    try:
        if time.time() - os.path.getmtime(marker) < SPAWN_GRACE_S:
            return
        os.unlink(marker)
    except FileNotFoundError:
        pass
    try:
        fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    os.close(fd)
    from mnemo.client import spawn  # noqa: PLC0415 - subprocess, only when the daemon is down

    spawn.start(where.log_dir, os.environ, pid_file=marker)  # noqa: TID251 - passed on, not read


def _note(where: Layout, line: str) -> None:
    try:
        os.makedirs(where.log_dir, mode=0o700, exist_ok=True)
        with open(os.path.join(where.log_dir, "hooks.log"), "a", encoding="utf-8") as log:
            log.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} {os.getpid()} {line}\n")
    except OSError:
        pass
