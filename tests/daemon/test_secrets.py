"""No credential is stored or sent to a model in clear, end to end: every corpus secret
(tests/data/secrets.jsonl) reaches the daemon through the hook process and its API, and the
sessions are distilled (redaction itself: tests/unit/test_secrets.py)."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from mnemo.client.launcher import stop_daemon
from mnemo.client.typed import DaemonClient
from mnemo.episodes import EpisodeIn, Role
from mnemo.errors import SecretError
from mnemo.memories import RememberRequest
from mnemo.store import open_store
from mnemo.vocabulary import MemoryType
from tests.helpers import SECRETS, Home, event_input, files_holding, hook, leaked
from tests.llm_server import LLMServer


def _script_extraction(server: LLMServer) -> None:
    server.answer(contains="Transcript:", text=json.dumps({"memories": []}))


def test_no_secret_is_stored_or_sent_to_the_model_in_clear(home: Home, llm_server: LLMServer) -> None:
    """Every corpus secret reaches the daemon as a person's prompt, a tool's output, an assistant's
    answer or an API episode; the sessions are distilled by the (scripted) model. Afterwards no
    secret is in the store, in any file under mnemo's home, or in any request the model received."""
    _script_extraction(llm_server)
    configured = home.with_env(
        MNEMO_LLM_URL=llm_server.url,
        MNEMO_LLM_MODEL="scripted-1",
        MNEMO_EMBEDDER="use-multilingual-v3",
        MNEMO_DISTILL_IDLE_S="3600",
    )
    sessions = ["s-hooks", "s-api"]
    for i, case in enumerate(SECRETS[: len(SECRETS) // 2]):
        if case["where"] == "prose":
            _, code = hook(
                configured,
                "UserPromptSubmit",
                event_input("UserPromptSubmit", "s-hooks", prompt=case["text"]),
            )
        else:
            response: dict[str, Any] = {"stdout": case["text"], "stderr": ""}
            payload = event_input("PostToolUse", "s-hooks", tool_response=response, tool_use_id=f"toolu_{i}")
            _, code = hook(configured, "PostToolUse", payload)
        assert code == 0
    last = SECRETS[0]["text"]
    assert hook(configured, "Stop", event_input("Stop", "s-hooks", last_assistant_message=last))[1] == 0

    async def run() -> None:
        async with DaemonClient(configured.settings) as client:
            rest = SECRETS[len(SECRETS) // 2 :]
            await client.append(
                [
                    EpisodeIn(
                        text=c["text"],
                        role=Role.TOOL if c["where"] == "tool" else Role.USER,
                        session="s-api",
                        turn=i,
                    )
                    for i, c in enumerate(rest)
                ]
            )
            for case in SECRETS[:5]:
                with pytest.raises(SecretError):
                    await client.remember(RememberRequest(content=case["text"], type=MemoryType.FACT))
            for session in sessions:
                assert (await client.distil(session)).queued
            with anyio.fail_after(120):
                while (await client.status()).distillation.batches_done < len(sessions):
                    await anyio.sleep(0.1)

    anyio.run(run)
    stop_daemon(configured.settings)

    prompts = "\n".join(llm_server.prompts())
    assert "[REDACTED:" in prompts and prompts.count("Transcript:") == len(sessions)
    assert not leaked(json.dumps(llm_server.requests, ensure_ascii=False)), "sent to the model in clear"
    assert not leaked(prompts)

    store = open_store(configured.settings.store)
    try:
        episodes = store.episodes_page("", 10_000)
        texts = "\n".join(e.text for e in episodes)
        assert len(episodes) >= len(SECRETS) and texts.count("[REDACTED:") >= len(SECRETS)
        assert not leaked(texts)
        assert store.memories_page("", 100) == []  # every remember was refused
    finally:
        store.close()
    assert files_holding(configured.path, leaked) == []
