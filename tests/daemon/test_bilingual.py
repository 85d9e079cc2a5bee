"""Bilingual recall: 36 project memories with look-alikes, 12 questions in English and in Spanish.

Runs through the daemon with the fallback embedder (always installed) and, when a models
directory holding EmbeddingGemma is given in MNEMO_TEST_MODELS_DIR, with EmbeddingGemma too.
tools/evals/bilingual_check.py prints the same figures for every installed model.
"""

from __future__ import annotations

import anyio
import pytest

from mnemo.client.typed import DaemonClient
from mnemo.embed.fallback import FALLBACK_ID
from tests.bilingual_corpus import ask_all, score
from tests.helpers import GEMMA, HAS_GEMMA, MODELS_DIR, Home


def _scores(home: Home) -> dict[str, tuple[int, int, list[str]]]:
    async def asked() -> dict[str, list[tuple[str, list[str]]]]:
        async with DaemonClient(home.settings) as client:
            return await ask_all(client)

    return score(anyio.run(asked))


def test_the_fallback_answers_in_english_and_spanish(home: Home) -> None:
    scores = _scores(home.with_env(MNEMO_EMBEDDER=FALLBACK_ID))
    for language in ("en", "es"):
        top1, top3, missed = scores[language]
        assert top1 >= 11 and top3 == 12, (language, missed)


@pytest.mark.skipif(
    not HAS_GEMMA,
    reason="set MNEMO_TEST_MODELS_DIR to a models directory holding embeddinggemma-300m-int8",
)
def test_embeddinggemma_answers_in_english_and_spanish(home: Home) -> None:
    gemma = home.with_env(MNEMO_EMBEDDER=GEMMA, MNEMO_MODELS_DIR=MODELS_DIR)
    scores = _scores(gemma)

    async def status() -> tuple[str, str]:
        async with DaemonClient(gemma.settings) as client:
            answer = await client.status()
            return answer.embedder, answer.embedder_degraded

    # The daemon checked the model on this CPU at start: the 7-bit build is faithful on any x86-64.
    # It keeps 512 of its 768 dimensions by default (embedding_dims = "auto").
    assert anyio.run(status) == (f"{GEMMA}-d512", "")
    for language in ("en", "es"):
        top1, top3, missed = scores[language]
        assert top1 >= 11 and top3 == 12, (language, missed)
