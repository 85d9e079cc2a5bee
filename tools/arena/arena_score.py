"""How tools/arena/eval_arena.py scores a question and sums a scenario: what the hooks injected against
the answer words and recall, and a scenario's closed values against what all its questions were
given; its tables and summary line."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from mnemo.usage.budget import estimate_tokens
from tests.host_servers import Block, Text
from tools.arena.arena_hosts import body_text
from tools.evals.eval_scenarios import holds

BLOCK = re.compile(r'<mnemo-memory source="(\w+)">(.*?)</mnemo-memory>', re.DOTALL)
FRAMING = re.compile(r"<([A-Za-z][\w-]*)\b[^>]*>.*?</\1\s*>", re.DOTALL)  # a host's tagged context
LINE = re.compile(r"^- \[([^\]]+)\] (.*)$", re.MULTILINE)
NOT_GIVEN = "Not in what I was given."


def injected_blocks(body: dict[str, Any]) -> list[tuple[str, str]]:
    """The mnemo blocks a request carried, (source, text), each once, in order."""
    return list(dict.fromkeys((m.group(1), m.group(2)) for m in BLOCK.finditer(body_text(body))))


def person_text(body: dict[str, Any]) -> str:
    """What the person's messages of a request say, without the context a host (or mnemo) wraps
    in tags there: Claude Code's <system-reminder>, Codex's <environment_context>, mnemo's blocks.
    Only the messages' text: a Responses API item's id (``msg_01a24897…``) holds digits an answer
    may be made of."""
    said = []
    for message in body.get("messages") or body.get("input") or []:
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            said.append(content)
        elif isinstance(content, list):
            said += [b["text"] for b in content if isinstance(b, dict) and isinstance(b.get("text"), str)]
    return FRAMING.sub("", "\n".join(said))


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
    status, text = recall
    return {
        "scenario": scenario["name"],
        "question": check["recall"],
        "label": check.get("label", ""),
        "answered": holds(joined, answer) if on["blocks"] else False,
        "blocks": where,
        "tokens": sum(
            estimate_tokens(f'<mnemo-memory source="{s}">{t}</mnemo-memory>') for s, t in on["blocks"]
        ),
        "recall_ok": bool(text) and holds(text, answer) and status == check.get("status", "active"),
        "recall_top": f"{status} {text[:120]}".strip(),
        "request_tokens": estimate_tokens(on["text"]),
        **off_scores(off, answer),
    }


def stale_checks(
    scenario: dict[str, Any], injected: Sequence[Sequence[tuple[str, str]]]
) -> list[dict[str, Any]]:
    """Each ``closed`` check of a scenario, scored on what its questions' sessions were given: the
    memory lines injected (every injected memory is current) that hold the check's words and no
    current question's answer (a line naming the old value beside the new one tells history).
    A check is not tied to a question, so it is scored on all of the scenario's."""
    current = [c["top"] for c in questions_of(scenario) if c.get("status", "active") == "active"]
    lines = dict.fromkeys(line for blocks in injected for _, text in blocks for _, line in LINE.findall(text))
    scored = []
    for check in scenario.get("checks", []):
        if "closed" in check:
            found = [
                line
                for line in lines
                if holds(line, check["closed"]) and not any(holds(line, answer) for answer in current)
            ]
            scored.append({"scenario": scenario["name"], "closed": check["closed"], "lines": found[:3]})
    return scored


def stale_line(check: dict[str, Any]) -> str:
    """A scored ``closed`` check that was injected as current, as the progress and tables say it."""
    return f"{check['scenario']}: {'|'.join(check['closed'])}: {check['lines'][0][:110]}"


def questions_of(scenario: dict[str, Any]) -> list[dict[str, Any]]:
    """A scenario's questions: its ``recall`` checks."""
    return [c for c in scenario.get("checks", []) if "recall" in c]


def off_scores(off: dict[str, Any] | None, answer: Sequence[str]) -> dict[str, Any]:
    """A question's mnemo-off row: its answer's words in what the person's messages said, and
    the first request's tokens (False and 0 without the row)."""
    return {
        "off_answered": off is not None and holds(off["person"], answer),
        "off_request_tokens": estimate_tokens(off["text"]) if off is not None else 0,
    }


def scenario_row(
    name: str,
    rows: Sequence[dict[str, Any]],
    asked: Sequence[dict[str, Any]],
    stale: Sequence[dict[str, Any]],
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
        "closed_checks": len(stale),
        "stale": sum(bool(c["lines"]) for c in stale),
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
            "closed_checks",
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


def summary(out: dict[str, Any]) -> str:
    t = out["totals"]
    per = f"{t['tokens_per_answer']:,}" if t["tokens_per_answer"] is not None else "-"
    off = f"; mnemo off {t['off_answered']}/{t['questions']}" if t["baseline"] else ""
    i = out["injection"]
    return (
        f"arena {out['host']} ({out['model']}): {t['answered']}/{t['questions']} answered by what was "
        f"injected (recall level {t['recall_ok']}/{t['questions']}), "
        f"{t['stale']}/{t['closed_checks']} closed values injected as current, "
        f"{per} tokens injected per answered question; {i['prompts_injected']}/{i['prompts']} prompts got "
        f"memory (median {i['prompt_block_tokens']} tokens), {i['start_blocks']} session starts' blocks "
        f"(median {i['start_block_tokens']}), {i['suppressed']} suppressed; "
        f"writer {t['model_s']:,.0f} s in {t['model_calls']} calls{off}"
    )


def print_tables(out: dict[str, Any]) -> None:
    print(
        f"\n{'scenario':<24}{'asked':>6}{'inj.':>6}{'recall':>7}{'stale':>7}{'off':>5}{'tok/ans':>8}"
        f"{'model s':>9}{'calls':>6}  used/unused/unclear"
    )
    for s in out["scenarios"]:
        per = str(s["tokens_per_answer"]) if s["tokens_per_answer"] is not None else "-"
        v, stale = s["verdicts"], f"{s['stale']}/{s['closed_checks']}"
        print(
            f"{s['scenario'][:23]:<24}{s['questions']:>6}{s['answered']:>6}{s['recall_ok']:>7}{stale:>7}"
            f"{s['off_answered']:>5}{per:>8}{s['model_s']:>9.1f}{s['model_calls']:>6}  "
            f"{v['used']}/{v['unused']}/{v['unclear']}"
        )
    stale = [c for c in out["stale"] if c["lines"]]
    if stale:
        print("\nclosed values injected as current:")
        for c in stale:
            print(f"  {stale_line(c)}")
    differ = [q for q in out["questions"] if q["answered"] != q["recall_ok"]]
    if differ:
        print("\nwhere the levels differ:")
        for q in differ:
            print(
                f"  {q['scenario']}: {q['question']!r}: injected {'yes' if q['answered'] else 'no'}, "
                f"recall {'ok' if q['recall_ok'] else 'wrong'} (top: {q['recall_top'][:90]})"
            )
