"""distill and judge-log: the writer's work, asked for and looked into."""

from __future__ import annotations

import argparse
import sys

from mnemo.cli.context import EXIT_ERROR, EXIT_OK, Context, query_string
from mnemo.cli.render import dump, when, write
from mnemo.errors import InputError


def cmd_distill(args: argparse.Namespace, context: Context) -> int:
    queued = context.client.call("POST", "/v1/distill", {"session": args.session})
    if args.json:
        dump(queued)
    elif queued["queued"]:
        write(f"session {args.session} queued for distillation; `mnemo status` shows progress")
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
