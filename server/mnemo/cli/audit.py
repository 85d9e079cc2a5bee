"""audit: the health of the store — likely junk, duplicates, superseded, code-flagged, unused and
credential-like memories, each with the action it calls for, applied in bulk on confirmation."""

from __future__ import annotations

import argparse
import sys

from mnemo.cli.context import EXIT_ERROR, EXIT_OK, Context, given
from mnemo.cli.parser import AUDIT_KINDS
from mnemo.cli.render import dump, write

_ACTION_WORDS = {
    "archive": "archive (forget an active one, reject a waiting one)",
    "merge": "merge each pair (the second folds into the first)",
    "close": "close each older memory by the newer one",
    "review": "send each back to the review queue",
    "forget": "forget each and hide its text",
}
SHOWN_PER_KIND = 20


def cmd_audit(args: argparse.Namespace, context: Context) -> int:
    client = context.client
    kinds = args.kind or list(AUDIT_KINDS)
    if args.apply:
        return _apply(args, context)
    request = given(kinds=kinds, namespace=args.namespace, days=args.days)
    report = client.call("POST", "/v1/audit", request)
    if args.json:
        dump(report)
        return EXIT_OK
    total = len(report["findings"])
    write(f"{report['scanned']:,} open memories read; {total} finding(s)")
    for kind in kinds:
        found = [f for f in report["findings"] if f["kind"] == kind]
        if not found:
            continue
        write(f"\n{kind} ({len(found)}): action {found[0]['action']} — mnemo audit --apply {kind}")
        for finding in found[:SHOWN_PER_KIND]:
            ids = " + ".join(finding["memories"])
            write(f"  {ids} [{'/'.join(finding['statuses'])}] {finding['reason']}")
            for text in finding["texts"]:
                write(f"    {text[:110]}")
        if len(found) > SHOWN_PER_KIND:
            write(f"  … and {len(found) - SHOWN_PER_KIND} more (--json lists them all)")
    return EXIT_OK


def _apply(args: argparse.Namespace, context: Context) -> int:
    client = context.client
    kind = args.apply
    request = given(kinds=[kind], namespace=args.namespace, days=args.days)
    report = client.call("POST", "/v1/audit", request)
    found = [f for f in report["findings"] if not args.id or f["memories"][0] in args.id]
    # With --json, stdout holds only the JSON: what is said on the way goes to stderr.
    say = (lambda line: sys.stderr.write(line + "\n")) if args.json else write
    if not found:
        say(f"no {kind} finding" + (" about those ids" if args.id else "") + ": nothing to do")
        if args.json:
            dump({"kind": kind, "changed": [], "unchanged": []})
        return EXIT_OK
    action = found[0]["action"]
    say(f"{len(found)} {kind} finding(s): {_ACTION_WORDS[action]}.")
    if not args.yes:
        if not sys.stdin.isatty():
            sys.stderr.write("mnemo: error: confirm with --yes (no terminal to ask on)\n")
            return EXIT_ERROR
        answer = input("Apply? Each change is a new version; nothing is deleted. [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            say("nothing changed")
            return EXIT_OK
    body = given(kind=kind, memories=[f["memories"][0] for f in found], namespace=args.namespace,
                 days=args.days, confirm=True)  # fmt: skip
    applied = client.call("POST", "/v1/audit/apply", body, is_idempotent=False)
    if args.json:
        dump(applied)
        return EXIT_OK
    write(f"{applied['action']}: {len(applied['changed'])} memory version(s) written")
    for line in applied["unchanged"]:
        write(f"  left as it is: {line}")
    return EXIT_OK
