"""The whole loop, measured: scenarios played through the real Claude Code or Codex, recorded by
mnemo's hooks, distilled by the daemon's writer between sessions, then asked as new sessions and
scored on what mnemo put in front of the agent.

    python -m tools.arena.eval_arena --host claude-code --scenarios tests/data/writer_scenarios.json \\
        --llm-url http://127.0.0.1:8080/v1 --model qwen2.5-coder-1.5b

Input: the scenario format ``tools/evals/eval_writer.py --scenarios`` reads (docs/models.md#scenarios),
so a set runs through both and the two levels can be compared. Each scenario gets a project
directory of its own (its workspace); its ``namespace`` is not used. Sessions are played minutes
apart, not ``day`` days (how they are played: tools/arena/arena_hosts.py). After each session the arena
asks the daemon to distil it (``mnemo distill``) and waits; the writer's model is the one given
(``--backend claude-code|codex --host-command CLI``: through that host's CLI, as eval_writer).
Everything runs as a throwaway user (HOME) in a temporary directory; ``--keep`` keeps it.

Each ``recall`` check is a question, asked as the first prompt of a new session in the scenario's
project. The scripted agent is an oracle reader: it answers citing the injected memory whose line
holds the check's answer words (``top``), else "Not in what I was given." The arena reads the
blocks mnemo injected (SessionStart and UserPromptSubmit ``<mnemo-memory>`` blocks) from the first
request the agent's model received, and scores:

- **answered**: every answer word (``a|b``: either) is in what was injected, and in which block;
- **stale**, per ``closed`` check (a value that stopped being true): whether a memory line injected
  in any of the scenario's question sessions (every injected memory is current) holds the check's
  words and no current question's answer (a line with both tells history);
- **tokens injected** (mnemo's estimate, UTF-8 bytes / 3, the one its budgets use);
- **recall level**: whether ``mnemo recall`` (the question, from the project) puts first a memory
  holding the answer words with the check's status — what eval_writer scores;
- **mnemo off**: the same question through the host without mnemo's plugin (the baseline): whether
  the answer words reach the agent anyway, in what the person's messages say (the host's own tagged
  context cut out); ``--baseline-only`` measures this row alone, without a writer.

Per scenario: tokens injected per answered question, the writer's model time, calls and tokens
from each session's start until its distillation ended (the usage audit included), and the usage
audit's verdicts on what the scenario's sessions were given (``mnemo stats``). ``--json`` prints
one JSON object; otherwise tables. The last line is always a one-line summary.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mnemo.config import load_settings
from mnemo.errors import ConfigError
from tests.helpers import copy_as_plugin
from tests.host_servers import ScriptedServer, Text, running
from tools import REPO
from tools.arena.arena_hosts import (
    HOSTS,
    Exchange,
    Host,
    SessionScript,
    base_env,
    body_text,
    exchanges,
    host_binary,
)
from tools.arena.arena_mnemo import BIN, Mnemo, setting_lines
from tools.arena.arena_score import (
    NOT_GIVEN,
    injected_blocks,
    median,
    off_scores,
    person_text,
    print_tables,
    questions_of,
    reader,
    scenario_row,
    score_question,
    stale_checks,
    stale_line,
    summary,
    totals,
)
from tools.evals.eval_scenarios import load_scenarios, safe_name

# What mnemo stats says of injection over the whole run: every session, played or asked.
INJECTION_FIGURES = (
    "sessions",
    "prompts",
    "prompts_injected",
    "prompt_block_tokens",
    "start_blocks",
    "start_block_tokens",
    "memories_injected",
    "tokens_injected",
)


def ask(
    host: Host, server: ScriptedServer, question: str, answer: Sequence[str], project: Path
) -> dict[str, Any]:
    """One question as a new session; the blocks its first model request carried."""
    server.reply = reader(answer)
    server.requests.clear()
    host.play([Exchange(question, [[Text(NOT_GIVEN)]], [])], project)
    first = next((b for b in server.requests if b.get("tools")), None)
    if first is None:
        raise RuntimeError(f"{host.name} sent no request with tools for {question!r}")
    return {"blocks": injected_blocks(first), "text": body_text(first), "person": person_text(first)}


def run(args: argparse.Namespace, scenarios: Sequence[dict[str, Any]], root: Path) -> dict[str, Any]:
    env = base_env(BIN)
    user = root / "home"
    config = user / ".config" / "mnemo" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(writer_config(args), encoding="utf-8")
    load_settings({**env, "HOME": str(user)})  # a clear error now rather than a daemon that will not start
    mnemo = Mnemo({**env, "HOME": str(user)})
    binary = host_binary(args.host, args.hosts_dir)
    plugin = copy_as_plugin(root / "plugin")
    server = ScriptedServer(reply=lambda body: Text("ok"))
    sessions: list[dict[str, Any]] = []
    questions: list[dict[str, Any]] = []
    stale: list[dict[str, Any]] = []
    per_scenario: list[dict[str, Any]] = []
    with running(server):
        host = HOSTS[args.host](binary, {**env, "HOME": str(user)}, with_mnemo=True)
        host.install(plugin, server.url)
        off = None
        if not args.no_baseline:
            off = HOSTS[args.host](binary, {**env, "HOME": str(root / "home-off")}, with_mnemo=False)
            off.install(plugin, server.url)
        for scenario in scenarios:
            project = root / "projects" / safe_name(scenario["name"])
            (project / ".arena").mkdir(parents=True)
            verdicts = mnemo.audited() if per_scenario else {"used": 0, "unused": 0, "unclear": 0}
            rows = []
            for session in scenario["sessions"]:
                name = safe_name(session["name"])
                played = exchanges(session["turns"], name, host.shell)
                for exchange in played:
                    for path, text in exchange.files:
                        (project / path).write_text(text + "\n", encoding="utf-8")
                script = SessionScript(played)
                server.reply, before = script, mnemo.settled()
                server.requests.clear()  # whole conversations: only a question's are read
                started = time.perf_counter()
                session_id = host.play(played, project, script)
                played_s = time.perf_counter() - started
                row = {
                    "scenario": scenario["name"],
                    "session": session["name"],
                    "session_id": session_id,
                    "played_s": round(played_s, 1),
                    **mnemo.distil(session_id, before),
                }
                rows.append(row)
                progress(
                    args,
                    f"  {scenario['name']}/{session['name']}: played in {played_s:.0f} s, "
                    f"distilled in {row['seconds']:.0f} s ({row['calls']} calls, {row['added']} added)",
                )
            asked, injected = [], []
            for check in questions_of(scenario):
                on = ask(host, server, check["recall"], check["top"], project)
                injected.append(on["blocks"])
                base = ask(off, server, check["recall"], check["top"], project) if off is not None else None
                recall = mnemo.recall_top(check["recall"], project)
                asked.append(score_question(scenario, check, on, base, recall))
                q = asked[-1]
                progress(
                    args,
                    f"  ? {q['question']}: {'answered' if q['answered'] else 'not answered'}"
                    f" ({', '.join(q['blocks']) or '-'}), {q['tokens']} tokens, recall "
                    f"{'ok' if q['recall_ok'] else 'wrong'}",
                )
            found = stale_checks(scenario, injected)
            for c in found:
                if c["lines"]:
                    progress(args, f"  ! closed value injected as current: {stale_line(c)}")
            after = mnemo.audited()
            sessions += rows
            questions += asked
            stale += found
            per_scenario.append(scenario_row(scenario["name"], rows, asked, found, verdicts, after))
            progress(args, f"  = {json.dumps(per_scenario[-1], ensure_ascii=False)}")  # read if a run is cut
        stats = mnemo.json("stats", "--days", "2")
    injection = {k: stats[k] for k in INJECTION_FIGURES} | {"suppressed": len(stats["suppressed"])}
    return {
        "host": args.host,
        "model": args.model,
        "settings": args.setting,
        "injection": injection,
        "sessions": sessions,
        "questions": questions,
        "stale": stale,
        "scenarios": per_scenario,
        "totals": totals(per_scenario, questions, off is not None),
    }


def baseline(args: argparse.Namespace, scenarios: Sequence[dict[str, Any]], root: Path) -> dict[str, Any]:
    """The mnemo-off row alone (``--baseline-only``): each question through the host without mnemo,
    no writer; whether the answer's words reach the agent anyway (in the question itself)."""
    server = ScriptedServer(reply=lambda body: Text("ok"))
    env = {**base_env(BIN), "HOME": str(root / "home-off")}
    questions = []
    with running(server):
        off = HOSTS[args.host](host_binary(args.host, args.hosts_dir), env, with_mnemo=False)
        off.install(root, server.url)
        for scenario in scenarios:
            project = root / "projects" / safe_name(scenario["name"])
            project.mkdir(parents=True)
            for check in questions_of(scenario):
                asked = ask(off, server, check["recall"], check["top"], project)
                row = {"scenario": scenario["name"], "question": check["recall"]}
                questions.append(row | off_scores(asked, check["top"]))
    return {"host": args.host, "baseline_only": True, "questions": questions}


