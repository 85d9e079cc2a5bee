"""An OpenAI-compatible chat-completions server with scripted answers, for the writer's tests.

It speaks the wire format the real ``openai`` client expects (``POST /v1/chat/completions``,
``usage``, ``logprobs.content[].top_logprobs``) over real HTTP on 127.0.0.1, from a thread of the
test process, so the daemon (another process) reaches it as it would any endpoint.

A test scripts it with rules, first match wins::

    server.answer(contains="same memory", choices={"A": 0.8, "B": 0.2})   # a closed question
    server.answer(contains="Extract", text='{"memories": []}')          # free text (JSON)
    server.fail_next(2, status=500)                                     # the next two calls fail

A request no rule matches gets a 400 naming the request, so a missing rule fails loudly. Every
request body is kept in ``server.requests``.

It stands in for the servers that do not run here where the writer asks a server what context it
runs (``server.serve_json("/props", {...})``, with the shape llama.cpp's, vLLM's or Ollama's
server gives, as their documentation and sources show it), and for a model whose context is
small: with ``context_tokens`` set, a request longer than that (at the 4 characters a token its
usage reports) is refused as llama.cpp's server refuses it. It cannot show that a real server of
each kind answers so today: only llama.cpp's runs here (tests/e2e/test_distill_real_model.py).
"""

from __future__ import annotations

import asyncio
import math
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route


@dataclass
class Rule:
    matches: Callable[[str], bool]
    text: str | Callable[[str], str] | None = None  # a function of the prompt: an answer that quotes it
    choices: dict[str, float] | None = None  # token → probability (the first is the one sampled)
    times: int | None = None  # None: every time


@dataclass
class LLMServer:
    rules: list[Rule] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    supports_logprobs: bool = True
    delay_s: float = 0.0
    # Called with each request's body before it is answered: a test's way to make the world move
    # (time passes, another daemon acts) while the model is being asked.
    on_request: Callable[[dict[str, Any]], None] | None = None
    context_tokens: int = 0  # > 0: a longer request is refused as llama.cpp's server refuses it
    _failures: list[int] = field(default_factory=list)
    _json: dict[tuple[str, str], Any] = field(default_factory=dict)
    url: str = ""

    def answer(
        self,
        *,
        contains: str | Callable[[str], bool],
        text: str | Callable[[str], str] | None = None,
        choices: dict[str, float] | None = None,
        times: int | None = None,
    ) -> None:
        """Reply to requests whose messages contain ``contains`` (or satisfy it, if callable)."""
        if (text is None) == (choices is None):
            raise ValueError("give exactly one of text or choices")
        matches = contains if callable(contains) else (lambda prompt, needle=contains: needle in prompt)
        self.rules.append(Rule(matches, text, choices, times))

    def fail_next(self, count: int, status: int = 500) -> None:
        self._failures.extend([status] * count)

    def serve_json(self, path: str, body: Any, method: str = "GET") -> None:
        """Answer ``method path`` (relative to the server's root, e.g. ``/props``) with ``body``."""
        self._json[(method, path)] = body

    async def _other(self, request: Request) -> Response:
        found = self._json.get((request.method, request.url.path))
        if found is None:
            return JSONResponse({"error": "not found"}, 404)
        return JSONResponse(found)

    def prompts(self) -> list[str]:
        """Each request's messages joined, in arrival order."""
        return [_prompt(body) for body in self.requests]

    async def _chat(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(body)
        if self.on_request is not None:
            self.on_request(body)
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self._failures:
            status = self._failures.pop(0)
            return JSONResponse({"error": {"message": "scripted failure", "type": "server_error"}}, status)
        prompt = _prompt(body)
        if self.context_tokens and len(prompt) // 4 > self.context_tokens:
            error = {
                "code": 400,
                "message": f"request ({len(prompt) // 4} tokens) exceeds the available context size "
                f"({self.context_tokens} tokens), try increasing it",
                "type": "exceed_context_size_error",
                "n_prompt_tokens": len(prompt) // 4,
                "n_ctx": self.context_tokens,
            }
            return JSONResponse({"error": error}, 400)
        for rule in self.rules:
            if rule.matches(prompt):
                if rule.times is not None:
                    rule.times -= 1
                    if rule.times == 0:
                        self.rules.remove(rule)
                return JSONResponse(self._completion(body, prompt, rule))
        return JSONResponse(
            {
                "error": {
                    "message": f"no scripted answer for: {prompt[:300]!r}",
                    "type": "invalid_request_error",
                }
            },
            400,
        )

    def _completion(self, body: dict[str, Any], prompt: str, rule: Rule) -> dict[str, Any]:
        if rule.choices is not None:
            token = next(iter(rule.choices))
            content = token
        else:
            assert rule.text is not None
            content = rule.text(prompt) if callable(rule.text) else rule.text
        max_tokens = body.get("max_completion_tokens") or body.get("max_tokens")
        words = content.split(" ")
        if max_tokens is not None and len(words) > max_tokens:
            content = " ".join(words[:max_tokens])
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": "stop",
            "logprobs": None,
        }
        if body.get("logprobs") and self.supports_logprobs and rule.choices is not None:
            top = [
                {"token": t, "logprob": math.log(p), "bytes": list(t.encode())}
                for t, p in sorted(rule.choices.items(), key=lambda kv: -kv[1])
            ][: int(body.get("top_logprobs") or 1)]
            first = {
                "token": content,
                "logprob": math.log(rule.choices[content]),
                "bytes": list(content.encode()),
            }
            choice["logprobs"] = {"content": [{**first, "top_logprobs": top}]}
        prompt_tokens = max(1, len(prompt) // 4)
        completion_tokens = max(1, len(content) // 4)
        return {
            "id": f"chatcmpl-{len(self.requests)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "scripted"),
            "choices": [choice],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }


def _prompt(body: dict[str, Any]) -> str:
    return "\n".join(str(m.get("content", "")) for m in body.get("messages", []))


@contextmanager
def running_llm_server() -> Iterator[LLMServer]:
    """Serve a fresh scripted server on 127.0.0.1 (a free port) for the ``with`` block."""
    server = LLMServer()
    app = Starlette(
        routes=[
            Route("/v1/chat/completions", server._chat, methods=["POST"]),
            Route("/{path:path}", server._other, methods=["GET", "POST"]),
        ]
    )
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    # A request held by delay_s (a model that never answers) is cut off at the end, not waited for.
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, lifespan="off", timeout_graceful_shutdown=1
    )
    runner = uvicorn.Server(config)
    thread = threading.Thread(target=runner.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not runner.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the scripted LLM server did not start")
        time.sleep(0.01)
    server.url = f"http://127.0.0.1:{port}/v1"
    try:
        yield server
    finally:
        runner.should_exit = True
        thread.join(timeout=10)
        sock.close()
