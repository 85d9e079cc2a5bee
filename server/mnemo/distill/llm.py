"""The one door to a language model: any OpenAI-compatible chat-completions endpoint.

This is the only module that imports ``openai``, and only once a model is configured: the SDK is
hundreds of modules, whose time and memory a daemon that runs no writer is spared
(docs/benchmarks/recall.md, "Memory at a million"). Every call is checked against the daily token cap
first and metered after (:mod:`mnemo.distill.meter`); the client's own bounded retries cover
timeouts, dropped connections and 408/409/429/5xx answers (``llm_max_retries``, exponential
back-off); what still fails is a :class:`~mnemo.errors.ModelError` whose message names the
endpoint (never the key) and what went wrong — a request the endpoint refused as it is (HTTP 400,
413, 422) a :class:`~mnemo.errors.ModelRefusedError`, one that got no answer in time a
:class:`~mnemo.errors.ModelTimeoutError`. Each request is given the time its size needs at the
model's measured speed, and the model's context is asked of the server
(:mod:`mnemo.distill.sizing`). Every message's credentials are redacted on its
way out (:func:`mnemo.secrets.redact`), whatever built it: episodes are redacted when stored,
but a memory or an episode stored before a detector learned a new format is not. Private spans
are not looked for here: what the model reads was stored without them, and a stray tag in a
file's text would hide the question after it.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from mnemo.config import Settings
from mnemo.config_sources import redact_dsn
from mnemo.distill.sizing import DEFAULT_CONTEXT, UNREACHABLE, Context, ModelLimits, probe_context
from mnemo.errors import ConfigError, ModelError, ModelRefusedError, ModelTimeoutError, StoppedError
from mnemo.secrets import redact

if TYPE_CHECKING:
    import openai

logger = logging.getLogger(__name__)
T = TypeVar("T")
# OpenAI's limit on alternatives per token; llama.cpp and vLLM accept as many.
MAX_TOP_LOGPROBS = 20
# How servers say a request passed the model's context: llama.cpp ("exceeds the available
# context size"), vLLM and OpenAI ("maximum context length", context_length_exceeded), others.
_OVERFLOW = re.compile(
    r"context (?:size|length|window)|maximum context|context_length_exceeded|exceed_context|"
    r"prompt is too long|too many tokens|input is too large|n_ctx",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Message:
    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True, slots=True)
class Reply:
    text: str
    # The first generated token's alternatives (token, log-probability), when asked for and the
    # endpoint gives them; None otherwise.
    top_logprobs: list[tuple[str, float]] | None
    prompt_tokens: int
    completion_tokens: int


class Meter(Protocol):
    """What each call is checked against first and counted by after: the writer's
    :class:`mnemo.distill.meter.TokenMeter` (the daily caps, usage kept in the store), or a run's
    own count that needs no store (:class:`mnemo.distill.calibrate.CountingMeter`)."""

    def check(self) -> None: ...

    def record(self, model: str, purpose: str, prompt_tokens: int, completion_tokens: int) -> None: ...


class ChatModel(Protocol):
    """What the writer asks of its model: this module's :class:`LLM`, or a host's CLI
    (:class:`mnemo.distill.hostcli.HostLLM`), chosen by :func:`mnemo.distill.backends.open_model`."""

    model: str
    endpoint: str
    gives_logprobs: bool  # False: never any (the judge then asks with a schema)

    @property
    def limits(self) -> ModelLimits:
        """The model's context and speed, which requests are sized to."""
        ...

    def chat(
        self,
        messages: Sequence[Message],
        *,
        purpose: str,
        max_tokens: int,
        top_logprobs: int = 0,
        schema: dict[str, Any] | None = None,
    ) -> Reply: ...

    def close(self) -> None: ...


