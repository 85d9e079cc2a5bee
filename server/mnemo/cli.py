"""The ``mnemo`` command: remember, recall, recall-episode, forget, keep, review, import, status,
stats, distill, judge-log, models, daemon.

With ``--json``, recall and recall-episode print exactly the structured output of the MCP tools
of the same name. Errors go to stderr as ``mnemo: error: …`` with exit status 1 (2 for usage).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import TextIO, TypeVar

import anyio
from pydantic import BaseModel

from mnemo import __version__, transcripts
from mnemo.config import Settings, load_settings
from mnemo.curated import FILE_PATH, KeepScope, parse_file, render_file
from mnemo.daemon.api import KeepImportRequest, KeepRequest, ReviewAction, ReviewEdit
from mnemo.daemon.client import DaemonClient
from mnemo.daemon.launcher import daemon_pid, ensure_daemon, ping, stop_daemon
from mnemo.daemon.review_page import forwarding_page
from mnemo.episodes import Episode
from mnemo.errors import InputError, MnemoError, validated
from mnemo.importer import DEFAULT_BATCH_LINES, TranscriptReport, import_jsonl, import_transcripts
from mnemo.memories import EntityIn, Memory, MemoryType, RememberRequest
from mnemo.recall import EpisodesResult, RecallEpisodeRequest, RecallRequest, RecallResult
from mnemo.usage.stats import render_html
from mnemo.workspace import repo_root, workspace_namespace

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)
EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_NOT_RUNNING = 0, 1, 2, 3


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mnemo", description="Long-term memory for coding agents.")
    parser.add_argument("--version", action="version", version=f"mnemo {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = commands.add_parser("remember", help="store an explicit memory")
    p.add_argument("content", help="the memory, one self-contained statement")
    p.add_argument("--type", required=True, choices=[t.value for t in MemoryType])
    p.add_argument("--namespace", help="person:<name> or workspace:<id> (default: the active person)")
    for w in ("what", "who", "when", "where", "why", "how"):
        p.add_argument(f"--{w}", default="", help=f"the memory's {w}")
    p.add_argument(
        "--entity",
        action="append",
        default=[],
        metavar="NAME[:ROLE][=ALIAS,...]",
        help="an entity it involves, optionally with its role and aliases (repeatable)",
    )
    p.add_argument("--json", action="store_true", help="print the stored memory as JSON")

    p = commands.add_parser("recall", help="search memories (and episodes when no memory answers)")
    p.add_argument("query")
    p.add_argument("--namespace")
    p.add_argument("--type", action="append", dest="types", choices=[t.value for t in MemoryType])
    p.add_argument(
        "--history",
        action="store_true",
        dest="include_history",
        help="rank closed (no longer true) memories as if the question asked about history",
    )
    p.add_argument("--limit", type=int, default=10)
    p.add_argument("--explain", action="store_true", help="show each component of each score")
    p.add_argument("--json", action="store_true", help="print the MCP tool's structured output")

    p = commands.add_parser("recall-episode", help="read raw episodes by id, session or query")
    p.add_argument("id", nargs="?", help="an episode id")
    p.add_argument("--session")
    p.add_argument("--from-turn", type=int)
    p.add_argument("--to-turn", type=int)
    p.add_argument("--query")
    p.add_argument("--namespace")
    p.add_argument("--limit", type=int, default=20)
    p.add_argument("--json", action="store_true", help="print the MCP tool's structured output")

    p = commands.add_parser("forget", help="mark a memory forgotten (kept, no longer recalled)")
    p.add_argument("id")
    p.add_argument("--reason", required=True)
    p.add_argument("--json", action="store_true")

    p = commands.add_parser(
        "import",
        help="import episodes from a JSONL file, or from Claude Code / Codex transcripts (idempotent)",
    )
    p.add_argument(
        "file",
        type=Path,
        nargs="?",
        help="the JSONL file; with --from, a transcript file or directory (default: the host's own)",
    )
    p.add_argument(
        "--from",
        dest="source",
        choices=["jsonl", *transcripts.CLIENTS],
        default="jsonl",
        help="claude-code: ~/.claude/projects; codex: ~/.codex/sessions",
    )
    p.add_argument("--batch-lines", type=int, default=DEFAULT_BATCH_LINES, help=argparse.SUPPRESS)
    p.add_argument("--quiet", action="store_true", help="no progress bar")

    p = commands.add_parser(
        "keep", help="the curated sets injected at every session start: list, edit, export, import"
    )
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    keep_actions = {
        "list": ("show both sets (the default)", []),
        "add": ("add an entry", ["entry"]),
        "replace": ("replace the entry holding OLD_TEXT", ["old_text", "entry"]),
        "remove": ("remove the entry holding OLD_TEXT", ["old_text"]),
        "export": (f"write the project set to {FILE_PATH} in the repository", []),
        "import": (f"make {FILE_PATH} in the repository the project set", []),
    }
    for name, (help_text, positionals) in keep_actions.items():
        a = actions.add_parser(name, help=help_text)
        for positional in positionals:
            a.add_argument(positional)
        if name in ("add", "replace", "remove"):
            a.add_argument("--scope", choices=[s.value for s in KeepScope], default=KeepScope.PROJECT.value)
        a.add_argument("--dir", type=Path, default=None, help="the project directory (default: here)")
        if name == "list":
            a.add_argument("--json", action="store_true", help="print the sets as JSON")
    p.set_defaults(action="list", dir=None, json=False)

    p = commands.add_parser("review", help="the review queue: list, approve, reject or edit candidates")
    actions = p.add_subparsers(dest="action", metavar="ACTION")
    a = actions.add_parser("url", help="the review page's address, with your secret (--open: in a browser)")
    a.add_argument("--open", action="store_true", help="open it in the default browser")
    a = actions.add_parser("list", help="the pending candidates (the default), or --approved memories")
    a.add_argument("--approved", action="store_true", help="list approved (active) memories instead")
    a.add_argument("--namespace", help="only this namespace")
    a.add_argument("--json", action="store_true")
    for name, help_text in (
        ("approve", "approve a candidate (with edits, if given): it becomes searchable at once"),
        ("reject", "reject a candidate"),
        ("edit", "change a candidate's or an approved memory's text, type or namespace"),
    ):
        a = actions.add_parser(name, help=help_text)
        a.add_argument("id")
        if name == "reject":
            a.add_argument("--reason", default="", help="why (kept with the memory)")
        else:
            a.add_argument("--content", help="the new text")
            a.add_argument("--type", choices=[t.value for t in MemoryType])
            a.add_argument("--namespace", help="person:<name> or workspace:<id>")
            a.add_argument("--why")
            a.add_argument("--how")
    p.set_defaults(action="list", approved=False, namespace=None, json=False)

    p = commands.add_parser("status", help="version, store, daemon and counts")
    p.add_argument("--json", action="store_true")

    p = commands.add_parser("distill", help="distil a session now (needs llm_url and llm_model)")
    p.add_argument("session")
    p.add_argument("--json", action="store_true")

    p = commands.add_parser("judge-log", help="the judge's decisions, newest first")
    p.add_argument("--session", default=None, help="only this session's")
    p.add_argument("--limit", type=int, default=20)
    p.add_argument("--json", action="store_true")

    p = commands.add_parser("stats", help="memory injected into sessions and whether it was used")
    p.add_argument("--days", type=int, default=30, help="the last DAYS UTC days, today included (default 30)")
    p.add_argument(
        "--chart", type=Path, metavar="FILE.html", help="also write a chart of injected vs used per day"
    )
    p.add_argument("--json", action="store_true")

    p = commands.add_parser("models", help="list, verify, install or fetch embedding models")
    p.add_argument("action", nargs="?", choices=["list", "verify", "install", "fetch"], default="list")
    p.add_argument(
        "target", nargs="?", help="install: a model directory with mnemo-model.json; fetch: embeddinggemma"
    )
    p.add_argument("--hub-url", default=None, help="fetch: the hub's base URL (a mirror)")
    p.add_argument("--quiet", action="store_true", help="fetch: no progress bar")
    p.add_argument("--json", action="store_true")

    p = commands.add_parser("daemon", help="start, stop or inspect the background daemon")
    p.add_argument("action", choices=["start", "stop", "status", "run"])
    return parser


def _model(cls: type[M], **values: object) -> M:
    return validated(cls, values)


def _entity(text: str) -> EntityIn:
    spec, _, aliases = text.partition("=")
    name, _, role = spec.partition(":")
    values: dict[str, object] = {"name": name, "aliases": [a for a in aliases.split(",") if a.strip()]}
    if role:
        values["role"] = role
    return _model(EntityIn, **values)


def _write(text: str, stream: TextIO | None = None) -> None:
    (stream or sys.stdout).write(text + "\n")


def _dump(model: BaseModel) -> None:
    _write(json.dumps(model.model_dump(mode="json"), indent=2, ensure_ascii=False))


def _with_client(settings: Settings, work: Callable[[DaemonClient], Awaitable[T]]) -> T:
    async def run() -> T:
        async with DaemonClient(settings) as client:
            return await work(client)

    return anyio.run(run)


def _show_memory(memory: Memory, score: float | None = None) -> None:
    head = f"{memory.id}  {memory.type.value}  {memory.status.value}  {memory.namespace}"
    _write(head + (f"  score {score:.3f}" if score is not None else ""))
    _write(f"  {memory.content}")
    for label in ("who", "when", "where", "why", "how"):
        value = getattr(memory, label)
        if value:
            _write(f"  {label}: {value}")
    if memory.entities:
        _write("  entities: " + ", ".join(f"{e.name} ({e.role})" for e in memory.entities))


def _show_explain(components: dict[str, float] | None) -> None:
    if components:
        _write("  score = " + "  ".join(f"{name} {value:.3f}" for name, value in components.items()))


def _show_episode(episode: Episode, score: float | None = None) -> None:
    turn = f" turn {episode.turn}" if episode.turn is not None else ""
    who = f"{episode.role.value}/{episode.who}" if episode.who else episode.role.value
    session = f"session {episode.session or '-'}{turn}"
    head = f"{episode.id}  {episode.time:%Y-%m-%d %H:%M}  {session}  {who}  {episode.kind.value}"
    _write(head + (f"  score {score:.3f}" if score is not None else ""))
    text = episode.text if len(episode.text) <= 500 else episode.text[:500] + " …"
    _write("  " + text.replace("\n", "\n  "))


def cmd_remember(args: argparse.Namespace, settings: Settings) -> int:
    request = _model(
        RememberRequest,
        content=args.content,
        type=args.type,
        namespace=args.namespace,
        what=args.what,
        who=args.who,
        when=args.when,
        where=args.where,
        why=args.why,
        how=args.how,
        entities=[_entity(e) for e in args.entity],
    )
    memory = _with_client(settings, lambda c: c.remember(request))
    if args.json:
        _dump(memory)
    else:
        _write(f"remembered {memory.id}")
    return EXIT_OK


def cmd_recall(args: argparse.Namespace, settings: Settings) -> int:
    request = _model(
        RecallRequest,
        query=args.query,
        namespace=args.namespace,
        types=args.types,
        include_history=args.include_history,
        limit=args.limit,
        explain=args.explain,
    )
    result: RecallResult = _with_client(settings, lambda c: c.recall(request))
    if args.json:
        _dump(result)
        return EXIT_OK
    for memory_hit in result.memories:
        _show_memory(memory_hit.memory, memory_hit.score)
        _show_explain(memory_hit.explain)
    if result.episodes:
        _write("no memory matched; episodes:")
    for episode_hit in result.episodes:
        _show_episode(episode_hit.episode, episode_hit.score)
        _show_explain(episode_hit.explain)
    if not result.memories and not result.episodes:
        _write("nothing found")
    return EXIT_OK


def cmd_recall_episode(args: argparse.Namespace, settings: Settings) -> int:
    request = _model(
        RecallEpisodeRequest,
        id=args.id,
        session=args.session,
        from_turn=args.from_turn,
        to_turn=args.to_turn,
        query=args.query,
        namespace=args.namespace,
        limit=args.limit,
    )
    result: EpisodesResult = _with_client(settings, lambda c: c.recall_episodes(request))
    if args.json:
        _dump(result)
        return EXIT_OK
    for hit in result.episodes:
        _show_episode(hit.episode, hit.score if request.query else None)
    if not result.episodes:
        _write("no episodes found")
    return EXIT_OK


def cmd_forget(args: argparse.Namespace, settings: Settings) -> int:
    memory = _with_client(settings, lambda c: c.forget(args.id, args.reason))
    if args.json:
        _dump(memory)
    else:
        _write(f"forgot {memory.id} ({memory.content[:80]})")
    return EXIT_OK


class ProgressBar:
    """A one-line progress bar on stderr (one line per 10 % when stderr is not a terminal)."""

    def __init__(self, stream: TextIO, label: str = "") -> None:
        self._stream = stream
        self._label = label
        self._started = time.monotonic()
        self._is_tty = stream.isatty()
        self._last_percent = -10

    def show(self, done: int, total: int, detail: str) -> None:
        percent = 100 if total == 0 else int(100 * done / total)
        bar = "#" * (percent // 4) + "." * (25 - percent // 4)
        text = f"{self._label} [{bar}] {percent:3d}%  {detail}".lstrip()
        if self._is_tty:
            self._stream.write("\r" + text)
        elif percent >= self._last_percent + 10 or percent == 100 or percent < self._last_percent:
            self._stream.write(text + "\n")
            self._last_percent = percent
        self._stream.flush()

    def update(self, lines: int, done_bytes: int, total_bytes: int) -> None:
        """The import's progress: bytes read of the file, lines and lines per second."""
        elapsed = max(time.monotonic() - self._started, 1e-6)
        self.show(done_bytes, total_bytes, f"{lines:,} lines  {lines / elapsed:,.0f} lines/s")

    def close(self) -> None:
        if self._is_tty:
            self._stream.write("\n")


