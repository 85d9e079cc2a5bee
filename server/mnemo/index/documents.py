"""What a search index holds and is asked: documents in, a query, ranked hits out.

A :class:`Document` is one row of a :class:`~mnemo.index.engine.SearchIndex` (a memory, or one
passage of an episode); a :class:`SearchQuery` says what to look for and among which rows; a
:class:`Ranked` is one hit with its score explained by component (:mod:`mnemo.index.ranking`).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import numpy.typing as npt

from mnemo.index.query import Asked, DateRange

CURRENT = "active"
CLOSED = "closed"
CANDIDATE = "candidate"  # waits for a person: never recalled nor injected

Vector = npt.NDArray[np.float32]


def resolved(vector: Vector | Future[Vector] | None) -> Vector | None:
    """A question's vector, waiting for it if it is still being embedded."""
    return None if vector is None else ready(vector)


def ready(vector: Vector | Future[Vector]) -> Vector:
    return vector.result() if isinstance(vector, Future) else vector


@dataclass(frozen=True, slots=True)
class Document:
    key: str
    owner: str
    text: str
    namespace: str
    kind: str
    status: str
    time: datetime
    entities: tuple[tuple[str, str], ...] = ()
    who: str = ""
    session: str = ""
    turn: int | None = None
    filled: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class SearchQuery:
    terms: Sequence[str]
    vector: Vector | Future[Vector] | None = None  # a Future: still being embedded (on_vector_thread)
    entities: Sequence[str] = ()
    asked: Asked | None = None
    dates: DateRange | None = None
    is_history: bool = False
    namespaces: Sequence[str] | None = None
    kinds: Sequence[str] | None = None
    statuses: Sequence[str] = (CURRENT,)
    sessions: Sequence[str] | None = None
    sessions_excluded: Sequence[str] = ()
    limit: int = 10


@dataclass(frozen=True, slots=True)
class Ranked:
    key: str
    owner: str
    score: float
    is_current: bool
    components: dict[str, float] = field(default_factory=dict)
