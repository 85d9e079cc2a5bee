"""An arena's questions asked again, round after round, on the store one run left
(``eval_arena.py --keep``): the injection policy measured on one writer's memories, apart from
the writer's variance between runs.

    python -m tools.arena.arena_replay /tmp/arena-XXXX --host codex \\
        --scenarios tests/data/writer_scenarios_blind.json --rounds 4 \\
        [--setting prompt_floor=0 --setting start_memories=all --setting suppress_unused=false]

The three settings in brackets are the injection before the usage signal: every related memory
at a prompt, every memory that fits at a start, nothing suppressed. Each replay copies the kept
user's mnemo directories (settings and store) into a fresh user of its own under the arena's
directory, so the kept store stays as the run left it and every replay starts from the same
memories; the host given is installed there (a store recorded through Claude Code can be asked
through Codex: the memories are the workspaces', not the host's). The daemon runs with
``writer = "never"``: question sessions are not distilled, so the memories stay the same from
round to round, and only the usage audit (no model: ``usage_audit = "signal"``, the default) and
what it suppresses change what is injected. Each round asks every question of the
scenarios the arena played, as a new session in the scenario's project, through the oracle reader
(tools/arena/arena_score.py), and then waits until every injected memory has its verdict.

Per round: questions answered by what was injected, the median tokens injected per question,
questions whose prompt got a block (UserPromptSubmit), memories injected per question, tokens per
answered question, and how many memories are suppressed in the scenarios' workspaces. *Lost*: a
question the first round answered and a later one did not. ``--json`` prints one JSON object; the
last line is always a one-line summary.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.host_servers import ScriptedServer, Text, running
from tools import REPO
from tools.arena.arena_hosts import HOSTS, base_env, host_binary
from tools.arena.arena_mnemo import BIN, Mnemo, setting_lines
from tools.arena.arena_score import LINE, median, questions_of, score_question
from tools.arena.eval_arena import ask
from tools.evals.eval_scenarios import load_scenarios, safe_name

MNEMO_DIRS = (".config/mnemo", ".local/share/mnemo")  # settings and store; not the daemon's run dir


def replay_user(arena: Path, settings: Sequence[str]) -> Path:
    """A fresh user under ``arena`` holding a copy of the kept user's mnemo settings and store,
    its writer off and ``settings`` applied."""
    kept = arena / "home"
    subprocess.run(  # a consistent copy: the kept daemon (if any still runs) stops first
        [str(BIN / "mnemo"), "daemon", "stop"],
        env={**base_env(BIN), "HOME": str(kept)},
        capture_output=True,
        check=False,
    )
    home = Path(tempfile.mkdtemp(prefix="replay-", dir=arena))
    for part in MNEMO_DIRS:
        if (kept / part).exists():
            shutil.copytree(kept / part, home / part, symlinks=True)
    config = home / ".config" / "mnemo" / "config.toml"
    overridden = {s.partition("=")[0].strip() for s in settings} | {"writer"}
    lines = [
        line
        for line in config.read_text(encoding="utf-8").splitlines()
        if line.partition("=")[0].strip() not in overridden
    ]
    config.write_text(
        "\n".join([*lines, 'writer = "never"', *setting_lines(settings)]) + "\n", encoding="utf-8"
    )
    return home


def ask_round(
    number: int, host: Any, server: ScriptedServer, scenarios: Sequence[dict[str, Any]], arena: Path
) -> list[dict[str, Any]]:
    rows = []
    for scenario in scenarios:
        project = arena / "projects" / safe_name(scenario["name"])
        for check in questions_of(scenario):
            on = ask(host, server, check["recall"], check["top"], project)
            scored = score_question(scenario, check, on, None, ("", ""))  # as the arena scores it
            blocks = on["blocks"]
            rows.append(
                {
                    "round": number,
                    "scenario": scenario["name"],
                    "question": check["recall"],
                    "answered": scored["answered"],
                    "sources": [s for s, _ in blocks],
                    "memories": len({m for _, t in blocks for m, _ in LINE.findall(t)}),
                    "tokens": scored["tokens"],
                }
            )
    return rows


def round_row(rows: Sequence[dict[str, Any]], suppressed: int, verdicts: dict[str, int]) -> dict[str, Any]:
    answered = sum(r["answered"] for r in rows)
    tokens = sum(r["tokens"] for r in rows)
    return {
        "round": rows[0]["round"],
        "questions": len(rows),
        "answered": answered,
        "median_tokens": median([r["tokens"] for r in rows]),
        "prompt_blocks": sum("UserPromptSubmit" in r["sources"] for r in rows),
        "no_injection": sum(not r["sources"] for r in rows),
        "median_memories": median([r["memories"] for r in rows]),
        "tokens": tokens,
        "tokens_per_answer": round(tokens / answered) if answered else None,
        "suppressed": suppressed,
        "verdicts": verdicts,
    }


def replay(args: argparse.Namespace, scenarios: Sequence[dict[str, Any]]) -> dict[str, Any]:
    home = replay_user(args.arena, args.setting)
    mnemo = Mnemo({**base_env(BIN), "HOME": str(home)})
    workspaces = {f"workspace:{args.arena / 'projects' / safe_name(s['name'])}" for s in scenarios}
    server = ScriptedServer(reply=lambda body: Text("ok"))
    rounds: list[dict[str, Any]] = []
    questions: list[dict[str, Any]] = []
    try:
        with running(server):
            host = HOSTS[args.host](
                host_binary(args.host, args.hosts_dir), {**base_env(BIN), "HOME": str(home)}, with_mnemo=True
            )
            host.install(args.arena / "plugin", server.url)
            before = mnemo.audited()
            for number in range(1, args.rounds + 1):
                started = time.perf_counter()
                rows = ask_round(number, host, server, scenarios, args.arena)
                after = mnemo.audited()
                stats = mnemo.json("stats", "--days", "30")
                suppressed = [s for s in stats["suppressed"] if s["workspace"] in workspaces]
                verdicts = {k: after[k] - before[k] for k in ("used", "unused", "unclear")}
                before = after
                questions += rows
                rounds.append(round_row(rows, len(suppressed), verdicts))
                progress(
                    args,
                    f"  round {number} in {time.perf_counter() - started:.0f} s: {json.dumps(rounds[-1])}",
                )
    finally:
        subprocess.run(
            [str(BIN / "mnemo"), "daemon", "stop"], env=mnemo.env, capture_output=True, check=False
        )
        if not args.keep:
            shutil.rmtree(home, ignore_errors=True)
    first = {(q["scenario"], q["question"]) for q in questions if q["round"] == 1 and q["answered"]}
    lost = sorted(
        {
            (q["scenario"], q["question"])
            for q in questions
            if not q["answered"] and (q["scenario"], q["question"]) in first
        }
    )
    return {
        "arena": str(args.arena),
        "host": args.host,
        "settings": args.setting,
        "rounds": rounds,
        "questions": questions,
        "lost": [list(q) for q in lost],
        "home": str(home) if args.keep else None,
    }


def summary(out: dict[str, Any]) -> str:
    first, last = out["rounds"][0], out["rounds"][-1]
    policy = " ".join(out["settings"]) or "defaults"
    return (
        f"arena replay {out['host']} ({policy}), {len(out['rounds'])} rounds: answered "
        f"{first['answered']}/{first['questions']} -> {last['answered']}/{last['questions']}, median tokens "
        f"a question {first['median_tokens']} -> {last['median_tokens']}, prompt blocks "
        f"{first['prompt_blocks']} -> {last['prompt_blocks']}, tokens per answer "
        f"{first['tokens_per_answer']} -> {last['tokens_per_answer']}, {last['suppressed']} suppressed, "
        f"{len(out['lost'])} lost"
    )


def progress(args: argparse.Namespace, line: str) -> None:
    print(line, file=sys.stderr if args.json else sys.stdout, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("arena", type=Path, help="a directory eval_arena.py --keep left")
    parser.add_argument("--host", choices=sorted(HOSTS), required=True, help="the host to ask through")
    parser.add_argument("--scenarios", type=Path, action="append", required=True, help="the run's scenarios")
    parser.add_argument("--only", action="append", default=[], help="only the scenario of this name")
    parser.add_argument("--rounds", type=int, default=4, help="how many times each question is asked")
    parser.add_argument("--setting", action="append", default=[], metavar="KEY=VALUE", help="a mnemo setting")
    parser.add_argument(
        "--hosts-dir", type=Path, default=REPO / ".hosts", help="where npm installed the hosts"
    )
    parser.add_argument("--keep", action="store_true", help="keep the replay's user directory")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout, then the summary")
    args = parser.parse_args(argv)
    try:
        if args.rounds < 1:
            raise ValueError("--rounds must be at least 1")
        if not (args.arena / "home").is_dir() or not (args.arena / "plugin").is_dir():
            raise ValueError(f"{args.arena} is not a kept arena (no home/ and plugin/ there)")
        scenarios = [s for path in args.scenarios for s in load_scenarios(path)]
        scenarios = [s for s in scenarios if not args.only or s["name"] in args.only]
        scenarios = [s for s in scenarios if (args.arena / "projects" / safe_name(s["name"])).is_dir()]
        if not scenarios:
            raise ValueError(f"none of the scenarios given was played in {args.arena}")
        host_binary(args.host, args.hosts_dir)
    except (ValueError, FileNotFoundError) as exc:
        print(f"arena_replay: {exc}", file=sys.stderr)
        return 2
    out = replay(args, scenarios)
    if args.json:
        print(json.dumps(out, ensure_ascii=False))
    else:
        for row in out["rounds"]:
            print(json.dumps(row))
        for scenario, question in out["lost"]:
            print(f"lost: {scenario}: {question}")
    print(summary(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
