"""keep and review: what a person curates — the kept sets, the review queue."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from mnemo.cli.context import EXIT_OK, Context, given, query_string
from mnemo.cli.render import dump, show_memory, write
from mnemo.errors import InputError, MnemoError
from mnemo.paths import write_private
from mnemo.vocabulary import KEEP_FILE_PATH, KeepScope
from mnemo.workspace import repo_root, workspace_namespace


def cmd_keep(args: argparse.Namespace, context: Context) -> int:
    from mnemo.keep import parse_file, render_file  # noqa: PLC0415 - only keep reads its file

    directory = (args.dir or Path.cwd()).resolve()
    workspace = workspace_namespace(str(directory))
    file = (repo_root(directory) or directory) / KEEP_FILE_PATH
    client = context.client
    if args.action in ("add", "replace", "remove"):
        scope = KeepScope(args.scope)
        request = {
            "scope": scope.value,
            "action": args.action,
            "content": getattr(args, "entry", ""),
            "old_text": getattr(args, "old_text", ""),
            **({"workspace": workspace} if scope is KeepScope.PROJECT else {}),
        }
        # Not idempotent: an add sent twice is harmless, a replace or remove is not.
        result = client.call("POST", "/v1/keep", request, is_idempotent=False)
        kept = result["kept"]
        write(f"{result['message']}: {kept['used_chars']:,} of {kept['budget_chars']:,} characters used")
        return EXIT_OK
    if args.action == "import":
        try:
            text = file.read_text(encoding="utf-8")
        except OSError as exc:
            raise InputError(f"cannot read {file}: {exc.strerror or exc}") from None
        body = {"workspace": workspace, "entries": parse_file(text, where=str(file))}
        result = client.call("POST", "/v1/keep/import", body)
        kept = result["kept"]
        write(f"{result['message']} ({kept['used_chars']:,} of {kept['budget_chars']:,} characters)")
        return EXIT_OK
    sets = client.call("GET", f"/v1/keep{query_string(workspace=workspace)}")
    if args.action == "export":
        entries = sets["project"]["entries"]
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(render_file(entries, workspace), encoding="utf-8")
        write(f"wrote {len(entries)} entries to {file}")
    elif args.json:
        dump(sets)
    else:
        for kept in (sets["project"], sets["user"]):
            usage = f"{kept['used_chars']:,} of {kept['budget_chars']:,} characters"
            write(f"{kept['scope']} ({kept['owner']}): {usage}")
            for entry in kept["entries"]:
                write("  - " + entry.replace("\n", "\n    "))
    return EXIT_OK


def cmd_review(args: argparse.Namespace, context: Context) -> int:
    client = context.client
    if args.action == "url":
        page = client.call("GET", "/v1/review/url")
        if not page.get("url"):
            raise MnemoError(f"no review page: {page.get('reason')}")
        write(page["url"])
        if args.open:
            import webbrowser  # noqa: PLC0415 - only for --open

            # Not the address itself: a browser's arguments are visible to every local user
            # (/proc/<pid>/cmdline). A private file that forwards to it is opened instead.
            webbrowser.open(forwarding_page(client.where.run_dir, page["url"]).as_uri())
        return EXIT_OK
    if args.action == "list":
        status = "active" if args.approved else "candidate"
        queue = client.call(
            "GET", f"/v1/review{query_string(status=status, limit=200, namespace=args.namespace)}"
        )
        if args.json:
            dump(queue)
            return EXIT_OK
        what = "approved memories" if args.approved else "candidates waiting for review"
        write(f"{len(queue['memories'])} {what} (approval_policy {queue['policy']})")
        for memory in queue["memories"]:
            show_memory(memory)
            sources = ", ".join(memory["sources"])
            write(f"  seen {memory['seen_count']}×, confidence {memory['confidence']:.2f}, sources {sources}")
            if memory.get("status_reason"):
                write(f"  {memory['status_reason']}")
            if memory.get("replaces") and memory["status"] == "candidate":
                write(f"  approving it closes {memory['replaces']}")
        return EXIT_OK
    edit = None
    if args.action != "reject":
        edit = given(**{k: getattr(args, k) for k in ("content", "type", "namespace", "why", "how")}) or None
    action = given(id=args.id, action=args.action, edit=edit, reason=getattr(args, "reason", ""))
    memory = client.call("POST", "/v1/review", action, is_idempotent=False)
    write(f"{memory['id']} is {memory['status']}: {memory['content'][:100]}")
    return EXIT_OK


def forwarding_page(run_dir: str, url: str) -> Path:
    """A private (0600, in the 0700 run directory) HTML file that sends the browser to ``url``:
    what ``mnemo review url --open`` opens, so that the secret never sits on a command line."""
    path = Path(run_dir) / "review-open.html"
    target = json.dumps(url)
    write_private(
        str(path), f"<!doctype html><meta charset=utf-8><script>location.replace({target})</script>\n"
    )
    return path