def cmd_import(args: argparse.Namespace, settings: Settings) -> int:
    if args.source != "jsonl":
        return _import_transcripts(args, settings)
    if args.file is None:
        raise InputError("give the JSONL file to import (or --from claude-code|codex)")
    if args.batch_lines < 1:
        raise InputError("--batch-lines must be at least 1")
    bar = None if args.quiet else ProgressBar(sys.stderr, f"importing {args.file.name}")
    try:
        report = _with_client(
            settings,
            lambda c: import_jsonl(
                args.file, c, batch_lines=args.batch_lines, on_progress=bar.update if bar else None
            ),
        )
    finally:
        if bar is not None:
            bar.close()
    for error in report.bad:
        _write(f"{args.file}:{error.line}: {error.message}", sys.stderr)
    if report.zoneless:
        _write(
            f"{args.file}: {report.zoneless:,} lines gave a time with no zone (first: line "
            f"{report.first_zoneless}); read as UTC",
            sys.stderr,
        )
    _write(
        f"{report.lines:,} lines: {report.new:,} new episodes, {report.already_present:,} already present, "
        f"{len(report.bad):,} bad lines"
    )
    return EXIT_ERROR if report.bad else EXIT_OK


def _import_transcripts(args: argparse.Namespace, settings: Settings) -> int:
    path = args.file or transcripts.default_root(args.source)
    bar = None if args.quiet else ProgressBar(sys.stderr, f"importing {args.source} transcripts")

    def progress(done: int, total: int, report: TranscriptReport) -> None:
        if bar is not None:
            bar.show(done, total, f"{done:,}/{total:,} files  {report.new:,} new episodes")

    try:
        report = _with_client(
            settings,
            lambda c: import_transcripts(
                args.source, path, c, person=settings.person, max_chars=settings.max_episode_chars,
                on_progress=progress,
            ),
        )  # fmt: skip
    finally:
        if bar is not None:
            bar.close()
    for error in report.errors:
        _write(error, sys.stderr)
    _write(
        f"{report.files:,} transcripts, {report.sessions:,} sessions, {report.turns:,} turns: "
        f"{report.new:,} new episodes, {report.already_present:,} already present, "
        f"{len(report.errors):,} errors"
    )
    return EXIT_ERROR if report.errors else EXIT_OK


