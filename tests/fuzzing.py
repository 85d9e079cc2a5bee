"""What a clumsy or hostile host sends, as hypothesis strategies, and the two surfaces it is sent
to: ``mnemo-mcp``'s stdin (JSON-RPC lines: tool calls with arguments of every shape, broken
envelopes, deep nesting, bytes that are not UTF-8) and the daemon's ``/v1/hooks/<Event>`` (hook
inputs with fields of every type). Each send is judged: answered (a result or an error), a hang
(no answer within the bound), a crash (the process gone, or a 5xx for what the host sent).

Used by tests/test_fuzz.py (a bounded run in CI) and tools/evals/fuzz_surfaces.py (long runs).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import httpx2
import hypothesis.strategies as st

from mnemo.vocabulary import MemoryType
from tests.mcp_wire import NoAnswerError, RawSession

ANSWER_TIMEOUT_S = 30.0
TOOLS = ["recall", "remember", "forget", "keep", "recall_episode"]
HOOK_EVENTS = ["SessionStart", "UserPromptSubmit", "PostToolUse", "Stop", "PreCompact", "SessionEnd"]

SURROGATES = st.integers(0xD800, 0xDFFF).map(chr)
AWKWARD = st.sampled_from(["<", "</mnemo-memory>", "<mnemo-memory>", "\x00", "\n", "\r", "\\", '"', "\ufeff"])
TEXT = st.lists(st.one_of(st.characters(), SURROGATES, AWKWARD), max_size=40).map("".join)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    TEXT,
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(TEXT, inner, max_size=4)),
    max_leaves=20,
)
GOOD_NAMESPACES = st.sampled_from(["person:tester", "workspace:shop"])
NAMESPACES = st.one_of(
    GOOD_NAMESPACES, GOOD_NAMESPACES, st.sampled_from(["person:a\x00b", "team:x", ""]), TEXT
)
NUMBERS = st.one_of(st.integers(1, 50), st.integers(-5, 300), st.integers())
KINDS = st.sampled_from([*(t.value for t in MemoryType), "opinion"])
WORDS = st.sampled_from(["deploy", "Thursday", "gateway", "timeout", "¿qué día?", "Ana", "lb.tf", "600 s"])
PHRASE = st.lists(st.one_of(WORDS, WORDS, TEXT), min_size=1, max_size=6).map(" ".join)
ENTITY = st.fixed_dictionaries(
    {"name": PHRASE}, optional={"role": TEXT, "aliases": st.lists(TEXT, max_size=3)}
)
# Each tool's arguments of the right shape: (required, optional).
TOOL_FIELDS: dict[str, tuple[dict[str, st.SearchStrategy[Any]], dict[str, st.SearchStrategy[Any]]]] = {
    "recall": (
        {"query": PHRASE},
        {"namespace": NAMESPACES, "types": st.lists(KINDS, max_size=9), "include_history": st.booleans(),
         "limit": NUMBERS},
    ),
    "remember": (
        {"content": PHRASE, "type": KINDS},
        {"namespace": NAMESPACES, "entities": st.lists(ENTITY, max_size=3),
         **{w: TEXT for w in ("what", "who", "when", "where", "why", "how")}},
    ),
    "forget": ({"id": st.sampled_from(["mem_x", "mem_0123456789abcdef", "no id"]), "reason": PHRASE}, {}),
    "keep": (
        {"scope": st.sampled_from(["project", "user"] * 3 + ["team"]),
         "action": st.sampled_from(["add", "replace", "remove"] * 3 + ["merge"])},
        {"content": PHRASE, "old_text": PHRASE},
    ),
    "recall_episode": (
        {},
        {"id": TEXT, "session": PHRASE, "from_turn": NUMBERS, "to_turn": NUMBERS, "query": PHRASE,
         "namespace": NAMESPACES, "limit": NUMBERS},
    ),
}  # fmt: skip
METHODS = st.one_of(
    st.sampled_from(["tools/call", "tools/list", "ping", "initialize", "resources/list", "prompts/list"]),
    st.sampled_from(["notifications/initialized", "notifications/cancelled", "logging/setLevel"]),
    TEXT,
)
IDS = st.one_of(st.integers(-(2**63), 2**63), TEXT)
RELAY_LIKE_IDS = st.sampled_from(["mnemo-start-initialize", "mnemo-start-tools"])


def arguments(name: str) -> st.SearchStrategy[Any]:
    """A tool's arguments: of the right shape half the time (the daemon does the work), else with
    one field of any JSON, an argument the tool does not have, or not an object at all."""
    required, optional = TOOL_FIELDS.get(name, ({}, {}))
    shaped = st.fixed_dictionaries(required, optional=optional)
    names = st.sampled_from([*required, *optional, "x"])
    broken = st.tuples(shaped, names, JSON).map(lambda t: {**t[0], t[1]: t[2]})
    unknown = st.tuples(shaped, st.dictionaries(TEXT, JSON, min_size=1, max_size=2)).map(
        lambda t: {**t[1], **t[0]}
    )
    return st.one_of(shaped, shaped, shaped, broken, unknown, JSON)


def nested(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def _encoded(message: Any, as_ascii: bool) -> bytes:
    """As JSON text: lone surrogates as escapes (ASCII), or as raw bytes that are not UTF-8."""
    return json.dumps(message, ensure_ascii=as_ascii).encode("utf-8", "surrogatepass")


@st.composite
def mcp_lines(draw: st.DrawFn) -> bytes:
    """One line from the host."""
    kind = draw(
        st.sampled_from(["call", "call", "call", "call", "envelope", "deep", "bytes", "json", "quirk"])
    )
    as_ascii = draw(st.booleans())
    if kind == "call":
        name = draw(st.one_of(*[st.sampled_from(TOOLS)] * 3, TEXT))
        params = {"name": name, "arguments": draw(arguments(name))}
        return _encoded(
            {"jsonrpc": "2.0", "id": draw(IDS), "method": "tools/call", "params": params}, as_ascii
        )
    if kind == "envelope":
        parts = {"jsonrpc": st.one_of(st.just("2.0"), JSON), "id": st.one_of(IDS, JSON), "method": METHODS}
        parts |= {
            "params": st.one_of(st.dictionaries(TEXT, JSON, max_size=3), JSON),
            "result": JSON,
            "error": JSON,
        }
        return _encoded(draw(st.fixed_dictionaries({}, optional=parts)), as_ascii)
    if kind == "deep":
        head = json.dumps({"jsonrpc": "2.0", "id": draw(IDS), "method": "tools/call"})[:-1]
        return f'{head}, "params": {nested(draw(st.integers(30, 900)))}}}'.encode()
    if kind == "bytes":
        return draw(st.binary(max_size=300)).replace(b"\n", b" ")
    if kind == "quirk":  # what a parser other than the relay's could misread
        request = {"jsonrpc": "2.0", "id": draw(st.one_of(IDS, RELAY_LIKE_IDS)), "method": draw(METHODS)}
        line = _encoded(request, as_ascii)
        return draw(st.sampled_from([b"\xef\xbb\xbf" + line, line.replace(b", ", b",\r"), line + b"\r"]))
    return _encoded(draw(JSON), as_ascii)


class Outcome(Enum):
    ANSWERED = "answered"  # a result, or an error answered for the line
    SILENT = "silent"  # nothing to answer (a notification, a response, a blank line), the server alive
    HANG = "hang"
    CRASH = "crash"
    WRONG = "wrong"  # an answer where none is owed


def expected_answer(line: bytes) -> tuple[bool, object]:
    """(whether ``line`` must be answered, and with which id: None where it has none usable), by
    JSON-RPC's rules. (Nesting past the relay's bound changes the answer, not whether there is one;
    a line too deep for Python's parser is taken as unparseable: mcp_lines makes none.)"""
    try:
        text = line.decode("utf-8", "replace").removeprefix("\ufeff")
        message = json.loads(text, parse_constant=_refuse)
    except (ValueError, RecursionError):
        return bool(line.strip()), None
    if not isinstance(message, dict):
        return True, None
    request_id = message.get("id")
    usable = isinstance(request_id, str) or type(request_id) is int
    if "method" not in message:
        return not ("result" in message or "error" in message), request_id if usable else None
    if "id" not in message:
        return False, None
    return True, request_id if usable else None


