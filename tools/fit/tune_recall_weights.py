"""Choose the recall score's weights by 2-fold cross-validation over LoCoMo conversations.

In-process (no daemon): each conversation's turns go into a :class:`SearchIndex` exactly as the
daemon indexes episodes (speaker-prefixed passages, session and turn), with vectors from the
chosen embedder (cached in ``--cache``: embedding the turns once takes minutes). For each grid
point (vector weight, context weight) it measures evidence R@10 per fold, picks the best on one
fold and reports it on the other. docs/recall.md quotes its output.

    python -m tools.fit.tune_recall_weights --embedder embeddinggemma-300m-int8
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import numpy.typing as npt

from mnemo.config import load_settings
from mnemo.embed import load_embedder
from mnemo.index.documents import Document, SearchQuery
from mnemo.index.engine import SearchIndex
from mnemo.index.query import analyse
from mnemo.index.ranking import Weights
from tools.evals.eval_locomo import episode_id, session_time, turn_text

FOLDS = (("conv-26", "conv-30"), ("conv-41", "conv-42", "conv-43"))
VECTOR_WEIGHTS = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
CONTEXT_WEIGHTS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)


def load(
    data: Path, embedder_id: str, cache: Path
) -> tuple[list[dict], list[dict], npt.NDArray[np.float32], npt.NDArray[np.float32]]:
    turns = [json.loads(line) for line in (data / "locomo_dev_turns.jsonl").open(encoding="utf-8")]
    questions = [json.loads(line) for line in (data / "locomo_dev_qa.jsonl").open(encoding="utf-8")]
    if embedder_id == "none":
        return (
            turns,
            questions,
            np.zeros((len(turns), 1), np.float32),
            np.zeros((len(questions), 1), np.float32),
        )
    if cache.exists():
        cached = np.load(cache)
        return turns, questions, cached["documents"], cached["questions"]
    embedder = load_embedder(load_settings({**os.environ, "MNEMO_EMBEDDER": embedder_id}))
    if embedder is None:
        raise SystemExit(f"embedder {embedder_id} is not installed")
    documents = embedder.embed_documents([f"{t['speaker']}: {turn_text(t)}" for t in turns])
    asked = np.stack([embedder.embed_queries([q["question"]])[0] for q in questions])
    np.savez(cache, documents=documents, questions=asked)
    return turns, questions, documents, asked


def recall_at_10(
    turns: list[dict],
    questions: list[dict],
    documents: npt.NDArray[np.float32],
    asked: npt.NDArray[np.float32],
    weights: Weights,
    samples: set[str],
) -> float:
    indexes = {}
    for sample in samples:
        rows = [i for i, t in enumerate(turns) if t["sample_id"] == sample]
        index = SearchIndex(weights)
        index.add(
            [
                Document(
                    key=episode_id(sample, turns[i]["dia_id"]),
                    owner=episode_id(sample, turns[i]["dia_id"]),
                    text=f"{turns[i]['speaker']}: {turn_text(turns[i])}",
                    namespace=sample,
                    kind="prompt",
                    status="active",
                    time=session_time(turns[i]["session_date_time"]),
                    session=f"{sample}-s{turns[i]['session']}",
                    turn=turns[i]["turn_index"],
                )
                for i in rows
            ]
        )
        if documents.shape[1] > 1:  # "none": words only
            index.put_vectors([episode_id(sample, turns[i]["dia_id"]) for i in rows], documents[rows])
        indexes[sample] = index
    now = datetime.now(UTC)
    found = []
    for position, question in enumerate(questions):
        if question["sample_id"] not in samples or not question["evidence"]:
            continue
        analysis = analyse(question["question"], now)
        ranked = indexes[question["sample_id"]].search(
            SearchQuery(
                terms=analysis.terms, vector=asked[position] if asked.shape[1] > 1 else None, limit=10
            )
        )
        evidence = {episode_id(question["sample_id"], d) for d in question["evidence"]}
        found.append(len(evidence & {r.owner for r in ranked}) / len(evidence))
    return 100 * statistics.fmean(found)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, required=True, help="LoCoMo's directory (not in the repository)")
    parser.add_argument("--embedder", default="embeddinggemma-300m-int8")
    parser.add_argument("--cache", type=Path, help="vectors cache (default /tmp/mnemo-tune-EMBEDDER.npz)")
    args = parser.parse_args()
    cache = args.cache or Path(f"/tmp/mnemo-tune-{args.embedder}.npz")
    turns, questions, documents, asked = load(args.data, args.embedder, cache)
    vector_weights = (0.0,) if args.embedder == "none" else VECTOR_WEIGHTS
    grid = [(v, c) for v in vector_weights for c in CONTEXT_WEIGHTS]
    scores = {
        fold: {
            (v, c): recall_at_10(
                turns, questions, documents, asked, Weights(vector=v, lexical=1 - v, context=c), set(fold)
            )
            for v, c in grid
        }
        for fold in FOLDS
    }
    for fold, other in (FOLDS, FOLDS[::-1]):
        best = max(grid, key=lambda g: scores[fold][g])
        print(
            f"best on {'+'.join(fold)}: vector {best[0]}, context {best[1]} "
            f"(R@10 {scores[fold][best]:.1f}); on {'+'.join(other)} it scores {scores[other][best]:.1f} "
            f"(that fold's own best {max(scores[other].values()):.1f})"
        )
    for g in grid:
        print(f"vector {g[0]}, context {g[1]}: " + "  ".join(f"{scores[f][g]:.1f}" for f in FOLDS))


if __name__ == "__main__":
    main()
