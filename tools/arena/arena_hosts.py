"""Scenario sessions played through the real Claude Code and Codex, for tools/arena/eval_arena.py.

A scenario session (the format of docs/models.md#scenarios) becomes exchanges: each person's turn
is a prompt sent to the host, and the turns after it, up to the next prompt, are what the scripted
agent model answers (tests/host_servers.py): an assistant turn is text, a tool turn a real shell
call — the host runs ``cat`` on a file holding the turn's text, so PostToolUse sees a real tool
result — and an assistant turn right before a tool turn is said in the same message as the call.
An exchange that ends on a tool turn, or on the person's turn, is closed with the answer ``OK.``
(the host needs one).

Claude Code plays a session in one ``claude -p`` process fed its prompts one by one through
``--input-format stream-json`` (one SessionStart, one SessionEnd, as an interactive session has);
Codex in ``codex exec`` then ``codex exec resume`` for each further prompt (it has no SessionEnd).
Both load mnemo as the plugin a user installs (marketplace add, install).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.host_servers import CODEX_CONFIG, Block, Reply, Text, ToolCall, tool_results

HOST_TIMEOUT_S = 600
CLOSING = "OK."


@dataclass(frozen=True)
class Exchange:
    prompt: str
    steps: list[list[Block]]  # the reply to each request of the exchange; the last one answers
    files: list[tuple[str, str]]  # (relative path, text) each tool call prints

    @property
    def tools(self) -> int:
        return len(self.files)


def exchanges(turns: Sequence[dict[str, Any]], name: str, shell: Callable[[str], ToolCall]) -> list[Exchange]:
    """A session's turns as exchanges; tool outputs go to ``.arena/<name>-<n>.txt``."""
    found: list[Exchange] = []
    prompt, steps, files, said = "", [], [], []  # said: assistant text not yet sent
    n = 0

    def close() -> None:
        if prompt:
            found.append(Exchange(prompt, [*steps, [Text("\n\n".join(said) or CLOSING)]], list(files)))

    for turn in turns:
        if turn["role"] == "user":
            close()
            prompt, steps, files, said = turn["text"], [], [], []
        elif turn["role"] == "assistant":
            said.append(turn["text"])
        else:
            if not prompt:  # a session that opens on the agent's work: a prompt to start it
                prompt = "Go on."
            n += 1
            path = f".arena/{name}-{n}.txt"
            files.append((path, turn["text"]))
            call = shell(path)
            call = ToolCall(call.name, call.arguments, id=f"call_{name}_{n}")
            steps.append([*([Text("\n\n".join(said))] if said else []), call])
            said = []
    if not prompt and said:
        prompt = "Go on."
    close()
    return found


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def body_text(body: dict[str, Any]) -> str:
    """Every string a request carries (system prompt, messages, tool results), one per line."""
    return "\n".join(_strings({k: v for k, v in body.items() if k != "tools"}))


class SessionScript:
    """The scripted agent for one session. The player sets ``at``, the exchange whose prompt it
    sent; the step is the number of tool results since that prompt (earlier exchanges' calls are in
    the conversation too). Past its steps an exchange repeats its answer, so a host that asks again
    ends the turn rather than looping."""

    def __init__(self, played: Sequence[Exchange]) -> None:
        self.played = played
        self.at = 0
        self._before = [sum(e.tools for e in played[:i]) for i in range(len(played))]

    def __call__(self, body: dict[str, Any]) -> Reply:
        if not body.get("tools"):
            return Text("ok")  # a side request (a title and the like)
        steps = self.played[self.at].steps
        done = len(tool_results(body)) - self._before[self.at]
        return steps[max(0, min(done, len(steps) - 1))]


def _run(command: list[str], env: dict[str, str], cwd: Path, stdin: str | None = None) -> str:
    done = subprocess.run(
        command, env=env, cwd=cwd, input=stdin, capture_output=True, text=True,
        timeout=HOST_TIMEOUT_S, check=False, **({} if stdin is not None else {"stdin": subprocess.DEVNULL}),
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command[:3])} failed ({done.returncode}): {done.stderr[-2000:]}")
    return done.stdout


class Host:
    """One host binary for the user whose HOME ``env`` names, mnemo's plugin installed or not."""

    name = ""

    def __init__(self, binary: Path, env: dict[str, str], with_mnemo: bool) -> None:
        self.binary, self.with_mnemo = binary, with_mnemo
        self.env = dict(env)

    def shell(self, path: str) -> ToolCall:
        raise NotImplementedError

    def install(self, plugin: Path, url: str) -> None:
        raise NotImplementedError

    def play(self, played: Sequence[Exchange], cwd: Path, script: SessionScript | None = None) -> str:
        """Play the exchanges as one session, moving ``script`` on to each prompt sent; its id."""
        raise NotImplementedError


