"""``mnemo setup`` and ``mnemo doctor``: mnemo registered in a host's own settings, and what a
host still lacks."""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import sys
from dataclasses import asdict

from mnemo.cli.context import EXIT_ERROR, EXIT_OK, Context
from mnemo.hosts import claude, codex, doctor, locate
from mnemo.paths import host_environment

_MARK = {"ok": "ok  ", "warn": "warn", "fail": "FAIL", "skip": "--  "}


def cmd_setup(args: argparse.Namespace, context: Context) -> int:
    argv = (
        shlex.split(args.mcp_command) if args.mcp_command else locate.mnemo_mcp(sys.executable, shutil.which)
    )
    if not argv:
        sys.stderr.write("mnemo: error: --command is empty\n")
        return EXIT_ERROR
    plans = [
        (claude if host == "claude-code" else codex).plan(
            host_environment(), argv, undo=args.undo, force=args.force
        )
        for host in dict.fromkeys(args.host)
    ]  # every file read and every change made before anything is written
    out = sys.stdout
    for plan in plans:
        for change in plan.changes:
            out.write(change.diff())
        if not args.dry_run:
            for change in plan.changes:
                change.write()
        for note in plan.notes:
            out.write(f"{plan.host}: {note}\n")
        files = ", ".join(str(c.path) for c in plan.changes)
        if not plan.changes:
            done = "nothing to change"
        elif args.dry_run:
            done = f"would change {files} (--dry-run: nothing written)"
        else:
            done = f"changed {files} (each as it was: <file>.before-mnemo)"
        out.write(f"{plan.host}: {done}\n")
    if not args.undo and not args.dry_run:
        out.write("Check with: mnemo doctor\n")
    return EXIT_OK


def cmd_doctor(args: argparse.Namespace, context: Context) -> int:
    found = doctor.checks(host_environment(), shutil.which)
    if args.json:
        sys.stdout.write(json.dumps([asdict(c) for c in found], indent=2) + "\n")
    else:
        width = max(len(c.subject) for c in found)
        for check in found:
            fix = f"  → {check.fix}" if check.fix and check.state != "ok" else ""
            sys.stdout.write(f"{_MARK[check.state]}  {check.subject:<{width}}  {check.detail}{fix}\n")
    return EXIT_ERROR if any(c.state == "fail" for c in found) else EXIT_OK
