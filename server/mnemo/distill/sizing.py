"""What one request to the writer's model may hold, and how long it may take: the model's context
and speed, and a text's size in its tokens.

The context is asked of the server once (``llm_context_tokens = "auto"``): llama.cpp's server
says the context it runs with (``/props``), vLLM its ``max_model_len`` (``/v1/models``), LM
Studio the loaded context (``/api/v0/models``), Ollama a model's ``num_ctx`` (``/api/ps``,
``/api/show``; 4,096 when the model sets none, Ollama's own default, which cuts a longer prompt
silently). A server that says nothing (a hosted API) is taken at :data:`DEFAULT_CONTEXT`, and a
number in ``llm_context_tokens`` is taken as it is, unasked.

Tokens are estimated from characters, three to a token for ASCII text (code, logs and JSON run
shorter than prose) and one for any other character, then corrected by what the server counts:
each answer's ``usage`` teaches the ratio for this model, so the estimate follows its tokenizer.
A request the server still refuses as too long teaches a larger ratio (:meth:`ModelLimits.overflowed`).

Speed is read off the answers: llama.cpp's server reports its prompt and generation timings; for
others, the call's time against the tokens it read and wrote scales a deliberately slow default
(a small model on two cores). A request is given ``llm_timeout_s`` or, when longer, twice the time
the measured speed needs for it at its largest reply: a slow model on a long stretch is not cut off
and asked again for ever; a server that hangs still is.
"""

from __future__ import annotations

import http.client
import json
import logging
import math
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger(__name__)
DEFAULT_CONTEXT = 8_192
OLLAMA_DEFAULT_CONTEXT = 4_096
PROBE_TIMEOUT_S = 3.0
# A small local model on two cores (Qwen2.5-Coder-1.5B Q4_K_M: about 56 and 7 tokens/s), until
# the server's answers say better.
SLOW_READ_TPS = 40.0
SLOW_WRITE_TPS = 5.0
TIMEOUT_CAP = 10  # a request is never given more than this many times llm_timeout_s
ASCII_CHARS_PER_TOKEN = 3.0
_LEARN = 0.3  # how far one answer moves the learned ratio and speeds


@dataclass(frozen=True, slots=True)
class Context:
    tokens: int
    source: str  # what said so: the server's endpoint, the setting, or the default


