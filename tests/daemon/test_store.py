"""The embedded store (chDB) when another process holds its directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from mnemo.errors import StoreLockedError
from mnemo.store import open_store
from tests.helpers import store_held_by_another_process


def test_a_store_held_by_another_process_names_the_holder(tmp_path: Path) -> None:
    path = tmp_path / "held"
    with store_held_by_another_process(path) as pid, pytest.raises(StoreLockedError, match=f"pid {pid}"):
        open_store(f"chdb://{path}")