def _refuse(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def drive_mcp(session: RawSession, line: bytes) -> tuple[Outcome, bool]:
    """Send ``line``; wait (bounded) for its answer and for the server to answer a ping after it.
    Returns the outcome and whether the answer was an error (JSON-RPC's, or a tool's)."""
    must, request_id = expected_answer(line)
    try:
        before = [m for m in session.exchange(line, ANSWER_TIMEOUT_S) if "result" in m or "error" in m]
        if not must:
            return (Outcome.WRONG if before else Outcome.SILENT), False
        answers = [m for m in before if m.get("id") == request_id]
        if not answers and request_id is not None:  # a tool call may be answered after the ping
            answers = [session.answer(request_id, ANSWER_TIMEOUT_S)]
    except NoAnswerError:
        return (Outcome.CRASH if session.process.poll() is not None else Outcome.HANG), False
    if not answers:
        return Outcome.HANG, False  # an error with id null was owed before the ping's answer
    result = answers[0].get("result")
    return Outcome.ANSWERED, "error" in answers[0] or (
        isinstance(result, dict) and bool(result.get("isError"))
    )


SESSIONS = st.one_of(*[st.sampled_from(["s-1", "s-2", "s-3"])] * 4, TEXT, JSON)
HOOK_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "cwd": st.one_of(st.sampled_from(["/srv/checkout", "/", "~nobody", "/srv/" + "x" * 5_000]), TEXT, JSON),
    "transcript_path": st.one_of(TEXT, JSON),
    "hook_event_name": st.one_of(st.sampled_from(HOOK_EVENTS), JSON),
    "permission_mode": st.one_of(st.sampled_from(["default", "plan", "acceptEdits"]), JSON),
    "prompt": st.one_of(TEXT, JSON),
    "tool_name": st.one_of(st.sampled_from(["Bash", "Read", "mcp__mnemo__recall"]), TEXT, JSON),
    "tool_input": JSON,
    "tool_response": JSON,
    "tool_use_id": st.one_of(TEXT, JSON),
    "last_assistant_message": st.one_of(TEXT, JSON),
    "source": st.one_of(st.sampled_from(["startup", "clear", "compact"]), JSON),
    "reason": st.one_of(TEXT, JSON),
}


