"""The score of a search's candidates: deterministic, and explained component by component.

    relevance = w_vector·vector + w_lexical·lexical
    score = relevance + w_context·context + w_entity·entity + w_asked·asked + w_date·date
            + w_history·(closed and the question asks about history)

``vector`` is the cosine to the question, min-max normalised over the candidates (over a spread
of at least ``MIN_COSINE_SPREAD`` cosine); ``lexical`` the BM25 score divided by the best
candidate's; ``context`` the best relevance among the turns just before and after (episodes in a
session); ``entity`` the share of the question's entities the document names; ``asked`` 1 when
the document fills the W asked; ``date`` 1 when the document's time falls in the question's
dates. Unless the question asks about history, what is no longer current (closed) ranks behind
everything current, whatever its score. docs/recall.md says how the weights were chosen.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mnemo.index.documents import CLOSED, Ranked, SearchQuery, Vector
from mnemo.index.keys import KeyTable
from mnemo.index.lexical import LexicalIndex
from mnemo.index.rows import RowTable
from mnemo.index.vectors import VectorIndex

MIN_COSINE_SPREAD = 0.1


@dataclass(frozen=True, slots=True)
class Weights:
    """The score's weights (docs/recall.md says how they were chosen)."""

    vector: float = 0.7
    lexical: float = 0.3
    context: float = 0.6
    entity: float = 0.15
    asked: float = 0.05
    date: float = 0.3
    history: float = 0.1


def rank(
    table: RowTable,
    lexical_index: LexicalIndex,
    vectors: VectorIndex | None,
    rows: npt.NDArray[np.int64],
    query: SearchQuery,
    asked_vector: Vector | None,
    weights: Weights,
) -> list[Ranked]:
    """The best ``query.limit`` of the candidate ``rows`` (ascending), one per owner, by score."""
    lexical = lexical_index.score_rows(query.terms, rows)
    best = lexical.max() if len(lexical) else 0.0
    if best > 0:
        lexical /= best
    vector = np.zeros(len(rows), dtype=np.float32)
    cosine = np.zeros(len(rows), dtype=np.float32)
    if vectors is not None and asked_vector is not None:
        has = vectors.has(rows)
        if has.any():
            cosines = vectors.cosines(rows[has], asked_vector)
            cosine[has] = cosines
            # Min-max over the candidates, but over a cosine spread of at least MIN_COSINE_SPREAD: with
            # few candidates whose cosines are close, a plain min-max would turn a 0.01
            # difference into the whole 0..1 range and drown every other component.
            high = float(cosines.max())
            low = min(float(cosines.min()), high - MIN_COSINE_SPREAD)
            vector[has] = (cosines - low) / (high - low)
    # A turn is more likely relevant when the turn before or after it is (a question and its
    # answer, a prompt and its response): context is the best neighbour's relevance.
    relevance = weights.vector * vector + weights.lexical * lexical
    context = np.zeros(len(rows), dtype=np.float32)
    if table.rows_at:
        position_of = {int(r): i for i, r in enumerate(rows)}
        for i, row in enumerate(rows.tolist()):
            near = [position_of[r] for r in table.adjacent(row) if r in position_of]
            if near:
                context[i] = relevance[near].max()
    entity = np.zeros(len(rows), dtype=np.float32)
    for key in dict.fromkeys(query.entities):
        named = table.by_entity.get(key)
        if named:
            entity += np.fromiter((r in named for r in rows), dtype=np.float32, count=len(rows))
    if query.entities:
        entity /= len(dict.fromkeys(query.entities))
    asked = np.zeros(len(rows), dtype=np.float32)
    if query.asked is not None and query.asked.value in table.by_filled:
        filled = table.by_filled[query.asked.value]
        asked = np.fromiter((r in filled for r in rows), dtype=np.float32, count=len(rows))
    date = np.zeros(len(rows), dtype=np.float32)
    if query.dates is not None:
        times = table.times_ms[rows]
        start = int(query.dates.start.timestamp() * 1000)
        end = int(query.dates.end.timestamp() * 1000)
        date = ((times >= start) & (times < end)).astype(np.float32)
    is_current = ~table.has_status(rows, CLOSED)
    history = (~is_current).astype(np.float32) if query.is_history else np.zeros(len(rows), np.float32)
    score = (
        relevance
        + weights.context * context
        + weights.entity * entity
        + weights.asked * asked
        + weights.date * date
        + weights.history * history
    )
    # Current first unless history is asked; then score; then key, so ties are stable.
    tier = np.zeros(len(rows), dtype=np.int8) if query.is_history else (~is_current).astype(np.int8)
    ranked: list[Ranked] = []
    owners_seen: set[str] = set()
    for i in _ordered(table.keys, rows, tier, score, head=4 * query.limit + 16):
        owner = table.owner(int(rows[i]))
        if owner in owners_seen:  # another passage of the same episode ranked higher
            continue
        owners_seen.add(owner)
        if len(ranked) == query.limit:
            break
        ranked.append(
            Ranked(
                key=table.keys[int(rows[i])],
                owner=owner,
                score=round(float(score[i]), 6),
                is_current=bool(is_current[i]),
                components={
                    "cosine": round(float(cosine[i]), 6),
                    "vector": round(float(vector[i]), 6),
                    "lexical": round(float(lexical[i]), 6),
                    "context": round(float(context[i]), 6),
                    "entity": round(float(entity[i]), 6),
                    "asked": float(asked[i]),
                    "date": float(date[i]),
                    "history": float(history[i]),
                },
            )
        )
    return ranked


def _ordered(
    keys: KeyTable,
    rows: npt.NDArray[np.int64],
    tier: npt.NDArray[np.int8],
    score: npt.NDArray[np.float32],
    head: int,
) -> Iterator[int]:
    """Positions in rank order: tier, then score descending, then key (ties are stable).

    Only the first ``head`` (and whatever ties the last of them) are sorted with their keys in
    Python; the rest follow, fully sorted, only if a caller reads that far.
    """
    order = np.lexsort((-score, tier))
    if head < len(order):
        last = order[head - 1]
        tied = np.flatnonzero((tier == tier[last]) & (score == score[last]))
        first = np.union1d(order[:head], tied)
    else:
        first = order
    key = lambda i: (int(tier[i]), -float(score[i]), keys[int(rows[i])])  # noqa: E731
    yield from sorted(first.tolist(), key=key)
    if len(first) < len(order):
        done = set(first.tolist())
        yield from sorted((i for i in order.tolist() if i not in done), key=key)
