"""Scripted model servers for the real hosts: Anthropic Messages (Claude Code) and OpenAI
Responses (Codex), streaming the server-sent events each CLI expects, over real HTTP on 127.0.0.1.

A test gives a ``reply(body) -> Block | list[Block]`` function: from the request body (the whole
conversation so far, tools offered, injected context) it decides the next assistant step — a text
answer, one tool call, or both in one message (a text, then the call). Every request body is kept
in ``requests``. Formats as observed with Claude Code 2.1.197 and Codex 0.171.0 (``HEAD /`` and
``count_tokens`` are answered too).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class ToolCall:
    name: str  # Claude: the full tool name; Codex: "namespace/name" for MCP tools, or a plain function
    arguments: dict[str, Any]
    id: str = "call_1"


Block = Text | ToolCall
Reply = Block | list[Block]


# Codex's config.toml for a scripted server at {url} (format with the server's url).
CODEX_CONFIG = """\
model = "gpt-5"
model_provider = "scripted"
# Codex (0.147+) gives an optional MCP server ~1 s to start, then runs the turn without its tools;
# mnemo-mcp takes about that long (importing the MCP SDK). 0: wait up to startup_timeout_sec.
mcp_optional_startup_grace_ms = 0

[model_providers.scripted]
name = "scripted"
base_url = "{url}/v1"
wire_api = "responses"
env_key = "SCRIPTED_API_KEY"
"""


@dataclass
class ScriptedServer:
    reply: Callable[[dict[str, Any]], Reply]
    requests: list[dict[str, Any]] = field(default_factory=list)
    url: str = ""

    def posted(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if "messages" in r or "input" in r]


def _sse(out: Any, event: str, data: dict[str, Any]) -> None:
    out.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
    out.flush()


def _anthropic_stream(out: Any, body: dict[str, Any], blocks: list[Block]) -> None:
    message_id = f"msg_{time.time_ns()}"
    message = {
        "id": message_id, "type": "message", "role": "assistant", "model": body.get("model"), "content": [],
        "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 1200, "output_tokens": 1},
    }  # fmt: skip
    _sse(out, "message_start", {"type": "message_start", "message": message})
    for index, block in enumerate(blocks):
        if isinstance(block, Text):
            start = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": block.text}
        else:
            start = {"type": "tool_use", "id": block.id, "name": block.name, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block.arguments)}
        started = {"type": "content_block_start", "index": index, "content_block": start}
        _sse(out, "content_block_start", started)
        _sse(out, "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
        _sse(out, "content_block_stop", {"type": "content_block_stop", "index": index})
    stop = "tool_use" if any(isinstance(b, ToolCall) for b in blocks) else "end_turn"
    delta_end = {"stop_reason": stop, "stop_sequence": None}
    _sse(out, "message_delta", {"type": "message_delta", "delta": delta_end, "usage": {"output_tokens": 20}})
    _sse(out, "message_stop", {"type": "message_stop"})


def _responses_item(index: int, block: Block) -> dict[str, Any]:
    if isinstance(block, Text):
        return {"type": "message", "id": f"msg_{index}", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": block.text, "annotations": []}]}  # fmt: skip
    namespace, _, name = block.name.rpartition("/")
    item = {"type": "function_call", "id": f"fc_{block.id}", "call_id": block.id, "name": name,
            "arguments": json.dumps(block.arguments), "status": "completed"}  # fmt: skip
    if namespace:
        item["namespace"] = namespace
    return item


def _responses_stream(out: Any, body: dict[str, Any], blocks: list[Block]) -> None:
    response_id = f"resp_{time.time_ns()}"
    items = [_responses_item(index, block) for index, block in enumerate(blocks)]
    created = {"id": response_id, "status": "in_progress", "output": []}
    _sse(out, "response.created", {"type": "response.created", "response": created})
    for index, item in enumerate(items):
        done = {"type": "response.output_item.done", "output_index": index, "item": item}
        _sse(out, "response.output_item.done", done)
    usage = {"input_tokens": 1500, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 20,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 1520}  # fmt: skip
    _sse(out, "response.completed", {"type": "response.completed", "response": {
        "id": response_id, "status": "completed", "output": items, "usage": usage}})  # fmt: skip


@contextmanager
def running(server: ScriptedServer) -> Iterator[ScriptedServer]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def _json(self, status: int, payload: object) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_HEAD(self) -> None:
            self.send_response(200)
            self.send_header("content-length", "0")
            self.end_headers()

        def do_GET(self) -> None:
            self._json(200, {"object": "list", "data": [], "models": []} if "models" in self.path else {})

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            body = json.loads(raw or b"{}")
            if "count_tokens" in self.path:
                self._json(200, {"input_tokens": 1200})
                return
            server.requests.append(body)
            try:
                reply = server.reply(body)
                blocks = reply if isinstance(reply, list) else [reply]
            except Exception as exc:  # a script error must show in the test, not hang the host
                self._json(
                    400, {"type": "error", "error": {"type": "invalid_request_error", "message": repr(exc)}}
                )
                return
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("connection", "close")
            self.end_headers()
            if "/responses" in self.path:
                _responses_stream(self.wfile, body, blocks)
            else:
                _anthropic_stream(self.wfile, body, blocks)
            self.close_connection = True

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


def tool_results(body: dict[str, Any]) -> list[str]:
    """The tool results the conversation holds so far (either API), as text."""
    found = []
    for message in body.get("messages", []):
        content = message.get("content")
        for part in content if isinstance(content, list) else []:
            if isinstance(part, dict) and part.get("type") == "tool_result":
                inner = part.get("content")
                found.append(inner if isinstance(inner, str) else json.dumps(inner))
    for item in body.get("input", []):
        if isinstance(item, dict) and item.get("type") in ("function_call_output", "custom_tool_call_output"):
            output = item.get("output")
            found.append(output if isinstance(output, str) else json.dumps(output))
    return found
