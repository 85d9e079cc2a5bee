"""What the end-to-end tests with the real hosts share."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from mnemo.client.launcher import stop_daemon
from tests.helpers import Home, copy_as_plugin


@pytest.fixture
def plugin_dir() -> Iterator[Path]:
    """The repository as a user's clone has it: tracked (and new, unignored) files only."""
    target = copy_as_plugin(Path(tempfile.mkdtemp(prefix="mnemo-plugin-")))
    try:
        yield target
    finally:
        shutil.rmtree(target, ignore_errors=True)


@pytest.fixture
def codex_user(home: Home) -> Iterator[Home]:
    """A user with mnemo's default locations under their HOME: Codex starts MCP servers with a
    reduced environment (no MNEMO_HOME), so the MCP server finds the daemon through HOME only."""
    env = {k: v for k, v in home.env.items() if k != "MNEMO_HOME"}
    env["HOME"] = str(home.path / "home")
    user = Home(home.path, env)
    try:
        yield user
    finally:
        stop_daemon(user.settings)
