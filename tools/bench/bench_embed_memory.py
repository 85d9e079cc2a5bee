"""What embedding long passages leaves in the daemon's RSS: ONNX Runtime's arena given back after
runs over 512 tokens (mnemo's setting) against the arena kept (ONNX Runtime's default).

Each variant runs in a fresh process, in turn (``--pairs`` A/B pairs, who goes first alternating):
it loads the installed EmbeddingGemma, asks ``--questions`` short questions one at a time, embeds
``--batches`` batches of 1–8 texts of 8–700 random words from two threads at once (as the daemon's
background embedder and a question can; the same texts for both variants; the model reads at most
512 tokens, so the longer texts are cut there and, being of one length, batched together, as when
long notes are imported), then asks the questions again. Printed per variant (medians over the
pairs): RSS once the model is loaded and after the passages (MB), the passages' time, and a
question's p50 before and p50 / p95 after (ms: compare within a row; from process to process this
machine's speed varies by more than the variants do).

    python -m tools.bench.bench_embed_memory --models-dir MODELS_DIR [--pairs 2]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time

from mnemo.config import load_settings
from mnemo.embed import Embedder, load_embedder
from tools import REPO
from tools.bench.bench_recall import percentiles, rss_mb

VARIANTS = ("shrink", "keep")
WORDS = (
    "deploy gateway timeout replica billing schema migration retry queue worker cache token "
    "release branch review staging primary index vector budget latency hook session memory "
    "decision because rollback incident postmortem owner service config terraform module"
).split()


def _passages(batches: int, seed: int) -> list[list[str]]:
    rng = random.Random(seed)
    return [
        [" ".join(rng.choices(WORDS, k=rng.randint(8, 700))) for _ in range(rng.randint(1, 8))]
        for _ in range(batches)
    ]


def run_variant(variant: str, models_dir: str, batches: int, questions: int) -> dict[str, float]:
    """In this process: load, embed the passages from two threads, ask the questions."""
    env = {**os.environ, "MNEMO_EMBEDDER": "embeddinggemma-300m-int8", "MNEMO_MODELS_DIR": models_dir}
    embedder = load_embedder(load_settings(env))
    assert embedder is not None
    if variant == "keep":
        embedder._shrink = None  # type: ignore[attr-defined]  # ONNX Runtime's default: arena kept
    embedder.embed_queries(["warm up"])
    before = _questions(embedder, questions)
    loaded = rss_mb(os.getpid())
    work = _passages(batches, seed=5)
    started = time.perf_counter()
    threads = [
        threading.Thread(target=lambda part=part: [embedder.embed_documents(b) for b in part])
        for part in (work[0::2], work[1::2])
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    passages_s = time.perf_counter() - started
    after_rss = rss_mb(os.getpid())
    after = _questions(embedder, questions)
    return {
        "loaded_mb": loaded,
        "after_mb": after_rss,
        "passages_s": passages_s,
        "before_p50_ms": before[0],
        "p50_ms": after[0],
        "p95_ms": after[1],
    }


def _questions(embedder: Embedder, count: int) -> tuple[float, float]:
    """p50 / p95 of a short question's embedding, ms."""
    timings = []
    for i in range(count):
        t = time.perf_counter()
        embedder.embed_queries([f"which {WORDS[i % len(WORDS)]} did we choose for the gateway?"])
        timings.append((time.perf_counter() - t) * 1000)
    return percentiles(timings)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--models-dir", required=True, help="a models directory holding EmbeddingGemma")
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--batches", type=int, default=24)
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--child", choices=VARIANTS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_variant(args.child, args.models_dir, args.batches, args.questions)))
        return
    results: dict[str, list[dict[str, float]]] = {v: [] for v in VARIANTS}
    for pair in range(args.pairs):
        for variant in VARIANTS if pair % 2 == 0 else VARIANTS[::-1]:
            done = subprocess.run(
                [sys.executable, "-m", __spec__.name, "--child", variant,
                 "--models-dir", args.models_dir, "--batches", str(args.batches),
                 "--questions", str(args.questions)],
                capture_output=True, text=True, check=True, cwd=REPO,
            )  # fmt: skip
            results[variant].append(json.loads(done.stdout.splitlines()[-1]))
            print(f"pair {pair + 1}, {variant}: {results[variant][-1]}", flush=True)
    print(
        "\n| arena after runs > 512 tokens | RSS loaded | RSS after passages | passages "
        "| question p50 before | question p50 / p95 after |"
    )
    print("|---|---|---|---|---|---|")
    for variant in VARIANTS:
        rows = results[variant]

        def med(name: str, rows: list[dict[str, float]] = rows) -> float:
            return statistics.median(r[name] for r in rows)

        label = "given back (mnemo)" if variant == "shrink" else "kept (ONNX Runtime's default)"
        print(
            f"| {label} | {med('loaded_mb'):,.0f} MB | {med('after_mb'):,.0f} MB | {med('passages_s'):.1f} s "
            f"| {med('before_p50_ms'):.1f} ms | {med('p50_ms'):.1f} / {med('p95_ms'):.1f} ms |"
        )


if __name__ == "__main__":
    main()