def cmd_status(args: argparse.Namespace, settings: Settings) -> int:
    status = _with_client(settings, lambda c: c.status())
    if args.json:
        _dump(status)
        return EXIT_OK
    memories = ", ".join(f"{k} {v:,}" for k, v in sorted(status.memories.items())) or "none"
    _write(f"mnemo {status.version}")
    _write(f"store      {status.store}")
    _write(f"home       config {settings.config_file}, logs {settings.log_path}")
    _write(f"daemon     pid {status.pid}, up {status.uptime_s:,.1f} s")
    _write(f"schema     version {status.schema_version}")
    _write(f"episodes   {status.episodes:,}")
    _write(f"memories   {memories}")
    _write(f"entities   {status.entities:,}")
    _write(f"embedder   {status.embedder}")
    index = "building" if status.index_build_s is None else f"built in {status.index_build_s:,.1f} s"
    _write(f"index      {index}, {status.embedding_backlog:,} waiting for vectors")
    for graph in status.vector_graphs:  # at the build; an index too small for a graph says nothing
        if not graph.endswith(("no vectors", "no graph needed")):
            _write(f"           {graph}")
    llm = status.language_model
    if not llm.endpoint:
        _write("model      none (set llm_url and llm_model to distil conversations)")
    else:
        cap = f" of {llm.daily_cap:,}" if llm.daily_cap else " (no cap)"
        _write(f"model      {llm.model} at {llm.endpoint}; today {llm.tokens_today:,}{cap} tokens")
        if llm.resumes_at is not None:
            _write(f"           daily cap reached: model work resumes at {llm.resumes_at:%Y-%m-%d %H:%M} UTC")
    for spend in llm.by_model:
        _write(
            f"           {spend.model}: {spend.calls:,} calls, {spend.prompt_tokens:,} prompt + "
            f"{spend.completion_tokens:,} completion tokens today"
        )
    distillation = status.distillation
    if distillation.enabled:
        now = f", distilling {distillation.running}" if distillation.running else ""
        _write(
            f"distilled  {distillation.batches_done:,} batches, {distillation.memories_added:,} memories "
            f"added since start{now}"
        )
        if distillation.paused_until is not None:
            until = f"{distillation.paused_until:%Y-%m-%d %H:%M:%S} UTC"
            _write(f"           paused until {until}: {distillation.last_error}")
        if distillation.failed_batches:
            count = distillation.failed_batches
            latest = distillation.last_failure
            _write(f"           {count:,} failed batch(es), see the daemon log; latest: {latest}")
    return EXIT_OK


