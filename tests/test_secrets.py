"""No credential is stored or sent to a model in clear: episodes are redacted with a typed
placeholder, remember refuses, and look-alikes (hashes, UUIDs, inline images) are left alone.

The corpora are tests/data/secrets.jsonl (36 made-up credentials of 20 kinds, in prose, tool
output, .env, YAML, JSON, headers and URLs) and tests/data/secret_lookalikes.jsonl (34 strings that
look like them and are not); tools/secrets_check.py prints the detection and false-positive rates.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest

from mnemo.client.launcher import stop_daemon
from mnemo.client.typed import DaemonClient
from mnemo.episodes import EpisodeIn, Role
from mnemo.errors import SecretError
from mnemo.memories import RememberRequest
from mnemo.secrets import find_secrets, redact, refuse_secrets
from mnemo.store import open_store
from mnemo.vocabulary import MemoryType
from tests.conftest import Home
from tests.llm_server import LLMServer
from tests.test_hooks import event_input, hook

DATA = Path(__file__).parent / "data"
SECRETS: list[dict[str, str]] = [
    json.loads(line) for line in (DATA / "secrets.jsonl").read_text().splitlines()
]
LOOKALIKES: list[dict[str, str]] = [
    json.loads(line) for line in (DATA / "secret_lookalikes.jsonl").read_text().splitlines()
]
PLACEHOLDER = re.compile(r"\[REDACTED:[a-z0-9-]+\]")


def clear_parts(secret: str) -> list[str]:
    """What of ``secret`` must not survive: the whole value, and each line of a multi-line one
    (a private key's body lines)."""
    return [secret, *(line for line in secret.splitlines() if len(line) >= 12 and "-----" not in line)]


def leaked(text: str) -> list[str]:
    """The corpus secrets found in clear in ``text``."""
    return [case["kind"] for case in SECRETS if any(part in text for part in clear_parts(case["secret"]))]


def test_the_corpus_holds_at_least_30_secrets_in_prose_and_tool_output_and_30_look_alikes() -> None:
    assert len(SECRETS) >= 30 and len(LOOKALIKES) >= 30
    places = {case["where"] for case in SECRETS}
    assert {"prose", "tool", "env", "url", "header"} <= places


@pytest.mark.parametrize("case", SECRETS, ids=[f"{c['kind']}-{c['where']}" for c in SECRETS])
def test_each_secret_is_replaced_by_a_placeholder_naming_its_kind(case: dict[str, str]) -> None:
    out = redact(case["text"])
    assert not leaked(out), out
    assert PLACEHOLDER.search(out)
    assert redact(out) == out  # redacting twice changes nothing


@pytest.mark.parametrize(
    "case",
    [c for c in LOOKALIKES if c["kind"].split("-")[0] in {"git", "sha256", "md5", "uuid", "docker", "base64"}]
    + [c for c in LOOKALIKES if c["kind"] in {"placeholder-env", "placeholder-template", "env-reference"}],
    ids=lambda c: c["kind"],
)
def test_hashes_uuids_inline_images_and_references_to_a_secret_are_left_as_they_are(
    case: dict[str, str],
) -> None:
    assert redact(case["text"]) == case["text"]


def test_the_text_around_a_secret_is_kept() -> None:
    assert (
        redact("DATABASE_URL=postgres://shop:Pg7hQ2xZ9k!9@db.internal:5432/shop")
        == "DATABASE_URL=postgres://shop:[REDACTED:password]@db.internal:5432/shop"
    )
    assert (
        redact("the staging admin password is Tr0ub4dor&3xk9 — don't share it")
        == "the staging admin password is [REDACTED:password] — don't share it"
    )
    key = (
        "-----BEGIN OPENSSH PRIVATE KEY-----\n"
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9u\n"
        "-----END OPENSSH PRIVATE KEY-----"
    )
    assert redact(f"$ cat ~/.ssh/deploy\n{key}\n$ ls") == "$ cat ~/.ssh/deploy\n[REDACTED:private-key]\n$ ls"


def test_a_refusal_names_the_kind_and_the_place_never_the_value() -> None:
    token = "ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"
    with pytest.raises(SecretError) as raised:
        refuse_secrets(f"release notes\nuse {token} for the bot", "content")
    message = str(raised.value)
    assert token not in message and "ghp_" not in message
    assert "content:" in message and "github-token" in message and "line 2" in message
    refuse_secrets("we deploy on Thursdays; the key is in the team vault", "content")  # no error
    assert find_secrets("") == []


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
            _, _, code = hook(
                configured,
                "UserPromptSubmit",
                event_input("UserPromptSubmit", "s-hooks", prompt=case["text"]),
            )
        else:
            response: dict[str, Any] = {"stdout": case["text"], "stderr": ""}
            payload = event_input("PostToolUse", "s-hooks", tool_response=response, tool_use_id=f"toolu_{i}")
            _, _, code = hook(configured, "PostToolUse", payload)
        assert code == 0
    last = SECRETS[0]["text"]
    assert hook(configured, "Stop", event_input("Stop", "s-hooks", last_assistant_message=last))[2] == 0

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
    for path in configured.path.rglob("*"):
        if path.is_file():
            content = path.read_bytes().decode("utf-8", "replace")
            assert not leaked(content), f"{path.relative_to(configured.path)} holds a secret in clear"
