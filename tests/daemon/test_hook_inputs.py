"""Malformed hook inputs, through the real hook process and the daemon's socket: a bad field is
cleaned (or refused as the client's error, 4xx) and the rest of the turn is recorded; the daemon
never answers 5xx for what a host sent."""

from __future__ import annotations

import json
from typing import Any

import anyio

from mnemo.api.recall import RecallEpisodeRequest
from mnemo.client.typed import DaemonClient
from mnemo.jsonread import CUT_NOTE
from mnemo.vocabulary import MemoryType
from mnemo.workspace import workspace_namespace
from tests.helpers import (
    WORKSPACE,
    Home,
    context_of,
    event_input,
    hook,
    raw_http,
    remember_all,
    session_episodes,
    wait_until,
)


def raw_hook(payload: dict[str, object]) -> str:
    """The host's JSON as a JavaScript host writes it: lone surrogates as escapes."""
    return json.dumps(payload)  # ensure_ascii: "\ud800" becomes the six characters \ud800


def no_daemon_errors(home: Home) -> bool:
    log = home.settings.log_dir / "hooks.log"
    return not log.exists() or "daemon answered" not in log.read_text()


def test_a_tool_response_nested_a_thousand_deep_is_cut_and_the_turn_recorded(home: Home) -> None:
    home.mnemo("daemon", "start")
    deep = '{"content": [' * 1_000 + '"bottom"' + "]}" * 1_000  # too deep for json.dumps to write
    tool = event_input("PostToolUse", session="s-deep", tool_name="Fetch", tool_response="DEEP")
    for event, payload in (
        ("UserPromptSubmit", raw_hook(event_input("UserPromptSubmit", session="s-deep"))),
        ("PostToolUse", raw_hook(tool).replace('"DEEP"', deep)),
        ("Stop", raw_hook(event_input("Stop", session="s-deep"))),
    ):
        assert hook(home, event, payload) == ("", 0), event
    episodes = anyio.run(session_episodes, home, "s-deep")
    assert [e.kind.value for e in episodes] == ["prompt", "tool_result", "response"]
    assert CUT_NOTE in episodes[1].text
    assert no_daemon_errors(home)


def test_lone_surrogates_in_the_prompt_and_session_id_are_replaced_and_the_memory_injected(
    home: Home,
) -> None:
    [memory] = anyio.run(
        remember_all, home, [("Deploys happen on Thursdays", MemoryType.DECISION, WORKSPACE)]
    )
    session = "s-\ud83d-split"
    prompt = event_input("UserPromptSubmit", session=session, prompt="which day do we deploy? \ud83d")
    stdout, code = hook(home, "UserPromptSubmit", raw_hook(prompt))
    assert code == 0 and memory in context_of(stdout)
    stop = event_input("Stop", session=session, last_assistant_message="Thursdays \udc00")
    assert hook(home, "Stop", raw_hook(stop)) == ("", 0)
    episodes = anyio.run(session_episodes, home, "s-\ufffd-split")
    assert [e.text for e in episodes] == ["which day do we deploy? \ufffd", "Thursdays \ufffd"]
    assert no_daemon_errors(home)


def test_a_session_id_longer_than_a_session_field_keeps_its_turns_under_one_key(home: Home) -> None:
    home.mnemo("daemon", "start")
    long_id = "s-" + "x" * 600
    for event in ("UserPromptSubmit", "Stop"):
        assert hook(home, event, raw_hook(event_input(event, session=long_id))) == ("", 0)
    other = "s-" + "x" * 599 + "y"  # the same first 500 characters: another session all the same
    assert hook(home, "UserPromptSubmit", raw_hook(event_input("UserPromptSubmit", session=other)))[1] == 0
    keys: set[str] = set()

    def both_recalled() -> bool:  # episodes are indexed for recall just after they are stored
        keys.clear()
        keys.update(e.session for e in anyio.run(_all_episodes, home))
        return len(keys) >= 2

    wait_until(both_recalled, what="the turns of both sessions in episode recall")
    assert len(keys) == 2 and all(len(k) == 500 and k.startswith("s-xxx") for k in keys)
    [key] = [k for k in keys if len(anyio.run(session_episodes, home, k)) == 2]
    assert [e.kind.value for e in anyio.run(session_episodes, home, key)] == ["prompt", "response"]
    assert no_daemon_errors(home)


async def _all_episodes(home: Home) -> list[Any]:
    async with DaemonClient(home.settings) as client:
        found = await client.recall_episodes(RecallEpisodeRequest(query="which day do we deploy", limit=50))
        return [hit.episode for hit in found.episodes]


def test_a_cwd_the_system_refuses_still_records_the_turn(home: Home) -> None:
    home.mnemo("daemon", "start")
    for n, cwd in enumerate(["/srv/" + "x" * 10_000, "/srv/a\x00b", "~nosuchuser/repo"]):
        session = f"s-cwd-{n}"
        payload = event_input("UserPromptSubmit", session=session, cwd=cwd, prompt=f"prompt {n}")
        assert hook(home, "UserPromptSubmit", raw_hook(payload)) == ("", 0)
        [episode] = anyio.run(session_episodes, home, session)
        assert episode.text == f"prompt {n}"
        assert episode.namespace == workspace_namespace(cwd[:4096])
    assert no_daemon_errors(home)


def _post(home: Home, path: str, body: bytes, *, length: int | None = None) -> tuple[int, bytes]:
    """One request over the socket (``length``: a Content-Length other than the body's)."""
    size = len(body) if length is None else length
    head = f"POST {path} HTTP/1.1\r\nhost: mnemo\r\ncontent-length: {size}\r\n\r\n".encode()
    answer = raw_http(home.settings.socket_path, head + body)
    return int(answer.split(b" ", 2)[1]), answer.partition(b"\r\n\r\n")[2]


def test_bad_hook_inputs_are_4xx_never_5xx_over_the_socket(home: Home) -> None:
    home.mnemo("daemon", "start")
    cases = [
        ("[1, 2]", 422, "must be a JSON object"),
        ('{"session_id": ' + "[" * 5_000 + "]" * 5_000 + "}", 422, "no session_id"),
        ('{"session_id": "s-1", "prompt": NaN}', 422, "not a JSON object"),
    ]
    for body, status, words in cases:
        got, answer = _post(home, "/v1/hooks/UserPromptSubmit", body.encode())
        assert got == status and words in answer.decode(), (body[:40], got, answer[:200])
    # Over the hooks' cap, by its Content-Length: refused before any of the body is sent.
    got, answer = _post(home, "/v1/hooks/PostToolUse", b"", length=16 * 1024 * 1024 + 1)
    assert got == 413 and b"over the 16,777,216 byte limit" in answer