class ModelLimits:
    """One model's context and speed, and the estimates made from them. Thread-safe."""

    def __init__(self, context: Context, timeout_s: float) -> None:
        self.context = context
        self._timeout_s = timeout_s
        self._lock = threading.Lock()
        self._ratio = 1.0  # the server's tokens per estimated token, learned
        self._read_tps: float | None = None
        self._write_tps: float | None = None
        self._scale: float | None = None  # without timings: measured time / time at the slow default

    @property
    def context_tokens(self) -> int:
        return self.context.tokens

    def tokens(self, text: str) -> int:
        """``text``'s size in the model's tokens, estimated (rounded up, never under 1 a text)."""
        ascii_chars = sum(1 for c in text if c < "\x80")
        raw = ascii_chars / ASCII_CHARS_PER_TOKEN + (len(text) - ascii_chars)
        return max(1, math.ceil(raw * self._ratio))

    def reply_tokens(self, wanted: int) -> int:
        """The largest reply to ask for: ``wanted``, at most a quarter of the context."""
        return max(64, min(wanted, self.context.tokens // 4))

    def prompt_tokens(self, reply_tokens: int) -> int:
        """How many prompt tokens fit beside a reply of ``reply_tokens``, with a margin for the
        chat template and the estimate's error."""
        margin = max(128, self.context.tokens // 16)
        return max(0, self.context.tokens - reply_tokens - margin)

    def timeout_s(self, prompt_tokens: int, reply_tokens: int) -> float:
        """How long to wait for a request of this size: ``llm_timeout_s``, or twice what the
        measured speed needs for it, whichever is longer — never past ``TIMEOUT_CAP`` times
        ``llm_timeout_s``, so that a server that hangs is still cut off."""
        with self._lock:
            scale = self._scale or 1.0
            read = self._read_tps or SLOW_READ_TPS / scale
            write = self._write_tps or SLOW_WRITE_TPS / scale
        needed = prompt_tokens / read + reply_tokens / write
        return max(self._timeout_s, min(2 * needed, TIMEOUT_CAP * self._timeout_s))

    def speed(self) -> tuple[float, float] | None:
        """Measured tokens per second read and written, once an answer said (None before)."""
        with self._lock:
            if self._read_tps is not None and self._write_tps is not None:
                return self._read_tps, self._write_tps
            if self._scale is not None:
                return SLOW_READ_TPS / self._scale, SLOW_WRITE_TPS / self._scale
        return None

    def observe(
        self,
        estimated_tokens: int,
        prompt_tokens: int,
        completion_tokens: int,
        elapsed_s: float,
        timings: dict[str, Any] | None,
    ) -> None:
        """What one answer showed: the server's count of the prompt against the estimate, and
        the time it took (llama.cpp's ``timings`` when given)."""
        with self._lock:
            if estimated_tokens > 0 and prompt_tokens > 0:
                seen = prompt_tokens / (estimated_tokens / self._ratio)
                self._ratio = self._ratio + _LEARN * (seen - self._ratio)
            if timings:
                read = _rate(timings.get("prompt_n"), timings.get("prompt_ms"))
                write = _rate(timings.get("predicted_n"), timings.get("predicted_ms"))
                if read is not None and timings.get("prompt_n", 0) >= 64:  # a cached prompt says little
                    self._read_tps = _towards(self._read_tps, read)
                if write is not None and timings.get("predicted_n", 0) >= 16:
                    self._write_tps = _towards(self._write_tps, write)
                return
            at_default = prompt_tokens / SLOW_READ_TPS + completion_tokens / SLOW_WRITE_TPS
            if elapsed_s > 0 and at_default > 0.5:
                self._scale = _towards(self._scale, max(elapsed_s, 0.01) / at_default)

    def overflowed(self) -> None:
        """The server refused a request as longer than its context: estimate larger from now on."""
        with self._lock:
            self._ratio *= 1.25


def _towards(old: float | None, seen: float) -> float:
    """``seen``, the first time; then ``old`` moved a little towards it."""
    return seen if old is None else old + _LEARN * (seen - old)


def _rate(count: object, millis: object) -> float | None:
    if isinstance(count, int | float) and isinstance(millis, int | float) and count > 0 and millis > 0:
        return float(count) / (float(millis) / 1000)
    return None


UNREACHABLE = Context(0, "unreachable")


def probe_context(base_url: str, model: str, api_key: str = "") -> Context | None:
    """The context the server at ``base_url`` runs ``model`` with, as it says; None when it says
    nothing; :data:`UNREACHABLE` when nothing answers there (to be asked again later)."""
    root = base_url.rstrip("/").removesuffix("/v1")
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    asks = (
        ("GET", f"{root}/props", None, _llama_cpp),
        ("GET", f"{base_url.rstrip('/')}/models", None, _vllm),
        ("GET", f"{root}/api/v0/models/{model}", None, _lm_studio),
        ("GET", f"{root}/api/ps", None, _ollama_running),
        ("POST", f"{root}/api/show", {"model": model}, _ollama_model),
    )
    for method, url, body, read in asks:
        answer = _ask(method, url, body, headers)
        if answer is _UNREACHABLE:
            return UNREACHABLE
        if answer is None:
            continue
        try:
            found = read(answer, model)
        except (TypeError, ValueError, AttributeError):
            found = None
        if found:
            return Context(found, f"the server ({url.removeprefix(root)})")
    return None


_UNREACHABLE = object()


def _ask(method: str, url: str, body: object, headers: dict[str, str]) -> Any:
    """The JSON a server answers; None for an error answer or no JSON; _UNREACHABLE when no
    server answers at all."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=PROBE_TIMEOUT_S) as response:
            return json.loads(response.read(1 << 20))
    except urllib.error.HTTPError:
        return None  # a server answered: this endpoint is not its
    except (urllib.error.URLError, TimeoutError, ConnectionError):
        return _UNREACHABLE
    except (OSError, ValueError, http.client.HTTPException):  # a broken answer: not this endpoint's
        return None


def _positive(value: object) -> int | None:
    return (
        int(value) if isinstance(value, int | float) and not isinstance(value, bool) and value > 0 else None
    )


def _llama_cpp(answer: Any, model: str) -> int | None:
    settings = answer.get("default_generation_settings") or {}
    return _positive(settings.get("n_ctx")) or _positive(answer.get("n_ctx"))


def _vllm(answer: Any, model: str) -> int | None:
    entries = [e for e in answer.get("data") or [] if isinstance(e, dict)]
    entry = next((e for e in entries if e.get("id") == model), entries[0] if len(entries) == 1 else None)
    return None if entry is None else _positive(entry.get("max_model_len"))


def _lm_studio(answer: Any, model: str) -> int | None:
    return _positive(answer.get("loaded_context_length"))


def _ollama_running(answer: Any, model: str) -> int | None:
    for entry in answer.get("models") or []:
        if isinstance(entry, dict) and model in (entry.get("name"), entry.get("model")):
            return _positive(entry.get("context_length"))
    return None


def _ollama_model(answer: Any, model: str) -> int | None:
    if "model_info" not in answer and "parameters" not in answer:
        return None
    for line in str(answer.get("parameters") or "").splitlines():
        key, _, value = line.strip().partition(" ")
        if key == "num_ctx" and value.strip().isdigit():
            return int(value.strip())
    info = answer.get("model_info") or {}
    trained = [_positive(v) for k, v in info.items() if str(k).endswith(".context_length")]
    longest = max((t for t in trained if t), default=None)
    return OLLAMA_DEFAULT_CONTEXT if longest is None else min(longest, OLLAMA_DEFAULT_CONTEXT)
