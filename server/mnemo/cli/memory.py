"""remember, recall, recall-episode, forget: memories and episodes, through the daemon."""

from __future__ import annotations

import argparse
import os

from mnemo.cli.context import EXIT_OK, Context, given
from mnemo.cli.render import dump, show_episode, show_explain, show_memory, write
from mnemo.errors import InputError


def _entity(text: str) -> dict[str, object]:
    spec, _, aliases = text.partition("=")
    name, _, role = spec.partition(":")
    return given(name=name, role=role or None, aliases=[a for a in aliases.split(",") if a.strip()])


def cmd_remember(args: argparse.Namespace, context: Context) -> int:
    request = given(
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
        cwd=os.getcwd(),  # in a git checkout, the memory is anchored to the files it names
    )
    memory = context.client.call("POST", "/v1/memories", request, is_idempotent=False)
    if args.json:
        dump(memory)
    else:
        write(f"remembered {memory['id']}")
    return EXIT_OK


def cmd_recall(args: argparse.Namespace, context: Context) -> int:
    request = given(
        query=args.query,
        namespace=args.namespace,
        types=args.types,
        include_history=args.include_history,
        limit=args.limit,
        explain=args.explain,
    )
    result = context.client.call("POST", "/v1/recall", request)
    if args.json:
        dump(result)
        return EXIT_OK
    for hit in result["memories"]:
        show_memory(hit["memory"], hit["score"])
        if hit.get("outdated"):
            write(f"  may be outdated: {hit['outdated']}")
        if hit.get("earlier"):
            write(f"  {hit['earlier']}")
        if hit.get("replaces"):
            write(f"  replaced {hit['replaces']}, which the question found")
        show_explain(hit.get("explain"))
    if result["episodes"]:
        write("no memory matched; episodes:")
    for hit in result["episodes"]:
        show_episode(hit["episode"], hit["score"])
        show_explain(hit.get("explain"))
    if not result["memories"] and not result["episodes"]:
        write("nothing found")
    return EXIT_OK


def cmd_recall_episode(args: argparse.Namespace, context: Context) -> int:
    request = given(
        id=args.id,
        memory=args.memory,
        session=args.session,
        from_turn=args.from_turn,
        to_turn=args.to_turn,
        query=args.query,
        namespace=args.namespace,
        limit=args.limit,
    )
    result = context.client.call("POST", "/v1/episodes/query", request)
    if args.json:
        dump(result)
        return EXIT_OK
    for hit in result["episodes"]:
        show_episode(hit["episode"], hit["score"] if args.query else None)
    if not result["episodes"]:
        write("no episodes found")
    return EXIT_OK


def cmd_forget(args: argparse.Namespace, context: Context) -> int:
    memory = context.client.call("POST", "/v1/memories/forget", {"id": args.id, "reason": args.reason})
    if args.json:
        dump(memory)
    else:
        write(f"forgot {memory['id']} ({memory['content'][:80]})")
    return EXIT_OK


def cmd_check_code(args: argparse.Namespace, context: Context) -> int:
    directory = os.path.abspath(args.directory)
    if not os.path.isdir(directory):
        raise InputError(f"{args.directory}: no such directory")
    result = context.client.call("POST", "/v1/code/check", given(cwd=directory))
    if args.json:
        dump(result)
        return EXIT_OK
    if result["head"] is None:
        write(f"{directory}: not in a git checkout with a commit, or git is missing: nothing to check")
        return EXIT_OK
    stale = [f for f in result["flagged"] if f["stale"]]
    followed = len(result["flagged"]) - len(stale)
    write(
        f"{result['workspace']} at {result['head'][:7]}: {result['checked']} memories tied to code, "
        f"{followed} followed (changed or moved, still holding what they name), {len(stale)} may be outdated"
        + ("" if result["complete"] else " (check cut short)")
    )
    for flag in sorted(result["flagged"], key=lambda f: not f["stale"]):
        mark = "outdated?" if flag["stale"] else "followed "
        write(f"  {mark} [{flag['memory']}] {flag['what'][:80]} — {flag['note']}")
    return EXIT_OK
