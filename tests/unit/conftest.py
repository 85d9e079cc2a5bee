"""The unit tier starts no process: a test (or a fixture) that does fails, and belongs in
tests/daemon/. Checked with an audit hook, which sees every way the standard library starts one."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator

import pytest

PROCESS_EVENTS = ("subprocess.Popen", "os.posix_spawn", "os.fork", "os.exec", "os.system")
_in_a_unit_test = threading.Event()  # an audit hook cannot be removed: it looks at this


def _refuse_processes(event: str, args: tuple[object, ...]) -> None:
    if _in_a_unit_test.is_set() and event in PROCESS_EVENTS:
        raise RuntimeError(
            f"a unit test started a process ({event}: {args[:2]!r}); it belongs in tests/daemon/"
        )


sys.addaudithook(_refuse_processes)


@pytest.fixture(autouse=True)
def no_processes() -> Iterator[None]:
    _in_a_unit_test.set()
    try:
        yield
    finally:
        _in_a_unit_test.clear()
