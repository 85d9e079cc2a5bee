"""What a search index holds and is asked: documents in, a query, ranked hits out.

A :class:`Document` is one row of a :class:`~mnemo.index.engine.SearchIndex`: a memory
(:func:`memory_document`), or one passage of an episode (:func:`episode_documents`); a
:class:`SearchQuery` says what to look for and among which rows; a :class:`Ranked` is one hit
with its score explained by component (:mod:`mnemo.index.ranking`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import numpy.typing as npt

from mnemo.episodes import Episode
from mnemo.index.entities import entity_key
from mnemo.index.query import Analysis, Asked, DateRange
from mnemo.memories import Memory

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
class Question:
    """A question as recall understands it: the rules' analysis, entities named, its vector.

    ``embedding`` may still be in the making (a Future on the vector thread): a search takes it as
    it is, finding BM25 and entity candidates while the question is embedded.
    """

    analysis: Analysis
    entities: list[str]
    embedding: Vector | Future[Vector] | None

    @property
    def vector(self) -> Vector | None:
        return resolved(self.embedding)


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


PASSAGE_CHARS = 800
_W_FIELDS = ("what", "who", "when", "where", "why", "how")
_SENTENCE_END = re.compile(r"(?<=[.!?\n])\s+")


def memory_text(memory: Memory) -> str:
    """What a memory is searched by: its content and six W, and its entities' names."""
    parts = [memory.content]
    parts += [
        getattr(memory, w) for w in _W_FIELDS if getattr(memory, w) and getattr(memory, w) != memory.content
    ]
    parts += [e.name for e in memory.entities]
    return "\n".join(parts)


def memory_document(memory: Memory) -> Document:
    return Document(
        key=memory.id,
        owner=memory.id,
        text=memory_text(memory),
        namespace=memory.namespace,
        kind=memory.type.value,
        status=memory.status.value,
        time=memory.valid_from,
        entities=tuple((entity_key(e.name), e.role) for e in memory.entities),
        who=memory.who,
        filled=frozenset(w for w in _W_FIELDS if getattr(memory, w)),
    )


def passages(text: str, limit: int = PASSAGE_CHARS) -> list[str]:
    """Split a long text into passages of about ``limit`` characters, at sentence ends if possible."""
    if len(text) <= limit:
        return [text]
    found, current = [], ""
    for whole in _SENTENCE_END.split(text):
        sentence = whole
        while len(sentence) > limit:  # one huge "sentence" (a log line): cut it
            if current:
                found.append(current)
                current = ""
            found.append(sentence[:limit])
            sentence = sentence[limit:]
        if current and len(current) + 1 + len(sentence) > limit:
            found.append(current)
            current = sentence
        else:
            current = f"{current} {sentence}" if current else sentence
    if current:
        found.append(current)
    return found


def episode_documents(episode: Episode) -> list[Document]:
    # The speaker's name is part of the searched text, not an entity: as an entity, every turn of
    # the person a question names would get the entity bonus, and a question naming the wrong
    # person would bury the right turn under theirs.
    speaker = f"{episode.who}: " if episode.who else ""
    return [
        Document(
            key=passage_key(episode.id, n),
            owner=episode.id,
            text=speaker + passage,
            namespace=episode.namespace,
            kind=episode.kind.value,
            status=CURRENT,
            time=episode.time,
            who=episode.who,
            session=episode.session,
            turn=episode.turn,
        )
        for n, passage in enumerate(passages(episode.text))
    ]


def passage_key(episode_id: str, part: int) -> str:
    """The index key of an episode's passage; stored vectors are keyed (episode id, part)."""
    return f"{episode_id}#{part}"


def split_key(key: str) -> tuple[str, int]:
    """(owner, part) of an index key: a memory id is part 0, a passage key names its part."""
    owner, _, part = key.partition("#")
    return owner, int(part or 0)