def cmd_distill(args: argparse.Namespace, settings: Settings) -> int:
    queued = _with_client(settings, lambda c: c.distil(args.session))
    if args.json:
        _dump(queued)
    elif queued.queued:
        _write(f"session {args.session} queued for distillation; `mnemo status` shows progress")
    else:
        _write(f"mnemo: error: {queued.reason}", sys.stderr)
    return EXIT_OK if queued.queued else EXIT_ERROR


def cmd_judge_log(args: argparse.Namespace, settings: Settings) -> int:
    if not 1 <= args.limit <= 1_000:
        raise InputError("limit: must be between 1 and 1,000")
    log = _with_client(settings, lambda c: c.judge_log(args.limit, args.session))
    if args.json:
        _dump(log)
        return EXIT_OK
    if not log.entries:
        _write("the judge has decided nothing yet")
    for entry in log.entries:
        memory = entry.detail.get("memory")
        what = memory.get("what", "") if isinstance(memory, dict) else ""
        head = f"{entry.at:%Y-%m-%d %H:%M:%S}  {entry.action:<13} {entry.memory}"
        _write(f"{head}  {entry.session}  {entry.namespace}")
        _write(f"    {what}")
        _write(f"    {entry.reason}")
        comparisons = entry.detail.get("comparisons")
        for comparison in comparisons if isinstance(comparisons, list) else []:
            probabilities = comparison["relation"]["probabilities"]
            best = max(probabilities, key=probabilities.get)
            guard = "; guard: " + "; ".join(comparison["guard"]) if comparison["guard"] else ""
            _write(f"    vs {comparison['existing']}: {best} {probabilities[best]:.2f}{guard}")
    return EXIT_OK


