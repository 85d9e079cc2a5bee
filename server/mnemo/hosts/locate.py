"""Where the commands are: ``mnemo-mcp`` (what a host is set up to run) and the hosts' own
binaries, with their versions."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

from mnemo.errors import ConfigError
from mnemo.hosts import hookspec

# The versions this release of mnemo was tested with (tests/e2e/test_hosts.py, .ci/run).
TESTED = {"claude-code": (2, 1, 197), "codex": (0, 171, 0)}
BINARIES = {"claude-code": "claude", "codex": "codex"}
VERSION_TIMEOUT_S = 20.0


def mnemo_mcp(executable: str, which: Callable[[str], str | None]) -> list[str]:
    """The command a host should run for mnemo-mcp: the one installed beside this ``mnemo``
    (``executable`` is its interpreter), by its full path, so that it runs whatever PATH the
    host starts with; else the one on PATH. One in uv's cache (``uvx``) is not kept: uv may
    remove it."""
    beside = Path(executable).parent / hookspec.COMMAND
    if beside.is_file() and not _in_uv_cache(beside):
        return [str(beside)]
    on_path = which(hookspec.COMMAND)
    if on_path and not _in_uv_cache(Path(on_path)):
        return [on_path]
    raise ConfigError(
        "mnemo-mcp is not installed where a host can keep running it: install mnemo with "
        "`uv tool install mnemo-mcp` and run `mnemo setup` from there, or pass --command "
        "'uvx mnemo-mcp' (slower: uvx resolves the package at each hook)"
    )


def _in_uv_cache(path: Path) -> bool:
    return any(part.startswith(("archive-v", "builds-v")) for part in path.parts)


def version(binary: str) -> tuple[int, int, int] | None:
    """``binary --version``'s version, None when it does not run or say one."""
    try:
        done = subprocess.run(
            [binary, "--version"],
            capture_output=True,
            text=True,
            timeout=VERSION_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(r"(\d+)\.(\d+)\.(\d+)", done.stdout + done.stderr)
    return None if found is None else (int(found[1]), int(found[2]), int(found[3]))


def runnable(argv: list[str], which: Callable[[str], str | None]) -> bool:
    """Whether a registered command's program exists."""
    program = argv[0] if argv else ""
    if "/" in program:
        path = Path(program).expanduser()
        return path.is_file()
    return bool(program) and which(program) is not None
