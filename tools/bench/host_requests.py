"""How many tokens each host's first request to a local model holds: by default, with the flags
that shrink it, and with mnemo set up (its MCP tools, its hooks) — what docs/models.md reports
and ``mnemo doctor`` compares a model server's context with.

Point it at a ``llama-server`` started with a context too small for any request, which refuses
each one saying its size in the model's tokens::

    python -m tools.models.local_llm serve --port 8091 --context 256 --lifetime 3600 &
    python -m tools.bench.host_requests --url http://127.0.0.1:8091 --hosts .hosts/node_modules/.bin

Each run is the host in a fresh HOME (and a fresh mnemo store), in an empty project directory,
asked "say hi"; the figure is the one the server refused. What a project's CLAUDE.md or AGENTS.md,
or a store's injected memories, add comes on top.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REFUSED = re.compile(r"request \((\d+) tokens\)")
SHORT = "You are a coding assistant."
CODEX_CONFIG = """\
model = "local"
model_provider = "local"
[model_providers.local]
name = "local"
base_url = "{url}/v1"
wire_api = "responses"
env_key = "LOCAL_KEY"
"""
CLAUDE_RUNS = {
    "default": [],
    "--tools '' --system-prompt SHORT": ["--tools", "", "--system-prompt", SHORT],
    "--tools Bash,Read,Edit --system-prompt SHORT": ["--tools", "Bash,Read,Edit", "--system-prompt", SHORT],
}
CODEX_RUNS = {
    "default": [],
    "-c model_instructions_file=SHORT": ["-c", 'model_instructions_file="{short}"'],
}


def _tokens(command: list[str], env: dict[str, str], cwd: Path) -> int | None:
    done = subprocess.run(
        command,
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    found = REFUSED.search(done.stdout + done.stderr)
    return int(found[1]) if found else None


def measure(url: str, hosts: Path, with_mnemo: bool) -> list[tuple[str, str, int | None]]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="host-requests-") as scratch:
        root = Path(scratch)
        (root / "home").mkdir()
        (root / "project").mkdir()
        short = root / "short.md"
        short.write_text(SHORT + "\n")
        (root / "home" / ".codex").mkdir()
        (root / "home" / ".codex" / "config.toml").write_text(CODEX_CONFIG.format(url=url))
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("MNEMO_", "ANTHROPIC", "CLAUDE", "CODEX"))
        }
        env.update(
            HOME=str(root / "home"), MNEMO_HOME=str(root / "mnemo"), PATH=f"{hosts}{os.pathsep}{env['PATH']}",
            ANTHROPIC_BASE_URL=url, ANTHROPIC_API_KEY="sk-local", LOCAL_KEY="sk-local", IS_SANDBOX="1",
            CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_AUTOUPDATER="1",
            MCP_CONNECTION_NONBLOCKING="0", MCP_CONNECT_TIMEOUT_MS="60000",
        )  # fmt: skip
        if with_mnemo:
            mnemo = Path(sys.executable).parent / "mnemo"
            subprocess.run(
                [str(mnemo), "setup", "claude-code", "codex"], env=env, check=True, capture_output=True
            )
        for name, flags in CLAUDE_RUNS.items():
            command = ["claude", "-p", "say hi", "--model", "local", *flags]
            rows.append(("claude-code", name, _tokens(command, env, root / "project")))
        for name, template in CODEX_RUNS.items():
            flags = [f.format(short=short) for f in template]
            command = [
                "codex",
                "exec",
                "--skip-git-repo-check",
                "--dangerously-bypass-hook-trust",
                *flags,
                "say hi",
            ]
            rows.append(("codex", name, _tokens(command, env, root / "project")))
        if with_mnemo:
            subprocess.run(
                [str(Path(sys.executable).parent / "mnemo"), "daemon", "stop"],
                env=env,
                capture_output=True,
                check=False,
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--url", required=True, help="a llama-server with a tiny context (no /v1)")
    parser.add_argument("--hosts", type=Path, required=True, help="the directory holding claude and codex")
    args = parser.parse_args()
    without = measure(args.url.rstrip("/"), args.hosts.resolve(), with_mnemo=False)
    with_ = measure(args.url.rstrip("/"), args.hosts.resolve(), with_mnemo=True)
    print("| host | run | tokens | with mnemo set up |")
    print("|---|---|---|---|")
    for (host, name, alone), (_, _, mnemo) in zip(without, with_, strict=True):
        print(f"| {host} | {name} | {alone or 'fits'} | {mnemo or 'fits'} |")


if __name__ == "__main__":
    main()