def cmd_stats(args: argparse.Namespace, settings: Settings) -> int:
    if not 1 <= args.days <= 3_660:
        raise InputError("--days: must be between 1 and 3,660")
    stats = _with_client(settings, lambda c: c.stats(args.days))
    if args.chart is not None:
        try:
            args.chart.write_text(render_html(stats), encoding="utf-8")
        except OSError as exc:
            raise InputError(f"cannot write {args.chart}: {exc.strerror}") from None
    if args.json:
        _dump(stats)
        return EXIT_OK
    last = stats.until.date() - timedelta(days=1)
    _write(f"mnemo stats, {stats.since:%Y-%m-%d} to {last:%Y-%m-%d} (UTC), {stats.person}")
    _write(f"sessions          {stats.sessions:,}")
    tokens = f"{stats.tokens_injected:,} tokens (estimated)"
    _write(f"injected          {stats.memories_injected:,} memories, {tokens}")
    if stats.memory_share is None:
        _write("share of reading  n/a: no session transcript found")
    else:
        _write(
            f"share of reading  {stats.memory_share:.4%} of the {stats.tokens_read:,} input tokens of "
            f"{stats.sessions_read:,} sessions was memory"
        )
    judged = stats.used + stats.unused + stats.unclear
    counts = f"used {stats.used:,}, clearly unused {stats.unused:,}, unclear {stats.unclear:,}"
    _write(f"verdicts          {judged:,}: {counts}")
    _write(f"suppressed        {len(stats.suppressed):,} memories no longer injected for this person")
    for memory in stats.suppressed[:20]:
        _write(f"                  {memory}")
    if args.chart is not None:
        _write(f"chart             {args.chart}")
    return EXIT_OK


