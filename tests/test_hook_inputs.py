"""Malformed hook inputs, through the real hook process and the daemon's socket: a bad field is
cleaned (or refused as the client's error, 4xx) and the rest of the turn is recorded; the daemon
never answers 5xx for what a host sent."""

from __future__ import annotations

import json
import socket

import anyio

from mnemo.jsonread import CUT_NOTE
from mnemo.memories import MemoryType
from mnemo.workspace import workspace_namespace
from tests.conftest import Home
from tests.test_hooks import WORKSPACE, _remember, _session_episodes, context_of, event_input, hook


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
        assert hook(home, event, payload)[::2] == ("", 0), event
    episodes = anyio.run(_session_episodes, home, "s-deep")
    assert [e.kind.value for e in episodes] == ["prompt", "tool_result", "response"]
    assert CUT_NOTE in episodes[1].text
    assert no_daemon_errors(home)


def test_lone_surrogates_in_the_prompt_and_session_id_are_replaced_and_the_memory_injected(
    home: Home,
) -> None:
    [memory] = anyio.run(_remember, home, [("Deploys happen on Thursdays", MemoryType.DECISION, WORKSPACE)])
    session = "s-\ud83d-split"
    prompt = event_input("UserPromptSubmit", session=session, prompt="which day do we deploy? \ud83d")
    stdout, _, code = hook(home, "UserPromptSubmit", raw_hook(prompt))
    assert code == 0 and memory in context_of(stdout)
    stop = event_input("Stop", session=session, last_assistant_message="Thursdays \udc00")
    assert hook(home, "Stop", raw_hook(stop))[::2] == ("", 0)
    episodes = anyio.run(_session_episodes, home, "s-\ufffd-split")
    assert [e.text for e in episodes] == ["which day do we deploy? \ufffd", "Thursdays \ufffd"]
    assert no_daemon_errors(home)


def test_a_cwd_the_system_refuses_still_records_the_turn(home: Home) -> None:
    home.mnemo("daemon", "start")
    for n, cwd in enumerate(["/srv/" + "x" * 10_000, "/srv/a\x00b", "~nosuchuser/repo"]):
        session = f"s-cwd-{n}"
        payload = event_input("UserPromptSubmit", session=session, cwd=cwd, prompt=f"prompt {n}")
        assert hook(home, "UserPromptSubmit", raw_hook(payload))[::2] == ("", 0)
        [episode] = anyio.run(_session_episodes, home, session)
        assert episode.text == f"prompt {n}"
        assert episode.namespace == workspace_namespace(cwd[:4096])
    assert no_daemon_errors(home)


def _post(home: Home, path: str, body: bytes, *, length: int | None = None) -> tuple[int, bytes]:
    """One request over the socket (``length``: a Content-Length other than the body's)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(60)
        sock.connect(str(home.settings.socket_path))
        size = len(body) if length is None else length
        sock.sendall(f"POST {path} HTTP/1.1\r\nhost: mnemo\r\ncontent-length: {size}\r\n\r\n".encode() + body)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
            head, _, rest = answer.partition(b"\r\n\r\n")
            declared = [line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")]
            if declared and len(rest) >= int(declared[0].split(b":")[1]):
                break
    return int(answer.split(b" ", 2)[1]), answer.partition(b"\r\n\r\n")[2]


def test_bad_hook_inputs_are_4xx_never_5xx_over_the_socket(home: Home) -> None:
    home.mnemo("daemon", "start")
    cases = [
        ("[1, 2]", 422, "must be a JSON object"),
        ('{"session_id": ' + "[" * 5_000 + "]" * 5_000 + "}", 422, "no session_id"),
        (json.dumps({"session_id": "s" * 501, "prompt": "x"}), 422, "over 500"),
        ('{"session_id": "s-1", "prompt": NaN}', 422, "not a JSON object"),
    ]
    for body, status, words in cases:
        got, answer = _post(home, "/v1/hooks/UserPromptSubmit", body.encode())
        assert got == status and words in answer.decode(), (body[:40], got, answer[:200])
    # Over the hooks' cap, by its Content-Length: refused before any of the body is sent.
    got, answer = _post(home, "/v1/hooks/PostToolUse", b"", length=16 * 1024 * 1024 + 1)
    assert got == 413 and b"over the 16,777,216 byte limit" in answer
