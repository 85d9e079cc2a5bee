"""Bilingual recall check: 36 project memories, 12 questions asked in English and in Spanish.

Loads the memories into a fresh mnemo (its own MNEMO_HOME) through `remember`, waits until every
memory has its vector, asks each question through `recall`, and prints top-1 and top-3 hits per
language, for each installed embedder (or the ones named), plus the misses.

    python -m tools.evals.bilingual_check
    python -m tools.evals.bilingual_check --embedder use-multilingual-v3
"""

from __future__ import annotations

import argparse
import os
import tempfile

import anyio

from mnemo.client.launcher import stop_daemon
from mnemo.client.typed import DaemonClient
from mnemo.config import load_settings
from mnemo.embed import installed_models
from tests.bilingual_corpus import ask_all, score


def run(embedder: str) -> dict[str, tuple[int, int, list[str]]]:
    """Per language: top-1 hits, top-3 hits, and the questions missed at top 1."""
    with tempfile.TemporaryDirectory(prefix="mnemo-bilingual-", dir="/tmp") as home:
        settings = load_settings({**os.environ, "MNEMO_HOME": home, "MNEMO_EMBEDDER": embedder})

        async def asked() -> dict[str, list[tuple[str, list[str]]]]:
            async with DaemonClient(settings) as client:
                return await ask_all(client)

        try:
            return score(anyio.run(asked))
        finally:
            stop_daemon(settings)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--embedder", action="append", help="model id (repeatable); 'none' for words only")
    args = parser.parse_args()
    embedders = args.embedder or [m.id for m in installed_models(load_settings())]
    print("| embedder | EN top-1 | EN top-3 | ES top-1 | ES top-3 |")
    print("|---|---|---|---|---|")
    misses = []
    for embedder in embedders:
        scores = run(embedder)
        en, es = scores["en"], scores["es"]
        print(f"| {embedder} | {en[0]}/12 | {en[1]}/12 | {es[0]}/12 | {es[1]}/12 |", flush=True)
        misses.append(f"{embedder}: EN missed {en[2] or 'none'}; ES missed {es[2] or 'none'}")
    print("\n" + "\n".join(misses))


if __name__ == "__main__":
    main()
