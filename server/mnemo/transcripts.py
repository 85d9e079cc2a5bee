"""The hosts' own transcripts, read into turns: Claude Code JSONL and Codex rollouts.

Used by ``mnemo import --from claude-code|codex`` (backfill) and by ``mnemo stats`` (how many
tokens the sessions read). A turn is what the hooks see live: the person's prompt, the tool
results, the final answer; turns are numbered from 1 in prompt order, so imported episodes get the
same ids as the hooks give them (:func:`episode_id`) and a backfill over a session the hooks
already recorded stores nothing twice.

Claude Code (``~/.claude/projects/<project>/<session>.jsonl``): one JSON object per line;
``type`` "user" lines are prompts (string content, or text blocks) or tool results
(``tool_result`` blocks); ``type`` "assistant" lines carry one content block each (text or
``tool_use``) and the API call's ``usage`` (repeated on each block of one message: counted once
per ``message.id``). Meta lines (``isMeta``), sidechains (sub-agents), compaction summaries and
``<task-notification>`` prompts are not the person's prompts; a prompt is what the person typed of
it (:mod:`mnemo.typed`: IDE context and expanded templates dropped), and a shell command the person
ran with ``!`` is a tool's run of the turn. An API error in place of an answer is kept as the
turn's answer, so that the writer knows the turn failed.

Codex (``~/.codex/sessions/YYYY/MM/DD/rollout-….jsonl``): ``session_meta`` (id, cwd), then
``response_item`` lines (``message`` with role user/assistant, ``function_call`` — MCP tools with
their ``namespace`` — and ``function_call_output``) and ``event_msg`` lines. Prompts are the
person's messages as events (``item_completed`` of a ``UserMessage`` in 0.171, ``user_message``
before): the user ``message`` items also hold injected context (instructions, environment).
Answers are the assistant messages; tokens read the last cumulative ``token_count``. Rollouts of
2025's first releases have no envelope: a first line ``{id, timestamp, instructions}``, then the
items themselves, the person's prompts being the user messages that are not the host's own.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from mnemo.clock import as_stored
from mnemo.jsonread import read_json
from mnemo.typed import is_host_message, is_template, shell_run, typed

TASK_NOTIFICATION = "<task-notification>"
_ID_UNSAFE = re.compile(r"[^A-Za-z0-9._:\-/]")
_SESSION_META = re.compile(rb'"type"\s*:\s*"session_meta"')
_FIRST_LINE_BYTES = 4_000_000


@dataclass
class ToolResult:
    key: str  # the tool call's id
    name: str
    input: Any
    output: str
    time: datetime | None


@dataclass
class Turn:
    number: int
    prompt: str
    time: datetime | None
    tools: list[ToolResult] = field(default_factory=list)
    answer: str = ""
    answer_time: datetime | None = None


@dataclass
class Transcript:
    client: str
    session: str
    cwd: str
    path: Path
    turns: list[Turn] = field(default_factory=list)
    tokens_read: int = 0  # input tokens over the session's model calls, cached ones included


def episode_id(client: str, session: str, turn: int, part: str) -> str:
    """The id the hooks and the importers give a turn's episode (part: prompt, answer, tool:<id>)."""
    text = f"{client}:{session}:{turn}:{part}"
    cleaned = _ID_UNSAFE.sub("-", text)
    if len(cleaned) <= 200 and cleaned[0].isalnum():
        return cleaned
    return "h" + hashlib.sha256(text.encode()).hexdigest()


# User lines of a Claude Code transcript that no UserPromptSubmit hook saw: an interruption,
# local commands' output, background-task notices.
_NOT_PROMPTS = (
    TASK_NOTIFICATION,
    "[Request interrupted by user",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<local-command-caveat>",
)
PERSON_SHELL = "shell (run by the person)"  # a tool result's name for a command run with !


def is_person_prompt(text: str) -> bool:
    """Whether a user line is a prompt of the person's (what the hooks count as a turn): neither
    the host's own message nor a shell command's run, with words of the person's in it — or a
    command's template they ran, with or without words (its turn has no prompt episode then)."""
    stripped = text.lstrip()
    if not stripped or stripped.startswith(_NOT_PROMPTS) or is_host_message(stripped):
        return False
    return shell_run(stripped) is None and (bool(typed(stripped)) or is_template(stripped))


def is_mnemo_tool(name: str) -> bool:
    """mnemo's own MCP tools: their output is memory already, and is not recorded (it would feed
    distillation its own output)."""
    parts = name.split("__")
    return len(parts) >= 3 and parts[0] == "mcp" and "mnemo" in parts[1]


def tool_text(name: str, tool_input: object, output: object) -> str:
    """A tool result as an episode's text: the call, then what it returned."""
    return f"{name} {_compact(tool_input)}\n{output_text(output)}"