def cmd_models(args: argparse.Namespace, settings: Settings) -> int:
    # Imported here: loading model code pulls in ONNX Runtime, which no other command needs.
    from mnemo.embed import install_model, installed_models, verify_model  # noqa: PLC0415
    from mnemo.embed.hub import DEFAULT_HUB_URL, HUB_MODELS, fetch_model  # noqa: PLC0415

    restart = "restart the daemon to use it (mnemo daemon stop)"
    if args.action == "install":
        if args.target is None:
            raise InputError("mnemo models install needs the model directory to install")
        info = install_model(Path(args.target), settings)
        _write(f"installed {info.id} at {info.location}; {restart}")
        return EXIT_OK
    if args.action == "fetch":
        name = args.target or "embeddinggemma"
        if name not in HUB_MODELS:
            raise InputError(f"unknown model {name!r} to fetch; known: {', '.join(HUB_MODELS)}")
        bar = None if args.quiet else ProgressBar(sys.stderr)
        location = fetch_model(
            HUB_MODELS[name],
            Path(settings.models_dir),
            hub_url=args.hub_url or DEFAULT_HUB_URL,
            progress=None
            if bar is None
            else (lambda path, done, total: bar.show(done, total, f"{path}  {done / 2**20:,.0f} MB")),
        )
        if bar is not None:
            bar.close()
        _write(f"fetched and verified {HUB_MODELS[name].id} into {location}; {restart}")
        return EXIT_OK
    models = installed_models(settings)
    chosen = settings.embedder if settings.embedder != "auto" else (models[0].id if models else "none")
    if args.action == "verify":
        for info in models:
            verify_model(info)
            _write(f"{info.id}: every file matches its sha256")
        return EXIT_OK
    if args.json:
        _write(
            json.dumps({"embedder": chosen, "installed": [dataclasses.asdict(m) for m in models]}, indent=2)
        )
        return EXIT_OK
    for info in models:
        mark = "*" if info.id == chosen else " "
        _write(f"{mark} {info.id:<28} {info.family:<15} {info.dim:>4} dims  {info.location}")
    if not models:
        _write("no embedding model installed: recall searches by words and entities only")
    _write(f"embedder setting: {settings.embedder} (the daemon uses {chosen})")
    return EXIT_OK


def cmd_daemon(args: argparse.Namespace, settings: Settings) -> int:
    if args.action == "start":
        started = ensure_daemon(settings)
        _write(f"mnemo daemon running, pid {started['pid']}, socket {settings.socket_path}")
        return EXIT_OK
    if args.action == "stop":
        pid = stop_daemon(settings)
        _write("mnemo daemon was not running" if pid is None else f"stopped mnemo daemon (pid {pid})")
        return EXIT_OK
    if args.action == "status":
        health = ping(settings)
        if health is None:
            pid = daemon_pid(settings)
            _write("mnemo daemon not running" if pid is None else f"mnemo daemon pid {pid} is not answering")
            return EXIT_NOT_RUNNING
        _write(f"mnemo daemon running, pid {health['pid']}, store {health['store']}")
        return EXIT_OK
    from mnemo.daemon.server import configure_file_logging, run_daemon  # noqa: PLC0415 (heavy: the store)

    configure_file_logging(settings)
    return run_daemon(settings)


