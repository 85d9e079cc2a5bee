"""JSON-RPC 2.0 envelopes as a host sends them to ``mnemo-mcp``: each line read, checked, and
either passed on to the MCP SDK or answered here with the standard error.

The SDK answers nothing to a line it cannot parse or validate (it logs nothing either), and some
lines made the relay itself stop reading; the host then waits for its own timeout. So every line
goes through :func:`read_message` first (:mod:`mnemo.jsonread`: bounded nesting, lone surrogates
repaired) and what reaches the SDK is an envelope it accepts:

- not JSON, or over :data:`MAX_LINE_BYTES` → ``-32700`` (parse error) with ``id: null``;
- nested deeper than 64 levels, a batch (a JSON array), not an object, no or a wrong
  ``jsonrpc``, a ``method`` that is not a string, an ``id`` that is neither a string nor an
  integer (``1.5``, ``true``, ``[7]``, ``null``) → ``-32600`` (invalid request), with the
  request's id when it has a usable one (a deep one's is read with the deep parts cut);
- an id holding a lone surrogate → ``-32600``, answered with that id (as JSON escapes): repaired,
  it would match no request of the host's;
- ``params`` that are not an object → ``-32602`` (invalid params);
- a notification or a response that is malformed has nobody to answer: it is dropped and said on
  stderr.

Standard library only, like the relay that calls it.
"""

from __future__ import annotations

import json
import re
from typing import Any

from mnemo.jsonread import JSONInputError, TooDeepError, read_json, repaired_json

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
MAX_LINE_BYTES = 16 * 1024 * 1024
# A \uD800–\uDFFF escape: the line may hold a lone surrogate, which the SDK's parser refuses.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class Incoming:
    """One line from the host, read: what to pass to the SDK (``message`` and its ``line``, the
    host's bytes or, when they needed repair, the message written again), what to answer the host
    (``answer``), and what to say on stderr (``problem``)."""

    __slots__ = ("answer", "line", "message", "problem")

    def __init__(
        self,
        message: dict[str, Any] | None = None,
        line: bytes = b"",
        answer: dict[str, Any] | None = None,
        problem: str = "",
    ) -> None:
        self.message, self.line, self.answer, self.problem = message, line, answer, problem


def error_answer(request_id: object, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def is_request_id(value: object) -> bool:
    """A usable JSON-RPC id: a string or an integer (not a boolean, a float or null)."""
    return isinstance(value, str) or type(value) is int


def too_long(size: int) -> Incoming:
    """The answer to a line over MAX_LINE_BYTES (the relay reads no further into it)."""
    text = f"Parse error: a message of {size:,}+ bytes is over the {MAX_LINE_BYTES:,} byte limit"
    return Incoming(answer=error_answer(None, PARSE_ERROR, text))


def read_message(line: bytes) -> Incoming:
    """``line`` (one message, its newline stripped or not) as the relay should treat it."""
    if not line.strip():
        return Incoming()
    try:
        text = line.decode("utf-8")
        # Passed on as the host wrote it, unless the SDK's parser would refuse what this one reads.
        is_clean = not text.startswith("\ufeff") and _SURROGATE_ESCAPE.search(text) is None
    except UnicodeDecodeError:
        text, is_clean = line.decode("utf-8", "replace"), False
    try:
        value = read_json(text)
    except TooDeepError as exc:
        return _too_deep(text, str(exc))
    except JSONInputError as exc:
        return Incoming(answer=error_answer(None, PARSE_ERROR, f"Parse error: {exc}"))
    if isinstance(value, list):
        return _invalid(None, "batches are not supported: send one message per line")
    if not isinstance(value, dict):
        return _invalid(None, "a message must be a JSON object")
    has_id = "id" in value
    request_id = value.get("id")
    reply_id = request_id if is_request_id(request_id) else None
    if not is_clean and isinstance(reply_id, str) and "\ufffd" in reply_id:
        reply_id = _sent_id(text)  # as the host wrote it: its answer must match the request
    is_request = "method" in value
    if not is_request and ("result" in value or "error" in value):
        return _response(value, line if is_clean else None)
    if not is_request:
        return _invalid(reply_id, "a message needs a method (a request) or a result or error (a response)")
    problem = _request_problem(value)
    if problem is not None:
        code, reason = problem
        if not has_id:
            return Incoming(problem=f"a notification dropped: {reason}")
        return Incoming(answer=error_answer(reply_id, code, reason))
    if has_id and reply_id is None:
        return _invalid(None, f"id must be a string or an integer, not {json.dumps(request_id)[:40]}")
    if reply_id != request_id:  # repaired, the SDK's answer would match no request of the host's
        return _invalid(reply_id, "id must be valid Unicode (it holds a lone surrogate)")
    return Incoming(value, line if is_clean else repaired_json(value).encode())


def _too_deep(text: str, reason: str) -> Incoming:
    """A message nested too deeply: refused, answered with its id (read from it with the deep
    parts cut) unless it is a notification or a response, which nobody waits on."""
    try:
        cut = read_json(text, cut_deeper=True, keep_surrogates=True)
    except JSONInputError:
        cut = None
    if not isinstance(cut, dict):
        return _invalid(None, reason)
    is_notification = "method" in cut and "id" not in cut
    is_response = "method" not in cut and ("result" in cut or "error" in cut)
    if is_notification or is_response:
        return Incoming(problem=f"a message dropped: {reason}")
    request_id = cut.get("id")
    return _invalid(request_id if is_request_id(request_id) else None, reason)


def _sent_id(text: str) -> object:
    """The id as the host wrote it, lone surrogates included (answered as JSON escapes)."""
    try:
        sent = read_json(text, keep_surrogates=True)
    except JSONInputError:
        return None
    return sent.get("id") if isinstance(sent, dict) else None


def _request_problem(value: dict[str, Any]) -> tuple[int, str] | None:
    if value.get("jsonrpc") != "2.0":
        return INVALID_REQUEST, 'Invalid request: jsonrpc must be "2.0"'
    if not isinstance(value["method"], str):
        return INVALID_REQUEST, "Invalid request: method must be a string"
    if value.get("params") is not None and not isinstance(value["params"], dict):
        return INVALID_PARAMS, "Invalid params: params must be an object"
    return None


def _response(value: dict[str, Any], clean_line: bytes | None) -> Incoming:
    """The host's answer to a request of the server's: passed on when the SDK can read it."""
    response_id, error = value.get("id"), value.get("error")
    if "result" in value:
        is_readable = is_request_id(response_id) and isinstance(value["result"], dict)
    else:
        is_readable = (
            (is_request_id(response_id) or response_id is None)
            and isinstance(error, dict)
            and type(error.get("code")) is int
            and isinstance(error.get("message"), str)
        )
    if value.get("jsonrpc") != "2.0" or not is_readable:
        return Incoming(problem="a malformed response dropped (it answers nothing the server asked)")
    return Incoming(value, clean_line if clean_line is not None else repaired_json(value).encode())


def _invalid(reply_id: object, text: str) -> Incoming:
    return Incoming(answer=error_answer(reply_id, INVALID_REQUEST, f"Invalid request: {text}"))