def output_text(value: object) -> str:
    """A tool's output as text, whatever shape the host gave it."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):  # Bash: {"stdout": …, "stderr": …}; MCP in Codex: {"content": [...]}
        parts = [str(value[k]) for k in ("stdout", "stderr", "output", "result") if value.get(k)]
        if parts:
            return "\n".join(parts)
        if isinstance(value.get("content"), list | str):
            return output_text(value["content"])
    if isinstance(value, list):  # content blocks
        texts = [str(b.get("text")) for b in value if isinstance(b, dict) and b.get("text")]
        if texts:
            return "\n".join(texts)
    return json.dumps(value, ensure_ascii=False, default=str)


def _compact(value: object, limit: int = 600) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def default_root(client: str) -> Path:
    return Path.home() / (".claude/projects" if client == "claude-code" else ".codex/sessions")


def find(client: str, path: Path) -> list[Path]:
    """The transcript files at ``path`` (a file, or a directory searched recursively), oldest first.
    Codex's are told by their first line, not their name: an export may have renamed them."""
    if path.is_file():
        return [path]
    found = [p for p in path.rglob("*.jsonl") if client == "claude-code" or is_codex_rollout(p)]
    return sorted(found, key=lambda p: (p.stat().st_mtime, str(p)))


def is_codex_rollout(path: Path) -> bool:
    """Whether a file starts as a Codex rollout: a ``session_meta`` line, or 2025's first shape
    (``{id, timestamp, instructions}``)."""
    try:
        with path.open("rb") as f:
            first = f.readline(_FIRST_LINE_BYTES)
    except OSError:
        return False
    if first.startswith(b"{") and _SESSION_META.search(first[:300]):  # the line may be long: its head tells
        return True
    try:
        item = read_json(first, cut_deeper=True)
    except ValueError:
        return False
    return isinstance(item, dict) and {"id", "timestamp", "instructions"} <= item.keys()


def read(client: str, path: Path) -> Transcript:
    return read_claude_code(path) if client == "claude-code" else read_codex(path)


def _lines(path: Path) -> Iterator[dict[str, Any]]:
    with path.open("rb") as f:
        for line in f:
            if not line.strip():
                continue
            try:  # as a host's JSON is read: lone surrogates repaired, what nests too deeply cut
                item = read_json(line, cut_deeper=True)
            except ValueError:
                continue  # a line cut short by a crash: the rest is still good
            if isinstance(item, dict):
                yield item


def _time(value: object) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return as_stored(datetime.fromisoformat(value.replace("Z", "+00:00")))
    except ValueError:
        return None


def _texts(content: object, kinds: tuple[str, ...] = ("text",)) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text") or "") for b in content if isinstance(b, dict) and b.get("type") in kinds
        ).strip()
    return ""


def read_claude_code(path: Path) -> Transcript:
    transcript = Transcript("claude-code", path.stem, "", path)
    turn: Turn | None = None
    shell_runs: list[ToolResult] = []  # the person's ! commands before the first prompt
    tool_calls: dict[str, tuple[str, Any]] = {}
    counted: set[str] = set()
    for item in _lines(path):
        kind = item.get("type")
        if item.get("sessionId"):
            transcript.session = str(item["sessionId"])
        if item.get("cwd") and not transcript.cwd:
            transcript.cwd = str(item["cwd"])
        if kind not in ("user", "assistant") or item.get("isSidechain"):
            continue
        message = item.get("message") or {}
        content = message.get("content")
        when = _time(item.get("timestamp"))
        if kind == "assistant":
            usage = message.get("usage") or {}
            message_id = str(message.get("id") or item.get("uuid") or "")
            if usage and message_id not in counted:
                counted.add(message_id)
                transcript.tokens_read += sum(
                    int(usage.get(k) or 0)
                    for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
                )
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    tool_calls[str(block.get("id"))] = (str(block.get("name") or "tool"), block.get("input"))
            text = _texts(content)
            if text and turn is not None and (not item.get("isApiErrorMessage") or not turn.answer):
                # The last text of the turn is its answer; a failure ("API Error: 529 …") only
                # where nothing answered, so that the writer knows the turn failed.
                turn.answer, turn.answer_time = text, when
            continue
        blocks = content if isinstance(content, list) else []
        results = [b for b in blocks if isinstance(b, dict) and b.get("type") == "tool_result"]
        if results:
            for block in results:
                if turn is None:
                    continue
                key = str(block.get("tool_use_id") or "")
                name, tool_input = tool_calls.get(key, ("tool", None))
                turn.tools.append(ToolResult(key, name, tool_input, output_text(block.get("content")), when))
            continue
        if item.get("isMeta") or item.get("isCompactSummary"):
            continue
        prompt = _texts(content)
        run = shell_run(prompt)
        if run is not None:
            _add_shell_run(turn, shell_runs, run, str(item.get("uuid") or len(shell_runs)), when)
            continue
        if not is_person_prompt(prompt):
            continue
        turn = Turn(len(transcript.turns) + 1, typed(prompt), when)
        turn.tools, shell_runs = shell_runs, []  # commands the person ran before this prompt
        transcript.turns.append(turn)
    if turn is None and shell_runs:
        transcript.turns.append(Turn(1, "", shell_runs[0].time, shell_runs))
    return transcript