class LLM:
    """A configured endpoint and model. Thread-safe (the ``openai`` client is)."""

    def __init__(self, settings: Settings, meter: Meter) -> None:
        if not settings.llm_url:
            raise ConfigError("no language model is configured (settings llm_url and llm_model)")
        if not settings.llm_model:
            raise ConfigError(f"llm_url is set to {redact_dsn(settings.llm_url)} but llm_model is empty")
        self.model = settings.llm_model
        self.endpoint = redact_dsn(settings.llm_url)
        self._timeout_s = settings.llm_timeout_s
        self._retries = settings.llm_max_retries
        self._meter = meter
        # Until a reply asked for log-probabilities comes without them (Anthropic's API behind a
        # compatible proxy, some hosted APIs): then the judge asks at once, with a schema.
        self.gives_logprobs = True
        # Whether the endpoint takes a JSON schema in response_format (llama.cpp's server, OpenAI,
        # vLLM and Ollama do): unknown until the first call that asks for one.
        self._takes_schema: bool | None = None
        self._stopped = threading.Event()
        self._url, self._key = settings.llm_url, settings.llm_api_key.get_secret_value()
        self._limits: ModelLimits | None = None
        if settings.llm_context_tokens != "auto":
            context = Context(settings.llm_context_tokens, "llm_context_tokens")
            self._limits = ModelLimits(context, settings.llm_timeout_s)
        self._limits_lock = threading.Lock()
        import openai  # noqa: PLC0415 - only once a model is configured (the docstring)

        self._client = openai.OpenAI(
            base_url=settings.llm_url,
            # Local servers (Ollama, llama.cpp) take no key, but the client insists on one.
            api_key=settings.llm_api_key.get_secret_value() or "none",
            timeout=settings.llm_timeout_s,
            max_retries=settings.llm_max_retries,
        )

    @property
    def limits(self) -> ModelLimits:
        """The model's context (asked of the server at the first need, unless the setting gives
        it; asked again while the server cannot be reached) and speed."""
        with self._limits_lock:
            if self._limits is None:
                found = probe_context(self._url, self.model, self._key)
                if found is None:
                    found = Context(DEFAULT_CONTEXT, "the default (the server does not say)")
                elif found is UNREACHABLE:  # the default for now, asked again next time
                    return ModelLimits(Context(DEFAULT_CONTEXT, "the default"), self._timeout_s)
                logger.info(
                    "the model at %s: a context of %d tokens, from %s",
                    self.endpoint,
                    found.tokens,
                    found.source,
                )
                self._limits = ModelLimits(found, self._timeout_s)
            return self._limits

    def close(self) -> None:
        """Stop: a call under way returns at once with StoppedError (the request itself is left
        to its thread, which ends with the process), and no call starts after."""
        self._stopped.set()
        self._client.close()

    def chat(
        self,
        messages: Sequence[Message],
        *,
        purpose: str,
        max_tokens: int,
        top_logprobs: int = 0,
        schema: dict[str, Any] | None = None,
    ) -> Reply:
        """One completion at temperature 0; ``top_logprobs`` > 0 asks for the first token's
        alternatives; ``schema`` (a JSON schema) asks the endpoint to constrain the answer to it,
        where it can — an endpoint that refuses the request with it is asked again without, and
        not asked with one again (the caller validates the answer either way).
        Raises TokenCapError when today's cap is spent, ModelError on failure."""
        import openai  # noqa: PLC0415

        self._meter.check()
        extra: dict[str, Any] = {}
        if top_logprobs:
            extra = {"logprobs": True, "top_logprobs": min(top_logprobs, MAX_TOP_LOGPROBS)}
        if schema is not None and self._takes_schema is not False:
            extra["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": purpose.replace(":", "_"), "schema": schema, "strict": True},
            }
        limits = self.limits
        estimated = sum(limits.tokens(m.content) for m in messages)
        extra["timeout"] = limits.timeout_s(estimated, max_tokens)
        started = time.monotonic()
        try:
            response = self._create(messages, max_tokens, extra)
        except openai.BadRequestError:
            logger.info(
                "the model at %s refused a JSON schema; asking without one from now on", self.endpoint
            )
            self._takes_schema = False
            del extra["response_format"]
            response = self._create(messages, max_tokens, extra)
        if "response_format" in extra:
            self._takes_schema = True
        reply = self._reply(response, messages, purpose, top_logprobs)
        timings = (response.model_extra or {}).get("timings")
        limits.observe(
            estimated,
            reply.prompt_tokens if response.usage else 0,  # the server's count, never our estimate
            reply.completion_tokens,
            time.monotonic() - started,
            timings if isinstance(timings, dict) else None,
        )
        return reply

    def _create(self, messages: Sequence[Message], max_tokens: int, extra: dict[str, Any]) -> Any:
        """The endpoint's response, from a thread of its own: a blocking HTTP call cannot be
        interrupted, so a stop (:meth:`close`) returns from the wait at once and leaves the
        request to its thread — a daemon stops within a second, not after ``llm_timeout_s``."""
        outcome: list[Any] = []
        answered = threading.Event()

        def call() -> None:
            try:
                outcome.append(self._request(messages, max_tokens, extra))
            except BaseException as exc:  # handed to the waiting thread, whatever it is
                outcome.append(exc)
            finally:
                answered.set()

        if self._stopped.is_set():
            raise StoppedError(f"the model at {self.endpoint} is closed: the daemon is stopping")
        threading.Thread(target=call, name="mnemo-model-call", daemon=True).start()
        while not answered.wait(0.1):
            if self._stopped.is_set():
                raise StoppedError(
                    f"the daemon stopped while the model at {self.endpoint} was answering; "
                    "the batch is redone at the next start"
                )
        if isinstance(outcome[0], BaseException):
            raise outcome[0]
        return outcome[0]

    def _request(self, messages: Sequence[Message], max_tokens: int, extra: dict[str, Any]) -> Any:
        """The endpoint's response; ModelError naming what failed — except a refused request that
        carried a JSON schema, raised as it is for chat() to ask again without."""
        import openai  # noqa: PLC0415

        try:
            return self._client.chat.completions.create(
                model=self.model,
                messages=[{"role": m.role, "content": redact(m.content)} for m in messages],  # type: ignore[misc]
                max_tokens=max_tokens,
                temperature=0,
                **extra,
            )
        except openai.BadRequestError as exc:
            if (
                "response_format" in extra
                and self._takes_schema is None
                and not _OVERFLOW.search(exc.message)
            ):
                raise
            raise self._status_error(exc) from None
        except openai.APITimeoutError:
            raise ModelTimeoutError(
                f"the model at {self.endpoint} did not answer within {extra['timeout']:.3g} s "
                f"(tried {self._retries + 1} times; setting llm_timeout_s)"
            ) from None
        except openai.APIConnectionError as exc:
            reason = exc.__cause__ or exc
            raise ModelError(
                f"cannot reach the model at {self.endpoint} (tried {self._retries + 1} times): {reason}"
            ) from None
        except openai.APIStatusError as exc:
            raise self._status_error(exc) from None
        except openai.OpenAIError as exc:
            raise ModelError(f"calling the model at {self.endpoint} failed: {_short(str(exc))}") from None

    def _status_error(self, exc: openai.APIStatusError) -> ModelError:
        message = f"the model at {self.endpoint} answered HTTP {exc.status_code}: {_short(exc.message)}"
        overflow = exc.status_code in (400, 413, 500) and _OVERFLOW.search(exc.message) is not None
        if overflow:
            self.limits.overflowed()
        if overflow or exc.status_code in (400, 413, 422):
            return ModelRefusedError(message, overflow=overflow)
        return ModelError(message)

    def _reply(self, response: Any, messages: Sequence[Message], purpose: str, top_logprobs: int) -> Reply:
        if not response.choices:
            raise ModelError(f"the model at {self.endpoint} answered with no choices")
        choice = response.choices[0]
        text = choice.message.content or ""
        usage = response.usage
        # An endpoint that reports no usage is metered by an estimate: 4 characters a token.
        prompt_tokens = usage.prompt_tokens if usage else sum(len(m.content) for m in messages) // 4
        completion_tokens = usage.completion_tokens if usage else len(text) // 4
        self._meter.record(self.model, purpose, prompt_tokens, completion_tokens)
        alternatives = None
        if top_logprobs and (choice.logprobs is None or not choice.logprobs.content) and self.gives_logprobs:
            logger.info("the model at %s gives no log-probabilities: the judge asks at once", self.endpoint)
            self.gives_logprobs = False
        if top_logprobs and choice.logprobs is not None and choice.logprobs.content:
            first = choice.logprobs.content[0]
            alternatives = [(t.token, t.logprob) for t in first.top_logprobs] or [
                (first.token, first.logprob)
            ]
        return Reply(text, alternatives, prompt_tokens, completion_tokens)


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"


