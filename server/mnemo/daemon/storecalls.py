"""The store's blocking calls, run on worker threads one at a time (its client is shared)."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable
from datetime import datetime
from typing import TypeVar

import anyio
import anyio.to_thread
import numpy as np
import numpy.typing as npt

from mnemo.store import Store
from mnemo.store.embeddings import Owners

T = TypeVar("T")


class StoreCalls:
    """``await calls(store.method, *args)``: the call on a worker thread, after those before it."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.limiter = anyio.CapacityLimiter(1)

    async def __call__(self, fn: Callable[..., T], *args: object) -> T:
        return await anyio.to_thread.run_sync(fn, *args, limiter=self.limiter)

    async def embedding_pages(
        self, model: str, rows: int, *, owners: Owners = "all", since: datetime | None = None
    ) -> AsyncIterator[tuple[list[tuple[str, int]], npt.NDArray[np.float32]]]:
        """The store's vectors of ``model``, ``rows`` at a time: (keys, matrix) per page."""
        after = ("", 0)
        page = functools.partial(self.store.embeddings_page, owners=owners, since=since)
        while True:
            keys, matrix = await self(page, model, after, rows)
            if not keys:
                return
            yield keys, matrix
            after = keys[-1]
