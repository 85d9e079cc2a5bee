"""Recall: questions in, ranked memories (and episodes when no memory answers) out.

This is the simple lexical ranking of the foundation: the store narrows the candidates with a
case-insensitive substring prefilter, and :func:`rank_bm25` scores them exactly with BM25 over
word tokens. The in-RAM engine (entities, vectors, question analysis) replaces it later behind
the same request and result models.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from mnemo.episodes import ID_PATTERN, Episode, Namespace
from mnemo.memories import Memory, MemoryType

MAX_QUERY_CHARS = 2_000
MAX_QUERY_TERMS = 64
_TOKEN_RE = re.compile(r"\w+(?:[.\-/]\w+)*", re.UNICODE)
_PART_RE = re.compile(r"[^\W_]+", re.UNICODE)

# Words that say nothing about which memory is meant (English and Spanish).
STOPWORDS = frozenset(
    """a an and are as at be but by did do does for from had has have how i if in is it its
    me my of on or our so that the their them then there these they this to was we were what
    when where which who why will with you your
    al como con cual cuando de del donde el ella en es esta este hay la las lo los mas mi no
    para pero por porque que quien se si sin su sus un una y ya
    qué cuál cómo dónde cuándo quién más está él sí""".split()
)


def tokenize(text: str) -> list[str]:
    """Lower-case word tokens; dotted/dashed identifiers also yield their parts (lb.tf → lb, tf)."""
    tokens: list[str] = []
    for match in _TOKEN_RE.finditer(text.lower()):
        token = match.group()
        tokens.append(token)
        parts = _PART_RE.findall(token)
        if len(parts) > 1 or (parts and parts[0] != token):
            tokens.extend(parts)
    return tokens


def query_terms(query: str) -> list[str]:
    """Distinct informative terms of a question, longest first, at most MAX_QUERY_TERMS."""
    tokens = set(tokenize(query))
    # A question made only of stopwords still searches for them rather than for nothing.
    terms = {t for t in tokens if t not in STOPWORDS} or tokens
    return sorted(terms, key=lambda t: (-len(t), t))[:MAX_QUERY_TERMS]


@dataclass(frozen=True, slots=True)
class Scored:
    index: int
    score: float


def rank_bm25(
    terms: Sequence[str],
    documents: Sequence[str],
    *,
    corpus_size: int,
    k1: float = 1.2,
    b: float = 0.75,
) -> list[Scored]:
    """BM25 scores of ``documents`` for ``terms``, best first, zero scores dropped.

    ``documents`` must contain every document of the corpus that holds any of the terms (the
    store's prefilter guarantees it), so document frequencies computed here are exact;
    ``corpus_size`` is the number of documents in the whole searched scope.
    """
    if not terms or not documents:
        return []
    wanted = set(terms)
    counted = [Counter(t for t in tokenize(doc) if t in wanted) for doc in documents]
    lengths = [max(1, len(tokenize(doc))) for doc in documents]
    average_length = sum(lengths) / len(lengths)
    frequency = Counter(term for counts in counted for term in counts)
    n = max(corpus_size, len(documents))
    idf = {t: math.log(1 + (n - df + 0.5) / (df + 0.5)) for t, df in frequency.items()}
    scored = []
    for index, counts in enumerate(counted):
        score = 0.0
        for term, tf in counts.items():
            norm = tf + k1 * (1 - b + b * lengths[index] / average_length)
            score += idf[term] * tf * (k1 + 1) / norm
        if score > 0:
            scored.append(Scored(index, score))
    scored.sort(key=lambda s: (-s.score, s.index))
    return scored


class RecallRequest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    query: Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS)]
    namespace: Namespace | None = None
    types: Annotated[list[MemoryType], Field(max_length=8)] | None = None
    include_history: bool = False
    limit: Annotated[int, Field(ge=1, le=50)] = 10


class MemoryHit(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    score: float
    memory: Memory


class EpisodeHit(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    score: float
    episode: Episode


class RecallResult(BaseModel):
    """Memories that answer the question, best first; episodes only when no memory answers."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    memories: list[MemoryHit]
    episodes: list[EpisodeHit] = Field(
        description="Raw episodes, searched only when no memory matched the question."
    )


class RecallEpisodeRequest(BaseModel):
    """One of: an episode id; a session (optionally a turn range); a text query (optionally in a session)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: Annotated[str, Field(pattern=ID_PATTERN)] | None = None
    session: Annotated[str, Field(min_length=1, max_length=500)] | None = None
    from_turn: Annotated[int, Field(ge=0)] | None = None
    to_turn: Annotated[int, Field(ge=0)] | None = None
    query: Annotated[str, Field(min_length=1, max_length=MAX_QUERY_CHARS)] | None = None
    namespace: Namespace | None = None
    limit: Annotated[int, Field(ge=1, le=200)] = 20

    @model_validator(mode="after")
    def _one_way_to_select(self) -> Self:
        if self.id is not None and (self.session or self.query):
            raise ValueError("give either an id, or a session and/or a query, not both")
        if self.id is None and self.session is None and self.query is None:
            raise ValueError("give an episode id, a session, or a query")
        if (self.from_turn is not None or self.to_turn is not None) and self.session is None:
            raise ValueError("from_turn/to_turn select turns within a session: give the session too")
        if self.from_turn is not None and self.to_turn is not None and self.from_turn > self.to_turn:
            raise ValueError("from_turn must not be greater than to_turn")
        return self


class EpisodesResult(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    episodes: list[EpisodeHit]
