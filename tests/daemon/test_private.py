"""A <private> span never reaches the store, a file under mnemo's home or a model, end to end:
sent through the hook process (a prompt, a tool's output, the answer) and distilled by the
scripted model, with the usage audit asking it about the turn (the same check as
tests/daemon/test_secrets.py; the rules themselves: tests/unit/test_private.py)."""

from __future__ import annotations

import json

import anyio
import pytest

from mnemo.client.launcher import stop_daemon
from mnemo.client.typed import DaemonClient
from mnemo.errors import InputError
from mnemo.memories import RememberRequest
from mnemo.store import open_store
from mnemo.vocabulary import MemoryType
from tests.helpers import Home, event_input, files_holding, hook
from tests.llm_server import LLMServer

# What was said in private: none of these words may be found anywhere afterwards.
PRIVATE = ["Lisbon-apartment-42", "salary-band-L7", "diagnosis-migraine-cluster", "unclosed-span-tail"]


def _found(text: str) -> list[str]:
    return [words for words in PRIVATE if words in text]


def test_a_private_span_is_in_no_table_no_file_and_no_model_request(
    home: Home, llm_server: LLMServer
) -> None:
    llm_server.answer(contains="Transcript:", text=json.dumps({"memories": []}))
    configured = home.with_env(
        MNEMO_LLM_URL=llm_server.url,
        MNEMO_LLM_MODEL="scripted-1",
        MNEMO_EMBEDDER="use-multilingual-v3",
        MNEMO_DISTILL_IDLE_S="3600",
    )
    prompt = (
        "Book the offsite near my flat <private>Lisbon-apartment-42, my salary-band-L7</private> "
        "and remember we deploy on Thursdays."
    )
    tool = {"stdout": "calendar ok\n<PRIVATE>diagnosis-migraine-cluster</PRIVATE>\ndone", "stderr": ""}
    answer = "Booked. <private>unclosed-span-tail and everything after it"
    # The first hook finds no daemon: its input is spooled, then replayed by the daemon it starts.
    spooled = event_input("UserPromptSubmit", "s-spool", prompt=prompt)
    assert hook(configured, "UserPromptSubmit", spooled)[1] == 0

    async def started() -> None:
        async with DaemonClient(configured.settings) as client:
            await client.ensure_started()

    anyio.run(started)
    # The daemon is up: these reach it live.
    turns = [
        ("UserPromptSubmit", event_input("UserPromptSubmit", "s-priv", prompt=prompt)),
        ("PostToolUse", event_input("PostToolUse", "s-priv", tool_response=tool, tool_use_id="toolu_1")),
        ("Stop", event_input("Stop", "s-priv", last_assistant_message=answer)),
    ]
    for event, payload in turns:
        assert hook(configured, event, payload)[1] == 0

    async def run() -> None:
        async with DaemonClient(configured.settings) as client:
            with pytest.raises(InputError, match="<private> span"):
                await client.remember(RememberRequest(content=prompt, type=MemoryType.FACT))
            for session in ("s-spool", "s-priv"):
                assert (await client.distil(session)).queued
            with anyio.fail_after(120):
                while (await client.status()).distillation.batches_done < 2:
                    await anyio.sleep(0.1)

    anyio.run(run)
    stop_daemon(configured.settings)

    prompts = "\n".join(llm_server.prompts())
    assert "[PRIVATE]" in prompts and "Booked." in prompts  # the turn reached the model, without the spans
    assert not _found(json.dumps(llm_server.requests, ensure_ascii=False)), "sent to the model"

    store = open_store(configured.settings.store)
    try:
        texts = "\n".join(e.text for e in store.episodes_page("", 1_000))
        assert texts.count("[PRIVATE]") == 4 and texts.count("we deploy on Thursdays") == 2
        tables = [str(row[0]) for row in store._db.query("SHOW TABLES").result_rows]
        assert {"episodes", "memories", "sessions", "judge_log", "distill_batches"} <= set(tables)
        for table in tables:
            rows = store._db.query(f"SELECT * FROM `{table}`").result_rows
            assert not _found(repr(rows)), f"table {table} holds a private span"
    finally:
        store.close()
    assert files_holding(configured.path, _found) == []