def cmd_keep(args: argparse.Namespace, settings: Settings) -> int:
    directory = (args.dir or Path.cwd()).resolve()
    workspace = workspace_namespace(str(directory))
    file = (repo_root(directory) or directory) / FILE_PATH
    if args.action in ("add", "replace", "remove"):
        scope = KeepScope(args.scope)
        request = _model(
            KeepRequest,
            scope=scope,
            action=args.action,
            content=getattr(args, "entry", ""),
            old_text=getattr(args, "old_text", ""),
            workspace=workspace if scope is KeepScope.PROJECT else None,
        )
        result = _with_client(settings, lambda c: c.keep(request))
        kept = result.kept
        _write(f"{result.message}: {kept.used_chars:,} of {kept.budget_chars:,} characters used")
        return EXIT_OK
    if args.action == "import":
        try:
            text = file.read_text(encoding="utf-8")
        except OSError as exc:
            raise InputError(f"cannot read {file}: {exc.strerror or exc}") from None
        body = _model(KeepImportRequest, workspace=workspace, entries=parse_file(text, where=str(file)))
        result = _with_client(settings, lambda c: c.import_kept(body))
        _write(f"{result.message} ({result.kept.used_chars:,} of {result.kept.budget_chars:,} characters)")
        return EXIT_OK
    sets = _with_client(settings, lambda c: c.kept(workspace))
    assert sets.project is not None  # asked with a workspace
    if args.action == "export":
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(render_file(sets.project.entries, workspace), encoding="utf-8")
        _write(f"wrote {len(sets.project.entries)} entries to {file}")
    elif args.json:
        _dump(sets)
    else:
        for kept in (sets.project, sets.user):
            usage = f"{kept.used_chars:,} of {kept.budget_chars:,} characters"
            _write(f"{kept.scope.value} ({kept.owner}): {usage}")
            for entry in kept.entries:
                _write("  - " + entry.replace("\n", "\n    "))
    return EXIT_OK


def cmd_review(args: argparse.Namespace, settings: Settings) -> int:
    if args.action == "url":
        page = _with_client(settings, lambda c: c.review_url())
        if not page.url:
            raise MnemoError(f"no review page: {page.reason}")
        _write(page.url)
        if args.open:
            import webbrowser  # noqa: PLC0415 - only for --open

            # Not the address itself: a browser's arguments are visible to every local user
            # (/proc/<pid>/cmdline). A private file that forwards to it is opened instead.
            webbrowser.open(forwarding_page(settings.run_dir, page.url).as_uri())
        return EXIT_OK
    if args.action == "list":
        status = "active" if args.approved else "candidate"
        queue = _with_client(settings, lambda c: c.review_queue(status, args.namespace))
        if args.json:
            _dump(queue)
            return EXIT_OK
        what = "approved memories" if args.approved else "candidates waiting for review"
        _write(f"{len(queue.memories)} {what} (approval_policy {queue.policy})")
        for memory in queue.memories:
            _show_memory(memory)
            sources = ", ".join(memory.sources)
            _write(f"  seen {memory.seen_count}×, confidence {memory.confidence:.2f}, sources {sources}")
            if memory.status_reason:
                _write(f"  {memory.status_reason}")
        return EXIT_OK
    edit = None
    if args.action != "reject":
        fields = {k: getattr(args, k) for k in ("content", "type", "namespace", "why", "how")}
        if any(v is not None for v in fields.values()):
            edit = _model(ReviewEdit, **fields)
    reason = getattr(args, "reason", "")
    action = _model(ReviewAction, id=args.id, action=args.action, edit=edit, reason=reason)
    memory = _with_client(settings, lambda c: c.review(action))
    _write(f"{memory.id} is {memory.status.value}: {memory.content[:100]}")
    return EXIT_OK


COMMANDS: dict[str, Callable[[argparse.Namespace, Settings], int]] = {
    "review": cmd_review,
    "keep": cmd_keep,
    "distill": cmd_distill,
    "judge-log": cmd_judge_log,
    "remember": cmd_remember,
    "recall": cmd_recall,
    "recall-episode": cmd_recall_episode,
    "forget": cmd_forget,
    "import": cmd_import,
    "stats": cmd_stats,
    "status": cmd_status,
    "models": cmd_models,
    "daemon": cmd_daemon,
}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = load_settings()
        return COMMANDS[args.command](args, settings)
    except MnemoError as exc:
        _write(f"mnemo: error: {exc}", sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        _write("mnemo: interrupted", sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
