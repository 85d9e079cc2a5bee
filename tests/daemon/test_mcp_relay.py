"""mnemo-mcp as a clumsy or hostile host meets it: raw JSON-RPC lines on its stdin. Every request
is answered (a result, or the standard error with its id), nothing silences the server, and
stdout carries nothing but JSON-RPC."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from mnemo.jsonrpc import MAX_LINE_BYTES
from tests.helpers import BIN, Home
from tests.mcp_wire import RawSession


@pytest.fixture(scope="module")
def session(module_home: Home) -> Iterator[RawSession]:
    """One server for the whole module: each test also shows the ones before did not silence it."""
    stderr = module_home.path / "mcp.stderr"
    with RawSession([str(BIN / "mnemo-mcp")], module_home.env, stderr) as raw:
        raw.initialize()
        yield raw
        assert raw.foreign_lines() == []
        assert raw.request("ping")["result"] == {}


def call(name: str, arguments: dict[str, Any], request_id: object = 7) -> bytes:
    params = {"name": name, "arguments": arguments}
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}).encode()


def errors(answers: list[dict[str, Any]]) -> list[tuple[object, int]]:
    return [(a["id"], a["error"]["code"]) for a in answers if "error" in a]


def test_an_initialize_with_an_array_id_is_refused_and_the_server_answers_the_next_ping(
    session: RawSession,
) -> None:
    bad = b'{"jsonrpc":"2.0","id":[7],"method":"initialize","params":{}}'
    assert errors(session.exchange(bad)) == [(None, -32600)]
    assert errors(session.exchange(b'{"jsonrpc":"2.0","id":{"a":1},"method":"initialize"}')) == [
        (None, -32600)
    ]
    assert session.request("ping")["result"] == {}


@pytest.mark.parametrize("depth", [65, 199, 500, 989, 990, 5_000])
def test_a_request_nested_deeper_than_the_bound_is_refused_with_its_id_at_any_depth(
    session: RawSession, depth: int
) -> None:
    line = '{"jsonrpc":"2.0","id":3,"method":"ping","params":{"x":' + "[" * depth + "]" * depth + "}}"
    [answer] = session.exchange(line.encode())
    assert (answer["id"], answer["error"]["code"]) == (3, -32600)
    assert "nested deeper than 64 levels" in answer["error"]["message"]
    notification = '{"jsonrpc":"2.0","method":"x","params":{"x":' + "[" * depth + "]" * depth + "}}"
    assert session.exchange(notification.encode()) == []  # nobody waits on a notification
    [bare] = session.exchange(("[" * depth + "]" * depth).encode())
    assert (bare["id"], bare["error"]["code"]) == (None, -32600)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (b'{"id":4,"method":"ping"}', (4, -32600)),  # no jsonrpc
        (b'{"jsonrpc":"1.0","id":4,"method":"ping"}', (4, -32600)),
        (b'{"jsonrpc":"2.0","id":4,"method":5}', (4, -32600)),
        (b'{"jsonrpc":"2.0","id":4,"method":"ping","params":[]}', (4, -32602)),
        (b'{"jsonrpc":"2.0","id":4,"method":"ping","params":"x"}', (4, -32602)),
        (b'{"jsonrpc":"2.0","id":1.5,"method":"ping"}', (None, -32600)),
        (b'{"jsonrpc":"2.0","id":true,"method":"ping"}', (None, -32600)),
        (b'{"jsonrpc":"2.0","id":null,"method":"ping"}', (None, -32600)),
        (b'[{"jsonrpc":"2.0","id":4,"method":"ping"}]', (None, -32600)),  # a batch
        (b'"ping"', (None, -32600)),
        (b'{"jsonrpc":"2.0","id":4}', (4, -32600)),  # neither a request nor a response
        (b"{not json", (None, -32700)),
        (b'{"jsonrpc":"2.0","id":4,"method":"ping","params":{"x":NaN}}', (None, -32700)),
        (b'{"jsonrpc":"2.0","id":4,"method":"\xff\xfe"}', (4, -32601)),  # not UTF-8: replaced, unknown
        # An id holding a lone surrogate: answered with that very id (as an escape), not a repair.
        (b'{"jsonrpc":"2.0","id":"r\\ud800","method":"ping"}', ("r\ud800", -32600)),
        (b'{"jsonrpc":"2.0","id":"r\\ud800","params":' + b"[" * 99 + b"]" * 99 + b"}", ("r\ud800", -32600)),
    ],
)
def test_an_invalid_request_gets_the_standard_error_with_its_id_when_it_has_one(
    session: RawSession, line: bytes, expected: tuple[object, int]
) -> None:
    assert errors(session.exchange(line)) == [expected]


def test_lines_that_have_no_one_to_answer_are_dropped_and_said_on_stderr(
    module_home: Home, session: RawSession
) -> None:
    for line in (
        b"",
        b"   ",
        b'{"jsonrpc":"2.0","method":5}',  # a notification: no id to answer
        b'{"jsonrpc":"2.0","id":99,"result":"not an object"}',  # a response to nothing asked
    ):
        assert session.exchange(line) == []
    assert "a notification dropped" in (module_home.path / "mcp.stderr").read_text()


def test_a_line_over_the_size_limit_is_refused_without_being_read_whole(session: RawSession) -> None:
    line = b'{"jsonrpc":"2.0","id":5,"method":"ping","params":{"x":"' + b"a" * MAX_LINE_BYTES + b'"}}'
    [answer] = session.exchange(line)
    assert (answer["id"], answer["error"]["code"]) == (None, -32700)
    assert "over the 16,777,216 byte limit" in answer["error"]["message"]


def test_a_lone_surrogate_in_an_argument_is_repaired_and_the_call_served(session: RawSession) -> None:
    """JavaScript hosts send half of an emoji as a lone surrogate escape: the call goes through."""
    session.send(call("remember", {"content": "Deploy \ud83d day", "type": "fact"}))  # an escape
    stored = session.answer(7)
    assert stored["result"]["isError"] is False
    assert stored["result"]["_meta"]["mnemo/result"]["content"] == "Deploy \ufffd day"
    session.send(call("recall", {"query": "deploy \ud800 day"}, request_id="r-1"))
    found = session.answer("r-1")["result"]
    assert found["isError"] is False
    assert found["_meta"]["mnemo/result"]["memories"][0]["memory"]["content"] == "Deploy \ufffd day"


def test_an_argument_the_tool_does_not_have_is_a_tool_error_naming_it(session: RawSession) -> None:
    session.send(call("recall", {"query": "deploy day", "namspace": "person:tester"}))
    result = session.answer(7)["result"]
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert "namspace" in text and "Extra inputs are not permitted" in text


@pytest.mark.parametrize(
    "line",
    [
        b'\xef\xbb\xbf{"jsonrpc":"2.0","id":"bom","method":"ping"}',  # a byte-order mark first
        b'{"jsonrpc":"2.0",\r"id":"bom","method":"ping"}',  # a bare CR: JSON whitespace, not a line end
        b'{"jsonrpc":"2.0","id":"bom","method":"ping"}\r',  # a CR LF line end
    ],
)
def test_a_line_the_sdk_would_misread_is_passed_on_so_that_it_reads_it(
    session: RawSession, line: bytes
) -> None:
    session.send(line)
    assert session.answer("bom")["result"] == {}


def test_ids_that_look_like_the_relays_own_are_answered_like_any_other(session: RawSession) -> None:
    for request_id in ("mnemo-start-initialize", "mnemo-start-tools"):
        session.send(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "ping"}).encode())
        assert session.answer(request_id)["result"] == {}
        session.send(json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/list"}).encode())
        assert {t["name"] for t in session.answer(request_id)["result"]["tools"]} >= {"recall", "keep"}
