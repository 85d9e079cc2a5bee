"""Fixtures shared by every tier: an isolated MNEMO_HOME per test (its daemon stopped afterwards),
a store in a temporary directory, a scripted OpenAI-compatible model server, a model hub on
localhost; and each test's tier marker, from its directory:

- ``tests/unit/`` (``unit``): no process is started; the store on ``tmp_path``, the daemon's
  runtime in this process (``async with Daemon(settings)``), the scripted model over HTTP.
- ``tests/daemon/`` (``daemon``): real processes: the daemon over its unix socket, the CLI and
  ``mnemo-mcp`` (and the hook process) as subprocesses.
- ``tests/e2e/`` (``e2e``): the real hosts (Claude Code, Codex), a browser, a real model; they skip
  where those are not installed. ``pytest -m "not e2e"`` runs the other two tiers.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mnemo.store import ClickHouseStore, open_store
from tests.helpers import Home, isolated_home, model_hub
from tests.llm_server import LLMServer, running_llm_server

TIERS = ("unit", "daemon", "e2e")
TESTS = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        tier = item.path.relative_to(TESTS).parts[0]
        if tier not in TIERS:
            raise pytest.UsageError(f"{item.nodeid}: a test lives in one of tests/{{{','.join(TIERS)}}}/")
        item.add_marker(tier)


@pytest.fixture
def home() -> Iterator[Home]:
    with isolated_home() as made:
        yield made


@pytest.fixture(scope="module")
def module_home() -> Iterator[Home]:
    """One home for a module's tests that only read, or write what the others do not look at."""
    with isolated_home() as made:
        yield made


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


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A local HTTP server standing in for the model hub: its URL, and the directory it serves."""
    root = tmp_path / "hub"
    root.mkdir()
    with model_hub(root) as url:
        yield url, root
