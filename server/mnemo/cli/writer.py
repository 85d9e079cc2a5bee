"""distill, judge-log and writer use: the writer's work, asked for and looked into, and its model."""

from __future__ import annotations

import argparse
import os
import shutil
import sys

from mnemo.cli.context import EXIT_ERROR, EXIT_OK, Context, query_string
from mnemo.cli.render import dump, when, write
from mnemo.errors import InputError


def cmd_distill(args: argparse.Namespace, context: Context) -> int:
    body = {"session": args.session} | ({"again": True} if args.again else {})  # as an older daemon reads it
    queued = context.client.call("POST", "/v1/distill", body)
    if args.json:
        dump(queued)
    elif queued["queued"]:
        anew = " anew, from its first episode" if args.again else ""
        write(f"session {args.session} queued for distillation{anew}; `mnemo status` shows progress")
    else:
        write(f"mnemo: error: {queued['reason']}", sys.stderr)
    return EXIT_OK if queued["queued"] else EXIT_ERROR


def cmd_judge_log(args: argparse.Namespace, context: Context) -> int:
    if not 1 <= args.limit <= 1_000:
        raise InputError("limit: must be between 1 and 1,000")
    query = query_string(limit=args.limit, session=args.session, memory=args.memory)
    log = context.client.call("GET", f"/v1/judge-log{query}")
    if args.json:
        dump(log)
        return EXIT_OK
    if not log["entries"]:
        write("the judge has decided nothing yet")
    for entry in log["entries"]:
        detail = entry["detail"]
        memory = detail.get("memory")
        what = memory.get("what", "") if isinstance(memory, dict) else ""
        head = f"{when(entry['at'], '%Y-%m-%d %H:%M:%S')}  {entry['action']:<13} {entry['memory']}"
        write(f"{head}  {entry['session']}  {entry['namespace']}")
        write(f"    {what}")
        write(f"    {entry['reason']}")
        comparisons = detail.get("comparisons")
        for comparison in comparisons if isinstance(comparisons, list) else []:
            probabilities = comparison["relation"]["probabilities"]
            best = max(probabilities, key=probabilities.get)
            guard = "; guard: " + "; ".join(comparison["guard"]) if comparison["guard"] else ""
            write(f"    vs {comparison['existing']}: {best} {probabilities[best]:.2f}{guard}")
    return EXIT_OK


# What `writer use` writes, and the model it suggests: a host's default model is its largest.
_HOST_SETTINGS = ("llm_backend", "llm_host_model", "llm_host_command", "llm_host_url")
_DEFAULT_MODEL = {"claude-code": "haiku", "codex": ""}


def cmd_writer_use(args: argparse.Namespace, context: Context) -> int:
    """Point the writer at a host's CLI (its own login) or back at llm_url, in the config file,
    and say what it will spend and where to watch it; a running daemon is stopped so the next
    command or hook starts it with the new setting."""
    from mnemo.client.launcher import stop_daemon  # noqa: PLC0415
    from mnemo.config import HOST_CALLS_PER_MINUTE, HOST_DAILY_CALLS  # noqa: PLC0415
    from mnemo.config_sources import write_settings  # noqa: PLC0415
    from mnemo.distill.hostcli import COMMANDS  # noqa: PLC0415

    settings = context.settings()
    backend = "openai" if args.backend == "off" else args.backend
    assert settings.config_file is not None
    values: dict[str, str | None] = dict.fromkeys(_HOST_SETTINGS)
    if backend == "openai":
        if args.model or args.cli or args.url:
            raise InputError("--model, --command and --url are for claude-code and codex")
        values["llm_backend"] = "openai"
    else:
        command = args.cli or COMMANDS[backend]
        if shutil.which(command) is None:
            raise InputError(f"{command!r} is not found: install {backend} (or give --command PATH) first")
        model = _DEFAULT_MODEL[backend] if args.model is None else args.model
        values |= {"llm_backend": backend, "llm_host_model": model or None}
        values |= {"llm_host_command": args.cli or None, "llm_host_url": args.url or None}
    write_settings(settings.config_file, values)
    pid = stop_daemon(settings)
    shadowed = [k for k in _HOST_SETTINGS if _from_env(k)]
    if backend == "openai":
        where = (
            f"the endpoint in llm_url ({settings.llm_url})"
            if settings.llm_url
            else "no model (llm_url is empty)"
        )
        write(f"the writer now uses {where}; written to {settings.config_file}")
    else:
        login = f"{args.url} (llm_api_key)" if args.url else f"{COMMANDS[backend]}'s own login, nothing else"
        calls = settings.llm_daily_call_cap
        cap = HOST_DAILY_CALLS if calls == "auto" else calls
        pace = settings.llm_calls_per_minute
        pace_shown = HOST_CALLS_PER_MINUTE if pace == "auto" else pace
        write(
            f"the writer now uses {backend} ({values['llm_host_model'] or 'its default model'}), with {login}"
        )
        write(
            f"it spends at most {cap:,} calls a day ({settings.llm_daily_token_cap:,} tokens), "
            f"{pace_shown:g} a minute: a call per stretch of a session and one per memory it yields "
            "(docs/models.md); "
            "settings llm_daily_call_cap, llm_calls_per_minute, llm_daily_token_cap"
        )
        write("watch it: `mnemo status` (model), the memory browser (Model spend today)")
        write("undo: `mnemo writer use openai`")
        write(f"written to {settings.config_file}")
    if pid is not None:
        write(f"stopped the daemon (pid {pid}); the next command or hook starts it with this writer")
    for key in shadowed:
        write(f"mnemo: warning: MNEMO_{key.upper()} in the environment overrides the file", sys.stderr)
    return EXIT_OK


def _from_env(key: str) -> bool:
    return f"MNEMO_{key.upper()}" in os.environ  # noqa: TID251 - which source wins, for the warning
