"""Episodes sent to the daemon in batches bounded by lines and bytes."""

from __future__ import annotations

from typing import Generic, TypeVar

from mnemo.api import MAX_BODY_BYTES
from mnemo.client.typed import DaemonClient
from mnemo.episodes import AppendResult, EpisodeIn
from mnemo.errors import TooLargeError

T = TypeVar("T")
DEFAULT_BATCH_LINES = 1_000
# A batch is also bounded by its bytes: a quarter of the daemon's cap on one request, so that lines
# of any size travel (a line over the cap on its own is reported, not sent).
MAX_BATCH_BYTES = MAX_BODY_BYTES // 4
EPISODE_FIELDS_BYTES = 300  # what an episode's JSON adds to its text: field names, ids, the time


class Batch(Generic[T]):
    """Items to send in one request: at most ``max_items``, and ``max_bytes`` unless one alone."""

    def __init__(self, max_items: int, max_bytes: int = MAX_BATCH_BYTES) -> None:
        self.items: list[T] = []
        self._bytes = 0
        self._max_items, self._max_bytes = max_items, max_bytes

    def fits(self, size: int) -> bool:
        return not self.items or (len(self.items) < self._max_items and self._bytes + size <= self._max_bytes)

    def add(self, item: T, size: int) -> None:
        self.items.append(item)
        self._bytes += size

    def take(self) -> list[T]:
        items, self.items, self._bytes = self.items, [], 0
        return items


async def append_episodes(client: DaemonClient, episodes: list[EpisodeIn]) -> list[AppendResult]:
    """The daemon's results for ``episodes``; a lone episode too large for one request is
    refused here, with the reason, as the daemon refuses one."""
    try:
        return await client.append(episodes)
    except TooLargeError as exc:
        if len(episodes) > 1:
            raise
        return [AppendResult(id=episodes[0].id, is_new=False, error=f"this line alone is too large: {exc}")]