@st.composite
def hook_inputs(draw: st.DrawFn) -> tuple[str, bytes]:
    """(event, the host's hook JSON as bytes)."""
    event = draw(st.one_of(st.sampled_from(HOOK_EVENTS), st.just("NoSuchEvent")))
    kind = draw(st.sampled_from(["fields", "fields", "fields", "deep", "json", "bytes"]))
    payload = draw(st.fixed_dictionaries({"session_id": SESSIONS}, optional=HOOK_FIELDS))
    if kind == "fields":
        return event, _encoded(payload, draw(st.booleans()))
    if kind == "deep":
        body = json.dumps({**payload, "tool_response": "DEEP"}, ensure_ascii=True)
        return event, body.replace('"DEEP"', nested(draw(st.integers(30, 3_000)))).encode()
    if kind == "json":
        return event, _encoded(draw(JSON), draw(st.booleans()))
    return event, draw(st.binary(max_size=300))


@dataclass
class Tally:
    """What a run did, by outcome."""

    calls: int = 0
    answered: int = 0
    errors: int = 0  # answered with an error (a JSON-RPC error, a tool error, a 4xx)
    silent: int = 0
    hangs: int = 0
    crashes: int = 0
    wrong: int = 0  # answered where nothing was owed
    foreign_stdout: int = 0
    examples: list[str] = field(default_factory=list)  # the first few inputs that failed, cut
    failed: list[tuple[bytes, str]] = field(default_factory=list)  # the first 50, whole, and why

    def count(self, outcome: Outcome, sent: bytes, is_error: bool = False, detail: str = "") -> None:
        self.calls += 1
        if outcome is Outcome.ANSWERED:
            self.answered += 1
            self.errors += is_error
        elif outcome is Outcome.SILENT:
            self.silent += 1
        else:
            self.hangs += outcome is Outcome.HANG
            self.crashes += outcome is Outcome.CRASH
            self.wrong += outcome is Outcome.WRONG
            if len(self.examples) < 5:
                said = f" → {detail}" if detail else ""
                self.examples.append(f"{outcome.value}: {sent[:300]!r}{said}")
            if len(self.failed) < 50:
                self.failed.append((sent, f"{outcome.value}: {detail}"))


def post_hook(http: httpx2.Client, event: str, body: bytes) -> tuple[Outcome, bool]:
    """POST a hook input to the daemon: answered (2xx with what a hook may print, or 4xx: the
    host's error), a crash (5xx, a 2xx with anything else, or no daemon), or a hang."""
    outcome, is_error, _ = post_hook_said(http, event, body)
    return outcome, is_error


def post_hook_said(http: httpx2.Client, event: str, body: bytes) -> tuple[Outcome, bool, str]:
    """:func:`post_hook`, with what the daemon answered when it failed (status and body, or the
    transport's error), for a failure's report."""
    try:
        response = http.post(f"/v1/hooks/{event}?client=claude-code", content=body, timeout=ANSWER_TIMEOUT_S)
    except httpx2.TimeoutException:
        return Outcome.HANG, False, f"no answer within {ANSWER_TIMEOUT_S:g} s"
    except httpx2.TransportError as exc:
        return Outcome.CRASH, False, f"{type(exc).__name__}: {exc}"
    said = f"HTTP {response.status_code}: {response.content[:300]!r}"
    if response.status_code >= 500:
        return Outcome.CRASH, False, said
    if response.status_code < 300 and response.content and not is_hook_output(response.content):
        return Outcome.CRASH, False, said
    return Outcome.ANSWERED, response.status_code >= 400, ""


def is_hook_output(printed: bytes) -> bool:
    """Whether ``printed`` is what a hook may print: a JSON object with hookSpecificOutput."""
    try:
        output = json.loads(printed)
    except ValueError:
        return False
    return isinstance(output, dict) and isinstance(output.get("hookSpecificOutput"), dict)
