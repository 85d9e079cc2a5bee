"""The writer's model through a host's own CLI, headless: Claude Code (``claude -p``) or Codex
(``codex exec``), with the login the person already has (``llm_backend``).

Each call runs the CLI once, in an empty private directory, with the prompt on stdin, and reads
its JSON answer. What is asked for so that nothing of the writer's own calls comes back into
mnemo (docs/models.md, "The model you already have"):

- no session is kept: ``--no-session-persistence`` (Claude Code), ``--ephemeral`` (Codex), so no
  transcript lands where ``mnemo import --from claude-code|codex`` reads;
- no hooks: ``disableAllHooks`` (Claude Code), the ``hooks`` feature off (Codex), and
  ``MNEMO_WRITER_CALL=1`` in the environment, on which mnemo's own hooks return at once whatever
  a host does — a writer's call never records an episode, so it never starts a session to distil;
- no MCP servers, no tools, no user configuration of Codex (``--ignore-user-config``; its login
  still comes from ``CODEX_HOME``), the host's own system prompt replaced by the writer's.

Credentials fail closed. Without ``llm_host_url`` the CLI uses its login and only its login: the
variables that would switch it to a key (``ANTHROPIC_API_KEY``, ``OPENAI_API_KEY`` …) are removed
from its environment, and a CLI that is not logged in is an error, never a fallback. With
``llm_host_url`` it talks to that base URL with ``llm_api_key`` (a placeholder when empty), never
with the login. These CLIs give no log-probabilities: the judge asks once per new memory with a schema
(:func:`mnemo.distill.judge.judge`), the extraction through the host's structured output
(``--json-schema``, ``--output-schema``). A host's usage-limit answer is a
:class:`~mnemo.errors.TokenCapError`: the writer pauses and the batch is redone later.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from mnemo.clock import utc_now
from mnemo.config import Settings
from mnemo.config_sources import redact_dsn
from mnemo.distill.llm import Message, Meter, Reply, json_object
from mnemo.distill.sizing import DEFAULT_CONTEXT, UNREACHABLE, Context, ModelLimits, probe_context
from mnemo.errors import ConfigError, ModelError, ModelTimeoutError, StoppedError, TokenCapError
from mnemo.secrets import redact

COMMANDS = {"claude-code": "claude", "codex": "codex"}
WRITER_CALL_ENV = "MNEMO_WRITER_CALL"
# Variables that would make a CLI spend on another credential than the one the person chose.
# (The login itself may come from the environment: CLAUDE_CODE_OAUTH_TOKEN stays.)
_CREDENTIALS = {
    "claude-code": ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL",
                    "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_USE_FOUNDRY"),
    "codex": ("OPENAI_API_KEY", "CODEX_API_KEY", "OPENAI_BASE_URL"),
}  # fmt: skip
_KEY_ENV = "MNEMO_WRITER_KEY"  # Codex reads the key of the llm_url provider from here
_LIMIT = re.compile(
    r"usage limit|limit reached|hit your (?:usage )?limit|rate.?limit|quota|out of (?:extra )?usage", re.I
)
_LOGIN = re.compile(r"not logged in|/login|invalid api key|authenticat|unauthori[sz]ed|\b401\b", re.I)
MIN_OUTPUT_TOKENS = 512
# The hosts' own models read far more than a stretch: the writer's stretches are sized to this.
HOST_CONTEXT = 200_000
# What a host's CLI adds to each request of its own (its scaffolding around the writer's system
# prompt), taken off a local model's context (llm_host_url).
HOST_OVERHEAD_TOKENS = 2_000
_LIMIT_PAUSE = timedelta(hours=1)  # when the host does not say when its limit resets
_CODEX_OFF = ("hooks", "goals", "multi_agent", "shell_tool", "plugins", "apps", "image_generation",
              "view_image", "skill_search")  # fmt: skip


class HostLLM:
    """A host's CLI as the writer's model: the same ``chat`` as :class:`~mnemo.distill.llm.LLM`,
    without log-probabilities. Thread-safe (each call is its own process)."""

    gives_logprobs = False

    def __init__(self, settings: Settings, meter: Meter) -> None:
        backend = settings.llm_backend
        if backend not in COMMANDS:
            raise ConfigError(f"llm_backend {backend!r} is not a host's CLI; hosts: {', '.join(COMMANDS)}")
        self.backend = backend
        command = settings.llm_host_command or COMMANDS[backend]
        found = shutil.which(command)
        if found is None:
            raise ConfigError(
                f"llm_backend is {backend} but {command!r} is not found (install it, or set "
                "llm_host_command to its path)"
            )
        self._command = found
        self.model = settings.llm_host_model or f"{backend} default"
        self._model_flag = settings.llm_host_model
        self._url = settings.llm_host_url
        self._key = settings.llm_api_key.get_secret_value()
        self.endpoint = f"{backend} CLI " + (
            f"at {redact_dsn(self._url)}" if self._url else "with its own login"
        )
        self._timeout_s = settings.llm_timeout_s
        self._context = settings.llm_context_tokens
        self._limits: ModelLimits | None = None
        self._meter = meter
        self._home = Path(tempfile.mkdtemp(prefix="mnemo-writer-"))  # the CLI's empty working dir
        # Claude Code says at once when it has no login; Codex without one retries the network,
        # so its login is checked before the first call.
        self._logged_in = backend == "claude-code"
        self._lock = threading.Lock()
        self._running: set[subprocess.Popen[str]] = set()
        self._closed = False

    @property
    def limits(self) -> ModelLimits:
        """The context requests are sized to: llm_context_tokens; else, with llm_host_url, what that
        server says (less the CLI's own scaffolding); else the host's own model's."""
        if self._limits is not None:
            return self._limits
        if self._context != "auto":
            context = Context(self._context, "llm_context_tokens")
        elif not self._url:
            context = Context(HOST_CONTEXT, f"the {self.backend} model's")
        else:
            found = probe_context(self._url, self._model_flag, self._key)
            if found is UNREACHABLE:
                return ModelLimits(
                    Context(DEFAULT_CONTEXT - HOST_OVERHEAD_TOKENS, "the default"), self._timeout_s
                )
            tokens, source = (
                (DEFAULT_CONTEXT, "the default") if found is None else (found.tokens, found.source)
            )
            context = Context(max(1_024, tokens - HOST_OVERHEAD_TOKENS), f"{source}, less the CLI's own")
        self._limits = ModelLimits(context, self._timeout_s)
        return self._limits

    def close(self) -> None:
        """Stop the calls under way (a stopping daemon does not wait for them: their batch is
        redone) and remove the CLI's working directory."""
        with self._lock:
            running, self._closed = list(self._running), True
        for process in running:
            _kill(process)
        shutil.rmtree(self._home, ignore_errors=True)

    def chat(
        self,
        messages: Sequence[Message],
        *,
        purpose: str,
        max_tokens: int,  # Claude Code's; Codex sends none (openai/codex#36180)
        top_logprobs: int = 0,  # the CLIs give none
        schema: dict[str, Any] | None = None,
    ) -> Reply:
        """One answer from the CLI; with ``schema``, the JSON object it asks for (as text).
        Raises TokenCapError when a cap is spent or the host's usage limit is reached, ModelError
        on failure (the message names the CLI and what it said, never a key)."""
        self._meter.check()
        if not self._url and not self._logged_in:
            self._check_login()
        system = "\n\n".join(redact(m.content) for m in messages if m.role == "system")
        prompt = _conversation([m for m in messages if m.role != "system"])
        with tempfile.TemporaryDirectory(dir=self._home) as work:
            if self.backend == "claude-code":
                out = self._run(self._claude(system, schema), prompt, Path(work), max_tokens)
                text, prompt_tokens, completion_tokens, error = _claude_answer(out)
            else:
                out = self._run(self._codex(system, schema, Path(work)), prompt, Path(work), max_tokens)
                text, prompt_tokens, completion_tokens, error = _codex_answer(out)
        if prompt_tokens or completion_tokens or not error:
            self._meter.record(self.model, purpose, prompt_tokens, completion_tokens)
        if error:
            raise self._failure(error)
        if schema is not None and (structured := _structured(text)) is not None:
            text = json.dumps(structured, ensure_ascii=False)
        return Reply(text, None, prompt_tokens, completion_tokens)

    def _claude(self, system: str, schema: dict[str, Any] | None) -> list[str]:
        argv = [self._command, "-p", "--output-format", "json", "--no-session-persistence",
                "--tools", "", "--strict-mcp-config", "--mcp-config", '{"mcpServers":{}}',
                "--settings", '{"disableAllHooks":true}', "--system-prompt", system or "Answer."]  # fmt: skip
        if self._model_flag:
            argv += ["--model", self._model_flag]
        if schema is not None:
            argv += ["--json-schema", json.dumps(schema)]
        return argv

    def _codex(self, system: str, schema: dict[str, Any] | None, work: Path) -> list[str]:
        instructions = work / "instructions.md"
        instructions.write_text(system or "Answer.")
        argv = [self._command, "exec", "--ephemeral", "--ignore-user-config", "--skip-git-repo-check",
                "--json", "--sandbox", "read-only", "-C", str(work),
                "-c", f"model_instructions_file={json.dumps(str(instructions))}",
                "-c", 'web_search="disabled"', "-c", "include_environment_context=false",
                "-c", "include_permissions_instructions=false", "-c", "include_apps_instructions=false",
                "-c", "skills.include_instructions=false"]  # fmt: skip
        for feature in _CODEX_OFF:
            argv += ["--disable", feature]
        if self._url:
            provider = {"name": "mnemo", "base_url": self._url, "wire_api": "responses", "env_key": _KEY_ENV}
            table = ", ".join(f"{k} = {json.dumps(v)}" for k, v in provider.items())
            argv += ["-c", 'model_provider="mnemo"', "-c", f"model_providers.mnemo={{{table}}}"]
        if self._model_flag:
            argv += ["-m", self._model_flag]
        if schema is not None:
            path = work / "schema.json"
            path.write_text(json.dumps(schema))
            argv += ["--output-schema", str(path)]
        return [*argv, "-"]

    def _check_login(self) -> None:
        """ModelError unless ``codex login status`` says it is logged in."""
        try:
            done = subprocess.run(
                [self._command, "login", "status"],
                env=self._environment(),
                cwd=self._home,
                capture_output=True,
                text=True,
                timeout=min(30.0, self._timeout_s),
                stdin=subprocess.DEVNULL,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ModelError(f"the {self.endpoint} could not say whether it is logged in: {exc}") from None
        if done.returncode != 0:
            said = (done.stdout + done.stderr).strip().splitlines()  # warnings come with it
            found = next((line for line in said if _LOGIN.search(line)), said[-1] if said else "")
            raise self._failure(found or "not logged in")
        self._logged_in = True

    def _environment(self, max_tokens: int = 0) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in _CREDENTIALS[self.backend]}  # noqa: TID251 - the CLI's own environment, passed on
        env[WRITER_CALL_ENV] = "1"
        if self.backend == "claude-code":
            env |= {"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}
            if max_tokens:  # room for the structured output's tool call around the answer
                env["CLAUDE_CODE_MAX_OUTPUT_TOKENS"] = str(max(max_tokens, MIN_OUTPUT_TOKENS))
            if self._url:
                env |= {"ANTHROPIC_BASE_URL": self._url, "ANTHROPIC_API_KEY": self._key or "none"}
        elif self._url:
            env[_KEY_ENV] = self._key or "none"
        return env

    def _run(self, argv: list[str], prompt: str, work: Path, max_tokens: int) -> str:
        """The CLI's stdout; ModelError when it times out or exits with nothing to read."""
        with self._lock:
            if self._closed:
                raise StoppedError(f"the {self.endpoint} is closed: the daemon is stopping")
            process = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=work,
                env=self._environment(max_tokens),
                text=True,
                start_new_session=True,  # its children are stopped with it (_kill)
            )
            self._running.add(process)
        try:
            out, err = process.communicate(prompt, timeout=self._timeout_s)
        except subprocess.TimeoutExpired:
            _kill(process)
            raise ModelTimeoutError(
                f"the {self.endpoint} did not answer within {self._timeout_s:g} s (setting llm_timeout_s)"
            ) from None
        except BaseException:
            _kill(process)
            raise
        finally:
            with self._lock:
                self._running.discard(process)
        if process.returncode != 0 and not out.strip():
            raise self._failure(err.strip() or f"exit status {process.returncode}")
        return out

    def _failure(self, said: str) -> ModelError:
        said = _short(redact(said))
        if _LIMIT.search(said):
            resumes = _resets_at(said) or utc_now() + _LIMIT_PAUSE
            return TokenCapError(
                f"the {self.endpoint} answered that its usage limit is reached ({said}); "
                f"the writer waits until {resumes:%Y-%m-%d %H:%M} UTC",
                resumes,
            )
        if not self._url and _LOGIN.search(said):
            return ModelError(
                f"the {self.endpoint} is not logged in ({said}): log in with `{COMMANDS[self.backend]}` "
                "first; mnemo never falls back to another credential"
            )
        return ModelError(f"the {self.endpoint} failed: {said}")


def _conversation(messages: Sequence[Message]) -> str:
    """The turns after the system prompt, as one prompt: a retry carries the answer it corrects."""
    if len(messages) == 1:
        return redact(messages[0].content)
    names = {"user": "REQUEST", "assistant": "YOUR EARLIER ANSWER"}
    return "\n\n".join(f"{names[m.role]}:\n{redact(m.content)}" for m in messages)


def _claude_answer(out: str) -> tuple[str, int, int, str]:
    """Claude Code's ``--output-format json`` result: the answer (its structured output when a
    schema was given), prompt and completion tokens (cache reads and writes are prompt tokens),
    and the error it reports, if any."""
    try:
        result = json.loads(out.strip().splitlines()[-1]) if out.strip() else {}
    except json.JSONDecodeError:
        return "", 0, 0, f"answered what is not JSON: {_short(out)}"
    if not isinstance(result, dict):
        return "", 0, 0, f"answered what is not a result: {_short(out)}"
    usage = result.get("usage") or {}
    prompt = sum(int(usage.get(k) or 0) for k in ("input_tokens", "cache_creation_input_tokens",
                                                   "cache_read_input_tokens"))  # fmt: skip
    completion = int(usage.get("output_tokens") or 0)
    if result.get("is_error"):
        return "", prompt, completion, str(result.get("result") or result.get("subtype") or "an error")
    structured = result.get("structured_output")
    text = json.dumps(structured) if structured is not None else str(result.get("result") or "")
    return text, prompt, completion, ""


def _codex_answer(out: str) -> tuple[str, int, int, str]:
    """Codex's ``--json`` events: the last agent message, the turn's usage, and the error of a
    failed turn (an ``error`` *item* is a warning, such as unknown model metadata: not a failure)."""
    text, prompt, completion, error = "", 0, 0, ""
    for line in out.splitlines():
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        kind = event.get("type") if isinstance(event, dict) else None
        if kind == "item.completed" and event["item"].get("type") == "agent_message":
            text = str(event["item"].get("text") or "")
        elif kind == "turn.completed":
            usage = event.get("usage") or {}
            prompt += int(usage.get("input_tokens") or 0)
            completion += int(usage.get("output_tokens") or 0) + int(
                usage.get("reasoning_output_tokens") or 0
            )
        elif kind == "turn.failed":
            error = str((event.get("error") or {}).get("message") or "the turn failed")
        elif kind == "error":
            error = str(event.get("message") or "an error")
    if not text and not error:
        error = "answered nothing"
    return text, prompt, completion, error


def _structured(text: str) -> dict[str, Any] | None:
    """The JSON object in an answer asked for with a schema: as given, in a code fence, or wrapped
    as a call of Claude Code's StructuredOutput tool written out as text (small models do). None
    when there is none: the caller validates the text and says what is wrong."""
    try:
        value = json_object(text)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    arguments = value.get("arguments")
    if value.get("name") == "StructuredOutput" and isinstance(arguments, dict):
        return arguments
    return value


def _resets_at(said: str) -> datetime | None:
    """When a usage limit resets, where the host says it as a Unix time ("…limit reached|1733443200")."""
    match = re.search(r"\|(\d{10})\b", said)
    if match is None:
        return None
    at = datetime.fromtimestamp(int(match.group(1)), tz=utc_now().tzinfo)
    return at if at > utc_now() else None


def _kill(process: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + "…"