def baseline_summary(out: dict[str, Any]) -> str:
    questions = out["questions"]
    carried = sum(q["off_answered"] for q in questions)
    tokens = median([q["off_request_tokens"] for q in questions])
    return (
        f"arena {out['host']}, mnemo off: {carried}/{len(questions)} questions carry their answer's words, "
        f"median first request {tokens:,} tokens"
    )


def writer_config(args: argparse.Namespace) -> str:
    """The arena user's config.toml: the writer's model (an endpoint, or a host's CLI in front of
    one, as eval_writer's --backend), no caps, and no distillation but the one the arena asks for."""
    if args.backend == "openai":
        model = {"llm_url": args.llm_url, "llm_model": args.model}
    else:
        model = {"llm_backend": args.backend, "llm_host_url": args.llm_url, "llm_host_model": args.model}
        model |= {"llm_host_command": args.host_command, "llm_calls_per_minute": 0, "llm_daily_call_cap": 0}
    fixed = {"embedder": args.embedder, "llm_timeout_s": 600, "llm_daily_token_cap": 0}
    lines = [f"{k} = {json.dumps(v)}" for k, v in {**model, **fixed, "distill_idle_s": 86400}.items()]
    return "\n".join([*lines, *setting_lines(args.setting)]) + "\n"


def progress(args: argparse.Namespace, line: str) -> None:
    print(line, file=sys.stderr if args.json else sys.stdout, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--host", choices=sorted(HOSTS), required=True, help="the host binary to play through"
    )
    parser.add_argument("--scenarios", type=Path, action="append", required=True, help="scenarios (JSON)")
    parser.add_argument("--llm-url", required=True, help="the writer's OpenAI-compatible endpoint")
    parser.add_argument("--model", required=True, help="the model name the endpoint serves")
    parser.add_argument(
        "--backend", choices=("openai", "claude-code", "codex"), default="openai", help="setting llm_backend"
    )
    parser.add_argument(
        "--host-command", default="", help="with a host backend: its CLI (setting llm_host_command)"
    )
    parser.add_argument(
        "--embedder", default="use-multilingual-v3", help="the embedding model (setting embedder)"
    )
    parser.add_argument(
        "--hosts-dir", type=Path, default=REPO / ".hosts", help="where npm installed the hosts"
    )
    parser.add_argument(
        "--only", action="append", default=[], help="only the scenario of this name (repeatable)"
    )
    parser.add_argument("--no-baseline", action="store_true", help="skip the mnemo-off row")
    parser.add_argument(
        "--baseline-only", action="store_true", help="only the mnemo-off row: no writer, no sessions played"
    )
    parser.add_argument("--keep", action="store_true", help="keep the arena's directory (printed)")
    parser.add_argument(
        "--setting",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a mnemo setting for the arena's daemon (repeatable), e.g. prompt_floor=0 start_memories=all",
    )
    parser.add_argument(
        "--json", action="store_true", help="one JSON object on stdout, then the summary line"
    )
    args = parser.parse_args(argv)
    try:
        scenarios = [s for path in args.scenarios for s in load_scenarios(path)]
        if args.only:
            unknown = set(args.only) - {s["name"] for s in scenarios}
            if unknown:
                raise ValueError(f"no scenario named {', '.join(sorted(unknown))}")
            scenarios = [s for s in scenarios if s["name"] in args.only]
        host_binary(args.host, args.hosts_dir)
    except (ValueError, FileNotFoundError) as exc:
        print(f"eval_arena: {exc}", file=sys.stderr)
        return 2
    root = Path(tempfile.mkdtemp(prefix="arena-", dir="/tmp"))
    started = time.perf_counter()
    try:
        out = baseline(args, scenarios, root) if args.baseline_only else run(args, scenarios, root)
    except ConfigError as exc:
        print(f"eval_arena: the writer's settings: {exc}", file=sys.stderr)
        return 2
    finally:
        subprocess.run(
            [str(BIN / "mnemo"), "daemon", "stop"],
            env={**base_env(BIN), "HOME": str(root / "home")},
            capture_output=True,
            check=False,
        )
        if not args.keep:
            subprocess.run(["rm", "-rf", str(root)], check=False)
        else:
            print(f"arena kept in {root}", file=sys.stderr)
    out["seconds"] = round(time.perf_counter() - started, 1)
    if args.json:
        print(json.dumps(out, ensure_ascii=False))
    elif not args.baseline_only:
        print_tables(out)
    print(baseline_summary(out) if args.baseline_only else summary(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
