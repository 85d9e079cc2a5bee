"""The ``mnemo`` command: remember, recall, recall-episode, forget, keep, review, audit, import,
export, status, stats, unsuppress, distill, judge-log, writer, models, daemon, server, setup,
doctor.

With ``--json``, recall and recall-episode print exactly the full result the MCP tools of the same
name give client programs (in their answer's ``_meta``). Errors go to stderr as
``mnemo: error: …`` with exit status 1 (2 for usage).

Each command group is a module, imported only when its command runs; the commands that talk to
the daemon go through :class:`mnemo.client.plain.PlainClient` and import nothing but the
standard library on the way to a running daemon (a test checks it).
"""

from __future__ import annotations

import importlib
import os
import sys

from mnemo.cli.context import EXIT_ERROR, Context
from mnemo.cli.parser import build_parser
from mnemo.errors import MnemoError

# The module (mnemo.cli.<group>) of each command; its handler is cmd_<command>. An action with a
# module of its own is keyed "command action", its handler cmd_<command>_<action>.
GROUPS = {
    "remember": "memory",
    "recall": "memory",
    "recall-episode": "memory",
    "forget": "memory",
    "check-code": "memory",
    "keep": "curate",
    "review": "curate",
    "audit": "audit",
    "distill": "writer",
    "judge-log": "writer",
    "writer calibrate": "calibrate",
    "writer use": "writer",
    "import": "imports",
    "export": "exchange",
    "status": "ops",
    "stats": "ops",
    "unsuppress": "ops",
    "models": "ops",
    "daemon": "ops",
    "server": "server",
    "setup": "hosts",
    "doctor": "hosts",
}


def main(argv: list[str] | None = None) -> int:
    args = build_parser(list(GROUPS)).parse_args(argv)
    command = f"{args.command} {getattr(args, 'action', '')}"
    command = command if command in GROUPS else args.command
    group = importlib.import_module(f"mnemo.cli.{GROUPS[command]}")
    handler = getattr(group, "cmd_" + command.replace(" ", "_").replace("-", "_"))
    context = Context()
    try:
        code: int = handler(args, context)
        return code
    except MnemoError as exc:
        sys.stderr.write(f"mnemo: error: {exc}\n")
        return EXIT_ERROR
    except (KeyError, TypeError) as exc:  # an answer not of the shape printed: another version?
        sys.stderr.write(
            f"mnemo: error: unexpected answer from the mnemo daemon ({type(exc).__name__}: {exc}); "
            "if it runs another version of mnemo, restart it: mnemo daemon stop\n"
        )
        return EXIT_ERROR
    except KeyboardInterrupt:
        sys.stderr.write("mnemo: interrupted\n")
        return 130
    except BrokenPipeError:  # the reader went away (mnemo review list | head): nothing to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nor at exit's flush
        return EXIT_ERROR
    finally:
        context.close()


if __name__ == "__main__":
    sys.exit(main())