def _add_shell_run(
    turn: Turn | None, waiting: list[ToolResult], run: tuple[str, str], key: str, when: datetime | None
) -> None:
    """A ``!`` command the person ran: a tool result of the turn under way, or, before the first
    prompt, of the turn that prompt starts; its output joins the command it follows."""
    command, output = run
    results = turn.tools if turn is not None and not waiting else waiting
    last = results[-1] if results else None
    if command or last is None or last.name != PERSON_SHELL or last.output:
        results.append(ToolResult(f"shell-{key}", PERSON_SHELL, command, output, when))
    else:
        last.output = output


def read_codex(path: Path) -> Transcript:
    transcript = Transcript("codex", path.stem, "", path)
    turn: Turn | None = None
    calls: dict[str, tuple[str, Any]] = {}
    started: datetime | None = None  # a rollout without an envelope stamps only its first line
    for item in _lines(path):
        kind, payload = item.get("type"), item.get("payload") or {}
        when = _time(item.get("timestamp")) or started
        if not isinstance(payload, dict):
            continue
        if kind == "session_meta":
            transcript.session = str(payload.get("id") or transcript.session)
            transcript.cwd = str(payload.get("cwd") or "")
        elif kind is None and "instructions" in item and item.get("id"):  # the envelope-less first line
            transcript.session, started = str(item["id"]), when
        elif kind == "event_msg":
            event = payload.get("type")
            prompt = None
            if event == "user_message":  # Codex before 0.1xx
                prompt = str(payload.get("message") or "")
            elif event == "item_completed" and (payload.get("item") or {}).get("type") == "UserMessage":
                prompt = _texts(payload["item"].get("content"))
            if prompt is not None and is_person_prompt(prompt):
                said = typed(prompt)
                if turn is None or turn.prompt != said or turn.answer or turn.tools:  # one event per prompt
                    turn = Turn(len(transcript.turns) + 1, said, when)
                    transcript.turns.append(turn)
            elif event == "token_count":
                total = (payload.get("info") or {}).get("total_token_usage") or {}
                if total.get("input_tokens") is not None:
                    transcript.tokens_read = int(total["input_tokens"])
        elif kind == "response_item" and turn is not None:
            _codex_item(turn, calls, payload, when)
        elif kind in _ITEMS and started is not None:  # an item of an envelope-less rollout
            if kind == "message" and item.get("role") == "user":
                text = _texts(item.get("content"), ("input_text", "text"))
                if not transcript.cwd and (cwd := _CWD.search(text)):
                    transcript.cwd = cwd.group(1).strip()
                if is_person_prompt(text):
                    turn = Turn(len(transcript.turns) + 1, typed(text), when)
                    transcript.turns.append(turn)
            elif turn is not None:
                _codex_item(turn, calls, item, when)
    return transcript


_ITEMS = ("message", "function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output",
          "local_shell_call", "reasoning")  # fmt: skip
_CWD = re.compile(r"<cwd>(.*?)</cwd>", re.DOTALL)


def _codex_item(
    turn: Turn, calls: dict[str, tuple[str, Any]], payload: dict[str, Any], when: datetime | None
) -> None:
    """A response item of a Codex turn: the assistant's answer, a tool call or its output."""
    item_type = payload.get("type")
    if item_type == "message" and payload.get("role") == "assistant":
        text = _texts(payload.get("content"), ("output_text", "text"))
        if text:
            turn.answer, turn.answer_time = text, when
    elif item_type in ("function_call", "custom_tool_call", "local_shell_call"):
        arguments = payload.get("arguments", payload.get("input", payload.get("action")))
        name = str(payload.get("name") or item_type)
        if payload.get("namespace"):  # an MCP tool: mcp__<server>, as hooks name it
            name = f"{payload['namespace']}__{name}"
        if isinstance(arguments, str):
            with contextlib.suppress(ValueError):  # not JSON: kept as the text it is
                arguments = read_json(arguments, cut_deeper=True)
        calls[str(payload.get("call_id") or "")] = (name, arguments)
    elif item_type in ("function_call_output", "custom_tool_call_output"):
        key = str(payload.get("call_id") or "")
        name, arguments = calls.get(key, ("tool", None))
        output = payload.get("output")
        if isinstance(output, dict):
            output = output.get("content", output)
        turn.tools.append(ToolResult(key, name, arguments, output_text(output), when))
