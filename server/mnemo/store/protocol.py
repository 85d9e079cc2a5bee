"""The store as the layers above it see it: :class:`Store`, and the records it returns.

The daemon, the writer (:mod:`mnemo.distill`) and :mod:`mnemo.usage` are written against this
Protocol; :class:`~mnemo.store.clickhouse.ClickHouseStore` is its one implementation. Methods are
synchronous and may block on I/O: async callers run them in a worker thread. An implementation
must be safe to call from several threads, and raises :class:`~mnemo.errors.StoreError` when the
backend fails.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import date, datetime
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from mnemo.episodes import AppendResult, Episode
    from mnemo.memories import Memory
    from mnemo.store.distill import Batch, JudgeLogRow, Lease
    from mnemo.store.embeddings import Owners
    from mnemo.store.history import Listing, StoredVersion
    from mnemo.store.usage import InjectionRow, MemoryUsage, SessionHistory, SessionRow, VerdictRow


@dataclass(frozen=True, slots=True)
class StoreCounts:
    schema_version: int
    episodes: int
    memories_by_status: dict[str, int]
    entities: int


@dataclass(frozen=True, slots=True)
class ModelUsage:
    model: str
    prompt_tokens: int
    completion_tokens: int
    calls: int

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class Store(Protocol):
    """Episodes, memories, their vectors and entities; the hooks' and the writer's tables."""

    dsn_for_display: str  # the store's address with any password masked

    @property
    def versions_lock(self) -> AbstractContextManager[Any]:
        """Held by whoever reads a memory's current version to write the next one (the writer's
        commit, review steps, forget), so that two of them never write the same version."""
        ...

    def close(self) -> None: ...

    def give_back_memory(self) -> None:
        """Have the embedded engine return to the system what its queries freed (its allocator
        keeps it a few seconds otherwise); nothing on a server."""
        ...

    def counts(self) -> StoreCounts: ...

    # -- episodes ------------------------------------------------------------------------------

    def append_episodes(self, episodes: Sequence[Episode]) -> list[AppendResult]:
        """Store the episodes not stored yet; say which were new, and which ids are stored with
        another text (the stored one is kept)."""
        ...

    def get_episodes(self, ids: Sequence[str]) -> list[Episode]: ...

    def session_episodes(
        self,
        session: str,
        *,
        from_turn: int | None,
        to_turn: int | None,
        namespace: str | None,
        limit: int,
    ) -> list[Episode]: ...

    def episode_namespaces(self) -> dict[str, int]:
        """How many episodes each namespace holds."""
        ...

    def episodes_page(self, after: str, limit: int, namespace: str | None = None) -> list[Episode]:
        """Episodes with ids after ``after`` (in ``namespace`` if given), in id order."""
        ...

    # -- memories ------------------------------------------------------------------------------

    def put_memory(self, memory: Memory) -> None:
        """Insert a version of a memory (callers raise ``version``)."""
        ...

    def put_memories(self, memories: Sequence[Memory], *, batch: str = "") -> None:
        """Insert memory versions at once, each marked with the distillation ``batch``."""
        ...

    def get_memory(self, memory_id: str) -> Memory | None: ...

    def active_memories(self, namespaces: Sequence[str], limit: int) -> list[Memory]:
        """Active memories in ``namespaces``, most recently updated first."""
        ...

    def memories_citing(self, namespace: str, episode_ids: Sequence[str], limit: int = 200) -> list[Memory]:
        """Memories of ``namespace`` in any status whose sources include one of ``episode_ids``."""
        ...

    def current_versions(self, memory_ids: Sequence[str]) -> dict[str, int]:
        """The newest stored version of each of ``memory_ids`` (absent: none stored)."""
        ...

    def stale_candidates(self, updated_before: datetime, limit: int) -> list[Memory]: ...

    def memories_page(self, after: str, limit: int, namespace: str | None = None) -> list[Memory]:
        """Current memories with ids after ``after`` (in ``namespace`` if given), in id order."""
        ...

    # -- a memory's story (mnemo.store.history) ------------------------------------------------

    def memory_versions(self, memory_ids: Sequence[str]) -> list[StoredVersion]:
        """Every stored version of each of ``memory_ids``, by id then version."""
        ...

    def closed_by(self, memory_id: str) -> list[Memory]:
        """The memories whose current version says ``memory_id`` closed them."""
        ...

    def memory_namespaces(self) -> dict[str, int]:
        """How many memories (current versions, any status) each namespace holds."""
        ...

    def list_memories(self, listing: Listing, limit: int) -> list[Memory]:
        """Current memories that pass ``listing``'s filters, most recently changed first."""
        ...

    @property
    def person(self) -> str | None:
        """On a shared server, the person the server authenticated (reads leave out the other
        people's namespaces); None on the embedded store."""
        ...

    def put_memories_fenced(
        self, memories: Sequence[Memory], *, batch: str, lease: tuple[str, str, int]
    ) -> bool:
        """The writer's commit, copied in by the store only while ``lease`` (name, holder, token)
        is current; False (nothing written) when it is not."""
        ...

    def memory_changes(
        self, after: tuple[int, str, int], limit: int
    ) -> list[tuple[tuple[int, str, int], Memory]]:
        """Memory versions committed after ``after`` (store time µs, id, version), in that order."""
        ...

    def episode_changes(self, after: tuple[int, str], limit: int) -> list[tuple[tuple[int, str], Episode]]:
        """Episodes committed after ``after`` (store time µs, id), in that order."""
        ...

    def commits_after(self, sequence: int) -> tuple[int, int]:
        """(versions committed after ``sequence``, the newest one's sequence), store µs."""
        ...

    def store_clock(self) -> int:
        """The store's clock, µs since the epoch."""
        ...

    def memory_count(self) -> int:
        """How many memories there are (each once, whatever its versions)."""
        ...

    # -- vectors and entities ------------------------------------------------------------------

    def put_embeddings(
        self, model: str, keys: Sequence[tuple[str, int]], vectors: npt.NDArray[np.float32]
    ) -> None:
        """Store vectors made by ``model`` for (owner, part) keys."""
        ...

    def embedding_keys_page(
        self, model: str, after: tuple[str, int], limit: int, *, owners: Owners = "all"
    ) -> list[tuple[str, int]]: ...

    def embeddings_page(
        self,
        model: str,
        after: tuple[str, int],
        limit: int,
        *,
        owners: Owners = "all",
        since: datetime | None = None,
    ) -> tuple[list[tuple[str, int]], npt.NDArray[np.float32]]: ...

    def upsert_entities(self, entities: Sequence[tuple[str, str, Sequence[str]]]) -> None:
        """Record (key, name, aliases) entities; known ones gain the aliases they lacked."""
        ...

    def entities(self, keys: Sequence[str]) -> list[tuple[str, str, list[str]]]:
        """(key, name, aliases) of each of the entities ``keys`` that is known, by key."""
        ...

    def all_entities(self) -> list[tuple[str, str, list[str]]]: ...

    # -- the hooks' tables ---------------------------------------------------------------------

    def put_session(self, row: SessionRow) -> None: ...

    def session_state(self, session: str) -> tuple[SessionRow | None, SessionHistory]: ...

    def in_session(self, episode_ids: Sequence[str], session: str) -> set[str]: ...

    def put_injections(self, rows: Sequence[InjectionRow]) -> None: ...

    def put_verdicts(self, rows: Sequence[VerdictRow]) -> None: ...

    def clearly_unused(self, person: str, *, since: datetime, times: int) -> list[tuple[str, str, int]]:
        """(memory, workspace, times): clearly unused ``times`` times or more by ``person``'s
        sessions of a workspace since ``since`` and since its last use or restore there."""
        ...

    def blocks_and_prompts(self, sessions: Sequence[str]) -> tuple[list[tuple[str, int]], int]:
        """Each block injected into ``sessions`` — (event, tokens) — and the prompts typed in them."""
        ...

    def put_restore(self, memory: str, workspace: str, person: str, at: datetime) -> None:
        """Inject ``memory`` in ``workspace`` again: its count of non-uses there starts over."""
        ...

    def use_counts(self, person: str) -> dict[str, int]: ...

    def uses_in(self, person: str, workspace: str, since: datetime) -> dict[str, int]:
        """How many turns of ``person``'s sessions in ``workspace`` used each memory since ``since``."""
        ...

    def injection_counts(self, person: str, since: datetime) -> dict[str, int]: ...

    def memory_usage(self, memory_id: str, person: str) -> MemoryUsage:
        """How often ``person``'s sessions were given ``memory_id``, and the audit's verdicts."""
        ...

    def usage_by_day(
        self, person: str, since: datetime, until: datetime
    ) -> list[tuple[Any, int, int, int, int, int, int]]: ...

    def injected_tokens(self, sessions: Sequence[str]) -> dict[str, int]: ...

    def sessions_between(self, person: str, since: datetime, until: datetime) -> list[SessionRow]: ...

    def kept(self, owner: str) -> tuple[list[str], int]: ...

    def put_kept(
        self, owner: str, version: int, entries: Sequence[str], action: str, by: str, at: datetime
    ) -> None: ...

    # -- the writer's tables -------------------------------------------------------------------

    def put_batch(self, batch: Batch, now: datetime) -> None: ...

    def started_batches(self) -> list[Batch]: ...

    def last_batch(self) -> Batch | None:
        """The batch that changed last (started, done or failed), None before any."""
        ...

    def failed_summary(self, since: datetime) -> tuple[int, str]: ...

    def session_cursor(self, session: str) -> tuple[datetime, str] | None: ...

    def sessions_waiting(self, idle_before: datetime) -> list[str]: ...

    def episodes_after(
        self, session: str, after: tuple[datetime, str] | None, limit: int
    ) -> list[Episode]: ...

    def episodes_between(
        self, session: str, first: tuple[datetime, str], last: tuple[datetime, str]
    ) -> list[Episode]: ...

    def batch_applied(self, batch_id: str) -> bool: ...

    def put_judge_log(self, rows: Sequence[JudgeLogRow]) -> None: ...

    def judge_log(
        self, limit: int, session: str | None = None, memory: str | None = None
    ) -> list[JudgeLogRow]: ...

    def read_lease(self, name: str) -> Lease | None:
        """The lease, its time left by the store's clock (None: never claimed)."""
        ...

    def write_lease(self, name: str, holder: str, token: int, ttl_s: float) -> None:
        """Claim or renew: expiry and row version by the store's clock."""
        ...

    def add_model_usage(
        self, at: datetime, model: str, purpose: str, prompt_tokens: int, completion_tokens: int
    ) -> None: ...

    def model_usage(self, day: date) -> list[ModelUsage]: ...