class UnusableAnswer(Exception):
    """The model's answer was still unusable after the attempts: ``problem`` says what was wrong
    with the last one. Callers raise their own ModelError with it."""

    def __init__(self, problem: str, attempts: int) -> None:
        super().__init__(problem)
        self.problem = problem
        self.attempts = attempts


def ask_until_usable(
    llm: ChatModel,
    messages: Sequence[Message],
    parse: Callable[[str], T],
    *,
    attempts: int,
    purpose: str,
    max_tokens: int,
    schema: dict[str, Any] | None,
) -> T:
    """``parse`` of the model's answer, asking again up to ``attempts`` times, each time with the
    answer and what ``parse`` found wrong in it (its ValueError); UnusableAnswer after the last."""
    asked = list(messages)
    problem = ""
    for _ in range(attempts):
        reply = llm.chat(asked, purpose=purpose, max_tokens=max_tokens, schema=schema)
        try:
            return parse(reply.text)
        except ValueError as exc:
            problem = str(exc)
            again = f"That answer is not usable: {problem}. Answer again with only the JSON object."
            # Only the last answer, as far as it fits the room the caller kept for asking again.
            asked = [*messages, Message("assistant", reply.text[:1_500]), Message("user", again)]
    raise UnusableAnswer(problem, attempts)


_FENCE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$")


def json_object(text: str) -> Any:
    """The JSON value from the first ``{`` to the last ``}`` of a model's answer, a code fence
    around it ignored; ValueError naming what is wrong (the extraction, the judgement at once and a
    host's structured answer read answers this way)."""
    body = _FENCE.sub("", text.strip())
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end < start:
        raise ValueError("no JSON object in the answer")
    try:
        return json.loads(body[start : end + 1])
    except json.JSONDecodeError as exc:
        raise ValueError(f"broken JSON ({exc.msg} at character {exc.pos})") from None