class ClaudeCode(Host):
    name = "claude-code"

    def shell(self, path: str) -> ToolCall:
        return ToolCall("Bash", {"command": f"cat {path}", "description": "Show the output"})

    def install(self, plugin: Path, url: str) -> None:
        home = Path(self.env["HOME"])  # the user's: the hooks' daemon finds its settings there
        home.mkdir(parents=True, exist_ok=True)
        self.env |= {
            "ANTHROPIC_API_KEY": "sk-arena", "ANTHROPIC_BASE_URL": url,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1", "IS_SANDBOX": "1",
        }  # fmt: skip
        if self.with_mnemo:
            _run([str(self.binary), "plugin", "marketplace", "add", str(plugin)], self.env, home)
            _run([str(self.binary), "plugin", "install", "mnemo@mnemo"], self.env, home)

    def play(self, played: Sequence[Exchange], cwd: Path, script: SessionScript | None = None) -> str:
        command = [str(self.binary), "-p", "--input-format", "stream-json", "--output-format", "stream-json",
                   "--verbose", "--model", "claude-sonnet-4-5", "--dangerously-skip-permissions"]  # fmt: skip
        errors = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 - closed below, with the process
        process = subprocess.Popen(
            command, env=self.env, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors,
            text=True,
        )  # fmt: skip
        assert process.stdin is not None and process.stdout is not None
        session = ""
        watchdog = threading.Timer(HOST_TIMEOUT_S, process.kill)  # a turn that never ends
        watchdog.start()
        try:
            for at, exchange in enumerate(played):  # one prompt at a time: the next once the turn ended
                if script is not None:
                    script.at = at
                message = {"type": "user", "message": {"role": "user", "content": exchange.prompt}}
                process.stdin.write(json.dumps(message) + "\n")
                process.stdin.flush()
                for line in process.stdout:
                    event = json.loads(line) if line.startswith("{") else {}
                    session = session or str(event.get("session_id") or "")
                    if event.get("type") == "result":
                        if event.get("is_error"):
                            raise RuntimeError(f"claude: the turn failed: {line[:500]}")
                        break
                else:
                    errors.seek(0)
                    raise RuntimeError(f"claude ended early ({process.poll()}): {errors.read()[-2000:]}")
            process.stdin.close()
            process.wait(timeout=HOST_TIMEOUT_S)
        finally:
            watchdog.cancel()
            errors.close()
            if process.poll() is None:
                process.kill()
                process.wait()
        if not session:
            raise RuntimeError("claude gave no session id")
        return session


class Codex(Host):
    name = "codex"

    def shell(self, path: str) -> ToolCall:
        return ToolCall("exec_command", {"cmd": f"cat {path}"})

    def install(self, plugin: Path, url: str) -> None:
        home = Path(self.env["HOME"]) / ".codex"
        home.mkdir(parents=True, exist_ok=True)
        (home / "config.toml").write_text(CODEX_CONFIG.format(url=url))
        self.env |= {"CODEX_HOME": str(home), "SCRIPTED_API_KEY": "sk-arena"}
        if self.with_mnemo:
            _run([str(self.binary), "plugin", "marketplace", "add", str(plugin)], self.env, home)
            _run([str(self.binary), "plugin", "add", "mnemo@mnemo"], self.env, home)

    def play(self, played: Sequence[Exchange], cwd: Path, script: SessionScript | None = None) -> str:
        flags = ["--skip-git-repo-check", "--json", "--dangerously-bypass-hook-trust",
                 "--dangerously-bypass-approvals-and-sandbox"]  # fmt: skip
        session = ""
        for at, exchange in enumerate(played):
            if script is not None:
                script.at = at
            resume = ["resume", session] if session else []
            out = _run([str(self.binary), "exec", *resume, *flags, "-"], self.env, cwd, stdin=exchange.prompt)
            events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
            session = session or next(
                (str(e["thread_id"]) for e in events if e.get("type") == "thread.started"), ""
            )
            if not session:
                raise RuntimeError(f"codex gave no thread id: {out[-1000:]}")
        return session


HOSTS: dict[str, type[Host]] = {"claude-code": ClaudeCode, "codex": Codex}


def host_binary(name: str, hosts_dir: Path) -> Path:
    binary = hosts_dir / "node_modules" / ".bin" / ("claude" if name == "claude-code" else "codex")
    if not binary.exists():
        raise FileNotFoundError(f"{binary} is missing: npm install --prefix {hosts_dir} (see .ci/run)")
    return binary


def base_env(bin_dir: Path) -> dict[str, str]:
    """The environment hosts run in: the caller's, without any MNEMO_ setting, mnemo on PATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MNEMO_")}
    env["PATH"] = f"{bin_dir}:{env.get('PATH', '')}"
    return env
