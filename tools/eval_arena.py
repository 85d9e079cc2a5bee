"""The whole loop, measured: scenarios played through the real Claude Code or Codex, recorded by
mnemo's hooks, distilled by the daemon's writer between sessions, then asked as new sessions and
scored on what mnemo put in front of the agent.

    python tools/eval_arena.py --host claude-code --scenarios tests/data/writer_scenarios.json \\
        --llm-url http://127.0.0.1:8080/v1 --model qwen2.5-coder-1.5b

Input: the scenario format ``tools/eval_writer.py --scenarios`` reads (docs/models.md#scenarios),
so a set runs through both and the two levels can be compared. Each scenario gets a project
directory of its own (its workspace); its ``namespace`` is not used. Sessions are played minutes
apart, not ``day`` days (how they are played: tools/arena_hosts.py). After each session the arena
asks the daemon to distil it (``mnemo distill``) and waits; the writer's model is the one given.

Each ``recall`` check is a question, asked as the first prompt of a new session in the scenario's
project. The scripted agent is an oracle reader: it answers citing the injected memory whose line
holds the check's answer words (``top``), else "Not in what I was given." The arena reads the
blocks mnemo injected (SessionStart and UserPromptSubmit ``<mnemo-memory>`` blocks) from the first
request the agent's model received, and scores:

- **answered**: every answer word (``a|b``: either) is in what was injected, and in which block;
- **stale**: for a question about the current state, a memory line injected as current that holds a
  ``closed`` check's words of the scenario and not the answer;
- **tokens injected** (mnemo's estimate, UTF-8 bytes / 3, the one its budgets use);
- **recall level**: whether ``mnemo recall`` (the question, from the project) puts first a memory
  holding the answer words with the check's status — what eval_writer scores;
- **mnemo off**: the same question through the host without mnemo's plugin (the baseline).

Per scenario: tokens injected per answered question, the writer's model time, calls and tokens
while distilling its sessions, and the usage audit's verdicts on what its questions were given
(``mnemo stats``). ``--json`` prints one JSON object; otherwise tables. The last line is always a
one-line summary.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from arena_hosts import (
    HOSTS,
    Exchange,
    Host,
    SessionScript,
    base_env,
    body_text,
    exchanges,
    host_binary,
    plugin_copy,
)
from eval_scenarios import load_scenarios
from mnemo.usage.budget import estimate_tokens
from tests.host_servers import Block, ScriptedServer, Text, running

REPO = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
BLOCK = re.compile(r'<mnemo-memory source="(\w+)">(.*?)</mnemo-memory>', re.DOTALL)
LINE = re.compile(r"^- \[([^\]]+)\] (.*)$", re.MULTILINE)
NOT_GIVEN = "Not in what I was given."
WAIT_S = 1800


def holds(text: str, words: Sequence[str]) -> bool:
    """Every word (``a|b`` meaning either) in ``text``, case aside (eval_scenarios' rule)."""
    text = text.lower()
    return all(any(w.lower() in text for w in word.split("|")) for word in words)


def injected_blocks(body: dict[str, Any]) -> list[tuple[str, str]]:
    """The mnemo blocks a request carried, (source, text), each once, in order."""
    return list(dict.fromkeys((m.group(1), m.group(2)) for m in BLOCK.finditer(body_text(body))))


def reader(answer: Sequence[str]) -> Any:
    """The oracle reader: cites the injected memory whose line holds the answer."""

    def reply(body: dict[str, Any]) -> Block:
        if not body.get("tools"):
            return Text("ok")
        for _, text in injected_blocks(body):
            for memory_id, line in LINE.findall(text):
                if holds(line, answer):
                    return Text(f"From memory [{memory_id}]: {line[:300]}")
        return Text(NOT_GIVEN)

    return reply


class Mnemo:
    """The mnemo CLI in the arena's user environment (the daemon the hooks start)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env

    def json(self, *args: str, cwd: Path | None = None) -> Any:
        done = subprocess.run(
            [str(BIN / "mnemo"), *args, "--json"],
            env=self.env,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"mnemo {args[0]} failed ({done.returncode}): {done.stderr[-1000:]}")
        return json.loads(done.stdout)

    def settled(self) -> dict[str, Any]:
        """``mnemo status`` once no session is being distilled or waits to be."""
        deadline = time.monotonic() + WAIT_S
        while True:
            status = self.json("status")
            work = status["distillation"]
            if not work["asked"] and not work["running"]:
                return dict(status)
            if time.monotonic() > deadline:
                raise RuntimeError(f"distillation did not end within {WAIT_S} s: {work}")
            time.sleep(1)

    def distil(self, session: str, before: dict[str, Any]) -> dict[str, Any]:
        """Distil ``session`` (played since ``before``, a settled status) and wait: how long that
        took, and the model calls and tokens spent since ``before`` (a host's SessionEnd may have
        asked already; the usage audit of the session's turns is counted too)."""
        started = time.perf_counter()
        self.json("distill", session)
        after = self.settled()
        spent, was = after["language_model"], before["language_model"]
        return {
            "seconds": round(time.perf_counter() - started, 1),
            "calls": spent["calls_today"] - was["calls_today"],
            "tokens": spent["tokens_today"] - was["tokens_today"],
            "added": after["distillation"]["memories_added"] - before["distillation"]["memories_added"],
        }

    def audited(self) -> dict[str, int]:
        """The usage verdicts so far, once every injected memory has one (or WAIT_S passed)."""
        deadline = time.monotonic() + WAIT_S
        while True:
            stats = self.json("stats", "--days", "1")
            verdicts = {k: stats[k] for k in ("used", "unused", "unclear")}
            if sum(verdicts.values()) >= stats["memories_injected"] or time.monotonic() > deadline:
                return {**verdicts, "injected": stats["memories_injected"]}
            time.sleep(2)

    def recall_top(self, question: str, cwd: Path) -> tuple[str, str]:
        """What ``mnemo recall`` puts first among the memories the hooks draw on there: the
        project's workspace and the person's (the CLI alone searches every namespace)."""
        hits = self.json("recall", question, "--limit", "50", cwd=cwd)["memories"]
        mine = [h["memory"] for h in hits if h["memory"]["namespace"] in (f"workspace:{cwd}", self.person)]
        if not mine:
            return "", ""
        text = " ".join(str(mine[0].get(k) or "") for k in ("what", "why", "how", "where"))
        return mine[0]["status"], text

    @property
    def person(self) -> str:
        return f"person:{self.json('status')['person']}"


def _prefix(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]", "-", name)


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
    conversation = body_text({"messages": first.get("messages") or first.get("input") or []})
    return {"blocks": injected_blocks(first), "text": body_text(first), "conversation": conversation}


def score_question(
    scenario: dict[str, Any],
    check: dict[str, Any],
    on: dict[str, Any],
    off: dict[str, Any] | None,
    recall: tuple[str, str],
) -> dict[str, Any]:
    answer = check["top"]
    where = [source for source, text in on["blocks"] if holds(text, answer)]
    joined = "\n".join(text for _, text in on["blocks"])
    stale_words = [c["closed"] for c in scenario.get("checks", []) if "closed" in c]
    stale = []
    if check.get("status", "active") == "active":
        stale = [
            line
            for _, text in on["blocks"]
            for _, line in LINE.findall(text)
            if any(holds(line, words) for words in stale_words) and not holds(line, answer)
        ]
    status, text = recall
    return {
        "scenario": scenario["name"],
        "question": check["recall"],
        "label": check.get("label", ""),
        "answered": holds(joined, answer) if on["blocks"] else False,
        "blocks": where,
        "stale": stale[:3],
        "tokens": sum(
            estimate_tokens(f'<mnemo-memory source="{s}">{t}</mnemo-memory>') for s, t in on["blocks"]
        ),
        "recall_ok": bool(text) and holds(text, answer) and status == check.get("status", "active"),
        "recall_top": f"{status} {text[:120]}".strip(),
        "off_answered": off is not None and holds(off["conversation"], answer),
        "request_tokens": estimate_tokens(on["text"]),
        "off_request_tokens": estimate_tokens(off["text"]) if off is not None else 0,
    }


def run(args: argparse.Namespace, scenarios: Sequence[dict[str, Any]], root: Path) -> dict[str, Any]:
    env = base_env(BIN)
    user = root / "home"
    config = user / ".config" / "mnemo" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(
        f'llm_url = "{args.llm_url}"\nllm_model = "{args.model}"\nembedder = "{args.embedder}"\n'
        "llm_timeout_s = 600\nllm_daily_token_cap = 0\ndistill_idle_s = 86400\n"
    )
    mnemo = Mnemo({**env, "HOME": str(user)})
    binary = host_binary(args.host, args.hosts_dir)
    plugin = plugin_copy(REPO, root / "plugin")
    server = ScriptedServer(reply=lambda body: Text("ok"))
    sessions: list[dict[str, Any]] = []
    questions: list[dict[str, Any]] = []
    per_scenario: list[dict[str, Any]] = []
    with running(server):
        host = HOSTS[args.host](binary, {**env, "HOME": str(user)}, with_mnemo=True)
        host.install(plugin, server.url)
        off = None
        if not args.no_baseline:
            off = HOSTS[args.host](binary, {**env, "HOME": str(root / "home-off")}, with_mnemo=False)
            off.install(plugin, server.url)
        for scenario in scenarios:
            project = root / "projects" / _prefix(scenario["name"])
            (project / ".arena").mkdir(parents=True)
            verdicts = mnemo.audited() if per_scenario else {"used": 0, "unused": 0, "unclear": 0}
            rows = []
            for session in scenario["sessions"]:
                name = _prefix(session["name"])
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
            asked = []
            for check in (c for c in scenario.get("checks", []) if "recall" in c):
                on = ask(host, server, check["recall"], check["top"], project)
                base = ask(off, server, check["recall"], check["top"], project) if off is not None else None
                recall = mnemo.recall_top(check["recall"], project)
                asked.append(score_question(scenario, check, on, base, recall))
                q = asked[-1]
                progress(
                    args,
                    f"  ? {q['question']}: {'answered' if q['answered'] else 'not answered'}"
                    f" ({', '.join(q['blocks']) or '-'}), {q['tokens']} tokens, recall "
                    f"{'ok' if q['recall_ok'] else 'wrong'}{', STALE' if q['stale'] else ''}",
                )
            after = mnemo.audited()
            sessions += rows
            questions += asked
            per_scenario.append(scenario_row(scenario["name"], rows, asked, verdicts, after))
    return {
        "host": args.host,
        "model": args.model,
        "sessions": sessions,
        "questions": questions,
        "scenarios": per_scenario,
        "totals": totals(per_scenario, questions, off is not None),
    }


def scenario_row(
    name: str,
    rows: Sequence[dict[str, Any]],
    asked: Sequence[dict[str, Any]],
    before: dict[str, int],
    after: dict[str, int],
) -> dict[str, Any]:
    answered = sum(q["answered"] for q in asked)
    tokens = sum(q["tokens"] for q in asked)
    return {
        "scenario": name,
        "questions": len(asked),
        "answered": answered,
        "recall_ok": sum(q["recall_ok"] for q in asked),
        "stale": sum(bool(q["stale"]) for q in asked),
        "off_answered": sum(q["off_answered"] for q in asked),
        "tokens": tokens,
        "tokens_per_answer": round(tokens / answered) if answered else None,
        "model_s": round(sum(r["seconds"] for r in rows), 1),
        "model_calls": sum(r["calls"] for r in rows),
        "model_tokens": sum(r["tokens"] for r in rows),
        "verdicts": {k: after[k] - before.get(k, 0) for k in ("used", "unused", "unclear")},
    }


def totals(
    per_scenario: Sequence[dict[str, Any]], questions: Sequence[dict[str, Any]], baseline: bool
) -> dict[str, Any]:
    total = {
        k: sum(s[k] for s in per_scenario)
        for k in (
            "questions",
            "answered",
            "recall_ok",
            "stale",
            "off_answered",
            "tokens",
            "model_s",
            "model_calls",
        )
    }
    total["tokens_per_answer"] = round(total["tokens"] / total["answered"]) if total["answered"] else None
    total["verdicts"] = {
        k: sum(s["verdicts"][k] for s in per_scenario) for k in ("used", "unused", "unclear")
    }
    total["baseline"] = baseline
    total["request_tokens"] = median([q["request_tokens"] for q in questions])
    total["off_request_tokens"] = median([q["off_request_tokens"] for q in questions]) if baseline else None
    return total


def median(values: Sequence[int]) -> int | None:
    ordered = sorted(values)
    return ordered[len(ordered) // 2] if ordered else None


def progress(args: argparse.Namespace, line: str) -> None:
    print(line, file=sys.stderr if args.json else sys.stdout, flush=True)


def summary(out: dict[str, Any]) -> str:
    t = out["totals"]
    per = f"{t['tokens_per_answer']:,}" if t["tokens_per_answer"] is not None else "-"
    off = f"; mnemo off {t['off_answered']}/{t['questions']}" if t["baseline"] else ""
    return (
        f"arena {out['host']} ({out['model']}): {t['answered']}/{t['questions']} answered by what was "
        f"injected (recall level {t['recall_ok']}/{t['questions']}), {t['stale']} with a stale answer, "
        f"{per} tokens injected per answered question, "
        f"writer {t['model_s']:,.0f} s in {t['model_calls']} calls{off}"
    )


def print_tables(out: dict[str, Any]) -> None:
    print(
        f"\n{'scenario':<24}{'asked':>6}{'inj.':>6}{'recall':>7}{'stale':>6}{'off':>5}{'tok/ans':>8}"
        f"{'model s':>9}{'calls':>6}  used/unused/unclear"
    )
    for s in out["scenarios"]:
        per = str(s["tokens_per_answer"]) if s["tokens_per_answer"] is not None else "-"
        v = s["verdicts"]
        print(
            f"{s['scenario'][:23]:<24}{s['questions']:>6}{s['answered']:>6}{s['recall_ok']:>7}{s['stale']:>6}"
            f"{s['off_answered']:>5}{per:>8}{s['model_s']:>9.1f}{s['model_calls']:>6}  "
            f"{v['used']}/{v['unused']}/{v['unclear']}"
        )
    differ = [q for q in out["questions"] if q["answered"] != q["recall_ok"]]
    if differ:
        print("\nwhere the levels differ:")
        for q in differ:
            print(
                f"  {q['scenario']}: {q['question']!r}: injected {'yes' if q['answered'] else 'no'}, "
                f"recall {'ok' if q['recall_ok'] else 'wrong'} (top: {q['recall_top'][:90]})"
            )


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
        "--embedder", default="use-multilingual-v3", help="the embedding model (setting embedder)"
    )
    parser.add_argument(
        "--hosts-dir", type=Path, default=REPO / ".hosts", help="where npm installed the hosts"
    )
    parser.add_argument(
        "--only", action="append", default=[], help="only the scenario of this name (repeatable)"
    )
    parser.add_argument("--no-baseline", action="store_true", help="skip the mnemo-off row")
    parser.add_argument("--keep", action="store_true", help="keep the arena's directory (printed)")
    parser.add_argument(
        "--json", action="store_true", help="one JSON object on stdout, then the summary line"
    )
    args = parser.parse_args(argv)
    try:
        scenarios = [s for path in args.scenarios for s in load_scenarios(path)]
        if args.only:
            scenarios = [s for s in scenarios if s["name"] in args.only]
            if not scenarios:
                raise ValueError(f"no scenario named {', '.join(args.only)}")
        host_binary(args.host, args.hosts_dir)
    except (ValueError, FileNotFoundError) as exc:
        print(f"eval_arena: {exc}", file=sys.stderr)
        return 2
    root = Path(tempfile.mkdtemp(prefix="arena-", dir="/tmp"))
    started = time.perf_counter()
    try:
        out = run(args, scenarios, root)
    finally:
        stop = subprocess.run(
            [str(BIN / "mnemo"), "daemon", "stop"],
            env={**base_env(BIN), "HOME": str(root / "home")},
            capture_output=True,
            check=False,
        )
        del stop
        if not args.keep:
            subprocess.run(["rm", "-rf", str(root)], check=False)
        else:
            print(f"arena kept in {root}", file=sys.stderr)
    out["seconds"] = round(time.perf_counter() - started, 1)
    if args.json:
        print(json.dumps(out, ensure_ascii=False))
    else:
        print_tables(out)
    print(summary(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
