"""The store's blocking calls, run on worker threads one at a time (its client is shared)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import anyio
import anyio.to_thread

from mnemo.store import Store

T = TypeVar("T")


class StoreCalls:
    """``await calls(store.method, *args)``: the call on a worker thread, after those before it."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.limiter = anyio.CapacityLimiter(1)

    async def __call__(self, fn: Callable[..., T], *args: object) -> T:
        return await anyio.to_thread.run_sync(fn, *args, limiter=self.limiter)
