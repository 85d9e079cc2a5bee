"""Shared fixtures: an isolated MNEMO_HOME per test (its daemon stopped afterwards), a store in a
temporary directory, and a scripted OpenAI-compatible model server."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from mnemo.client.launcher import stop_daemon
from mnemo.config import Settings, load_settings
from mnemo.paths import SPAWNED_NAME
from mnemo.store import ClickHouseStore, open_store
from tests.helpers import process_stat
from tests.llm_server import LLMServer, running_llm_server

BIN = Path(sys.executable).parent


@dataclass(frozen=True)
class Home:
    """One isolated mnemo installation: its directory, environment and settings."""

    path: Path
    env: dict[str, str]

    @property
    def settings(self) -> Settings:
        return load_settings(self.env)

    def with_env(self, **extra: str) -> Home:
        return Home(self.path, {**self.env, **extra})

    def mnemo(self, *args: str, check: bool = True, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """Run the ``mnemo`` console script of this environment."""
        completed = subprocess.run(
            [str(BIN / "mnemo"), *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and completed.returncode != 0:
            raise AssertionError(
                f"mnemo {' '.join(args)} failed ({completed.returncode}): {completed.stderr}"
            )
        return completed


def _clean_environment() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_")}


@contextlib.contextmanager
def isolated_home() -> Iterator[Home]:
    """A fresh MNEMO_HOME; its daemon (and one a hook started) stopped, its files removed after."""
    # A short path under /tmp: unix socket paths are limited to ~100 bytes.
    path = Path(tempfile.mkdtemp(prefix="mnemo-", dir="/tmp"))
    env = {
        **_clean_environment(),
        "MNEMO_HOME": str(path),
        "MNEMO_PERSON": "tester",
        "MNEMO_DAEMON_IDLE_S": "300",
    }
    settings = load_settings(env)  # before the test can break the config file
    try:
        yield Home(path, env)
    finally:
        try:
            stop_daemon(settings)
            _stop_hook_spawned(settings)
        finally:
            shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def home() -> Iterator[Home]:
    with isolated_home() as made:
        yield made


@pytest.fixture(scope="module")
def module_home() -> Iterator[Home]:
    """One home for a module's tests that only read, or write what the others do not look at."""
    with isolated_home() as made:
        yield made


def _stop_hook_spawned(settings: Settings) -> None:
    """A daemon a hook started at the end of a test may not have written its pid file yet."""
    marker = settings.run_dir / SPAWNED_NAME
    deadline = time.monotonic() + 15  # the spawner writes the daemon's pid once it started it
    while True:
        try:
            pid = int(marker.read_text())
            break
        except FileNotFoundError:
            return
        except ValueError:
            if time.monotonic() > deadline:
                return
            time.sleep(0.05)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            os.kill(pid, 0)  # ProcessLookupError once it is gone
            if process_stat(pid)[0] == "Z":
                return
            time.sleep(0.05)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[ClickHouseStore]:
    """A migrated embedded store of this test's own."""
    opened = open_store(f"chdb://{tmp_path / 'store'}")
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def llm_server() -> Iterator[LLMServer]:
    with running_llm_server() as server:
        yield server
