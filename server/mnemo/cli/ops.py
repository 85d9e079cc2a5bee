"""status, stats, models, daemon: running mnemo — its state, its use, its models, its process."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from datetime import date, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from mnemo.cli.context import EXIT_ERROR, EXIT_NOT_RUNNING, EXIT_OK, Context
from mnemo.cli.render import Doc, dump, when, write
from mnemo.errors import InputError

if TYPE_CHECKING:
    from mnemo.embed.fidelity import Fidelity


def cmd_status(args: argparse.Namespace, context: Context) -> int:
    status = context.client.call("GET", "/v1/status")
    if args.json:
        dump(status)
        return EXIT_OK
    where = context.client.where
    memories = ", ".join(f"{k} {v:,}" for k, v in sorted(status["memories"].items())) or "none"
    write(f"mnemo {status['version']}")
    write(f"store      {status['store']}")
    write(f"home       config {where.config_file}, logs {os.path.join(where.log_dir, 'daemon.log')}")
    write(f"daemon     pid {status['pid']}, up {status['uptime_s']:,.1f} s")
    write(f"schema     version {status['schema_version']}")
    if status.get("person"):
        whose = (
            " (the server's user: other people's memories are not read)" if status.get("store_follow") else ""
        )
        write(f"person     {status['person']}{whose}")
    write(f"episodes   {status['episodes']:,}")
    write(f"memories   {memories}")
    write(f"entities   {status['entities']:,}")
    write(f"embedder   {status['embedder']}")
    if status.get("embedder_degraded"):
        write(f"           DEGRADED on this CPU: {status['embedder_degraded']}; see docs/models.md")
    built_s = status["index_build_s"]
    index = "building" if built_s is None else f"built in {built_s:,.1f} s"
    if status.get("index_memories_from"):
        index += f" (memories from {status['index_memories_from']})"
    write(f"index      {index}, {status['embedding_backlog']:,} waiting for vectors")
    for lists in status["vector_lists"]:  # at the build; an index too small for lists says nothing
        if not lists.endswith(("no vectors", "no lists needed")):
            write(f"           {lists}")
    follow = status.get("store_follow")
    if follow is not None:
        if follow["last_error"]:
            state = f"not following: {follow['last_error']}"
        elif follow["behind_versions"]:
            state = f"{follow['behind_versions']:,} versions ({follow['behind_s']:,.1f} s) behind the store"
        else:
            state = "up to date with the store"
        write(
            f"           {state}; reads others' writes every {follow['poll_s']:g} s "
            f"({follow['applied']:,} versions and {follow.get('episodes_applied', 0):,} episodes applied)"
        )
    _show_model(status["language_model"])
    _show_distillation(status["distillation"])
    return EXIT_OK


def _show_model(llm: Doc) -> None:
    if not llm["endpoint"]:
        write("model      none (set llm_url and llm_model, or `mnemo writer use`, to distil conversations)")
        return
    cap = f" of {llm['daily_cap']:,}" if llm["daily_cap"] else " (no cap)"
    calls_cap = f" of {llm['daily_call_cap']:,}" if llm.get("daily_call_cap") else ""
    pace = f", at most {llm['calls_per_minute']:g} a minute" if llm.get("calls_per_minute") else ""
    model = f"{llm['model']} at " if llm["model"] else ""
    write(
        f"model      {model}{llm['endpoint']}; today {llm['tokens_today']:,}{cap} tokens, "
        f"{llm.get('calls_today', 0):,}{calls_cap} calls{pace}"
    )
    if llm.get("judging"):
        write(f"           judging: {llm['judging']}")
    if llm["resumes_at"] is not None:
        resumes = when(llm["resumes_at"], "%Y-%m-%d %H:%M")
        write(f"           daily cap reached: model work resumes at {resumes} UTC")
    for spend in llm["by_model"]:
        write(
            f"           {spend['model']}: {spend['calls']:,} calls, {spend['prompt_tokens']:,} prompt + "
            f"{spend['completion_tokens']:,} completion tokens today"
        )


def _show_distillation(distillation: Doc) -> None:
    if distillation.get("lease"):
        write(f"writer     lease: {distillation['lease']}")
    if not distillation["enabled"]:
        return
    now = f", distilling {distillation['running']}" if distillation["running"] else ""
    if distillation.get("asked"):
        now += f", {distillation['asked']:,} session(s) asked for"
    write(
        f"distilled  {distillation['batches_done']:,} batches, {distillation['memories_added']:,} memories "
        f"added since start{now}"
    )
    if distillation.get("context"):
        speed = f"; {distillation['speed']}" if distillation.get("speed") else ""
        write(f"           the model's context: {distillation['context']}{speed}")
    if distillation["paused_until"] is not None:
        until = when(distillation["paused_until"], "%Y-%m-%d %H:%M:%S")
        write(f"           paused until {until} UTC: {distillation['last_error']}")
    if distillation["failed_batches"]:
        count, latest = distillation["failed_batches"], distillation["last_failure"]
        write(f"           {count:,} failed batch(es), see the daemon log; latest: {latest}")


def cmd_stats(args: argparse.Namespace, context: Context) -> int:
    if not 1 <= args.days <= 3_660:
        raise InputError("--days: must be between 1 and 3,660")
    stats = context.client.call("GET", f"/v1/stats?days={int(args.days)}")
    if args.chart is not None:
        _write_chart(args.chart, stats)
    if args.json:
        dump(stats)
        return EXIT_OK
    last = date.fromisoformat(stats["until"][:10]) - timedelta(days=1)
    write(f"mnemo stats, {stats['since'][:10]} to {last:%Y-%m-%d} (UTC), {stats['person']}")
    write(f"sessions          {stats['sessions']:,}")
    tokens = f"{stats['tokens_injected']:,} tokens (estimated)"
    write(f"injected          {stats['memories_injected']:,} memories, {tokens}")
    if not stats["tokens_read"]:
        write("share of reading  n/a: no session transcript found")
    else:
        share = stats["tokens_injected_read"] / stats["tokens_read"]
        write(
            f"share of reading  {share:.4%} of the {stats['tokens_read']:,} input tokens of "
            f"{stats['sessions_read']:,} sessions was memory"
        )
    prompts, given = stats["prompts"], stats["prompts_injected"]
    share = f" ({given / prompts:.0%})" if prompts else ""
    write(
        f"prompts           {prompts:,}; {given:,} got memory{share}, a median "
        f"{stats['prompt_block_tokens']:,} tokens a block"
    )
    write(
        f"session starts    {stats['start_blocks']:,} blocks, a median {stats['start_block_tokens']:,} tokens"
    )
    judged = stats["used"] + stats["unused"] + stats["unclear"]
    counts = f"used {stats['used']:,}, clearly unused {stats['unused']:,}, unclear {stats['unclear']:,}"
    write(f"verdicts          {judged:,}: {counts}")
    suppressed = stats["suppressed"]
    effect = (
        "no longer injected there" if stats["suppressing"] else "injected all the same (suppress_unused off)"
    )
    write(f"suppressed        {len(suppressed):,}: clearly unused in a workspace, {effect}")
    for s in suppressed[:20]:
        write(f"                  {s['memory']} in {s['workspace']} ({s['unused']} times unused)")
    if suppressed:
        write("                  mnemo unsuppress ID injects one again")
    if args.chart is not None:
        write(f"chart             {args.chart}")
    return EXIT_OK


def cmd_unsuppress(args: argparse.Namespace, context: Context) -> int:
    done = context.client.call("POST", "/v1/stats/unsuppress", {"memory": args.id})
    if done["workspaces"]:
        write(f"{done['memory']}: injected again in {', '.join(done['workspaces'])}")
    else:
        write(f"{done['memory']}: not suppressed anywhere; nothing to do")
    return EXIT_OK


def _write_chart(path: Path, stats: Doc) -> None:
    from mnemo.api.stats import Stats  # noqa: PLC0415 - pydantic, for the chart only
    from mnemo.usage.stats import render_html  # noqa: PLC0415

    try:
        path.write_text(render_html(Stats.model_validate(stats)), encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror}") from None


def cmd_models(args: argparse.Namespace, context: Context) -> int:
    # Imported here: loading model code pulls in ONNX Runtime, which no other command needs.
    from mnemo.cli.progress import ProgressBar  # noqa: PLC0415
    from mnemo.embed import install_model, installed_models, verify_model  # noqa: PLC0415
    from mnemo.embed.hub import DEFAULT_HUB_URL, HUB_MODELS, fetch_model  # noqa: PLC0415

    settings = context.settings()
    restart = "restart the daemon to use it (mnemo daemon stop)"
    if args.action == "install":
        if args.target is None:
            raise InputError("mnemo models install needs the model directory to install")
        info, fidelity = install_model(Path(args.target), settings, allow_degraded=args.allow_degraded)
        _say_fidelity(info.id, fidelity)
        write(f"installed {info.id} at {info.location}; {restart}")
        return EXIT_OK
    if args.action == "fetch":
        name = args.target or "embeddinggemma"
        if name not in HUB_MODELS:
            raise InputError(f"unknown model {name!r} to fetch; known: {', '.join(HUB_MODELS)}")
        bar = None if args.quiet else ProgressBar(sys.stderr)
        location, fidelity = fetch_model(
            HUB_MODELS[name],
            Path(settings.models_dir),
            hub_url=args.hub_url or DEFAULT_HUB_URL,
            allow_degraded=args.allow_degraded,
            progress=None
            if bar is None
            else (lambda path, done, total: bar.show(done, total, f"{path}  {done / 2**20:,.0f} MB")),
        )
        if bar is not None:
            bar.close()
        _say_fidelity(HUB_MODELS[name].id, fidelity)
        write(f"fetched and verified {HUB_MODELS[name].id} into {location}; {restart}")
        return EXIT_OK
    models = installed_models(settings)
    chosen = settings.embedder if settings.embedder != "auto" else (models[0].id if models else "none")
    if args.action == "verify":
        degraded = False
        for info in models:
            fidelity = verify_model(info)
            write(f"{info.id}: every file matches its sha256")
            _say_fidelity(info.id, fidelity)
            degraded |= fidelity is not None and not fidelity.faithful
        return EXIT_ERROR if degraded else EXIT_OK
    if args.json:
        write(
            json.dumps({"embedder": chosen, "installed": [dataclasses.asdict(m) for m in models]}, indent=2)
        )
        return EXIT_OK
    for info in models:
        mark = "*" if info.id == chosen else " "
        write(f"{mark} {info.id:<28} {info.family:<15} {info.dim:>4} dims  {info.location}")
    if not models:
        write("no embedding model installed: recall searches by words and entities only")
    write(f"embedder setting: {settings.embedder} (the daemon uses {chosen})")
    return EXIT_OK


def _say_fidelity(model_id: str, fidelity: Fidelity | None) -> None:
    if fidelity is None:
        return
    write(f"{model_id} on this CPU: {fidelity.describe()}")
    if not fidelity.faithful:
        write(
            f"{model_id}: DEGRADED on this CPU — its vectors are not its float model's, so recall "
            "finds less; rebuild it with tools/models/build_embeddinggemma.py (docs/models.md)"
        )


def cmd_daemon(args: argparse.Namespace, context: Context) -> int:
    if args.action == "run":
        # The very entry the launcher starts (its process settings included), in the foreground.
        sys.stdout.flush()
        os.execv(sys.executable, [sys.executable, "-m", "mnemo.daemon"])
    from mnemo.client.launcher import daemon_pid, ensure_daemon, ping, stop_daemon  # noqa: PLC0415

    settings = context.settings()
    if args.action == "start":
        started = ensure_daemon(settings)
        write(f"mnemo daemon running, pid {started['pid']}, socket {settings.socket_path}")
        return EXIT_OK
    if args.action == "stop":
        pid = stop_daemon(settings)
        write("mnemo daemon was not running" if pid is None else f"stopped mnemo daemon (pid {pid})")
        return EXIT_OK
    health = ping(settings)
    if health is None:
        pid = daemon_pid(settings)
        write("mnemo daemon not running" if pid is None else f"mnemo daemon pid {pid} is not answering")
        return EXIT_NOT_RUNNING
    write(f"mnemo daemon running, pid {health['pid']}, store {health['store']}")
    return EXIT_OK
