"""``mnemo doctor``: what a host needs to run mnemo and whether it has it — mnemo-mcp where the
host can run it, the MCP server and the hooks registered (by ``mnemo setup`` or the plugin, not
both), a host version mnemo was tested with, and a model server with room for the host's
requests."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from mnemo.distill.sizing import UNREACHABLE, probe_context
from mnemo.errors import ConfigError
from mnemo.hosts import claude, codex, hookspec, locate
from mnemo.hosts.edits import parse_json, read_text
from mnemo.hosts.found import Found

State = Literal["ok", "warn", "fail", "skip"]
# Tokens of each host's first request with mnemo's tools, measured on llama-server with
# Qwen2.5-Coder's tokenizer (docs/models.md, "What a host needs from a local model"). A context
# below it fails at once, below twice it a session soon outgrows it — unless the host runs with
# the flags that shrink its prompt, which doctor cannot see: a warning, not a failure.
FIRST_REQUEST = {"claude-code": 22_100, "codex": 6_500}
SHRUNK = {
    "claude-code": "claude --tools '' --system-prompt '…' (or --tools Bash,Read,Edit)",
    "codex": "codex -c model_instructions_file='\"short.md\"'",
}
CODEX_LOCAL_PROVIDERS = {"ollama": "http://localhost:11434/v1", "lmstudio": "http://localhost:1234/v1"}


@dataclass(frozen=True, slots=True)
class Check:
    subject: str
    state: State
    detail: str
    fix: str = ""


def checks(env: Mapping[str, str], which: Callable[[str], str | None]) -> list[Check]:
    on_path = which(hookspec.COMMAND)
    found = [
        Check("mnemo-mcp", "ok", on_path)
        if on_path
        else Check(
            "mnemo-mcp",
            "warn",
            "not on PATH: the plugin and configs that name it bare cannot run it (`mnemo setup` "
            "writes its full path)",
            "uv tool update-shell (adds uv's tool directory to PATH)",
        )
    ]
    for host in ("claude-code", "codex"):
        found.extend(_host_checks(host, env, which, bool(on_path)))
    return found


def _host_checks(
    host: str,
    env: Mapping[str, str],
    which: Callable[[str], str | None],
    on_path: bool,
) -> list[Check]:
    binary = which(locate.BINARIES[host])
    if binary is None:
        return [Check(host, "skip", f"`{locate.BINARIES[host]}` is not on PATH")]
    out = [_version_check(host, locate.version(binary))]
    try:
        registered = (claude if host == "claude-code" else codex).found(env)
    except ConfigError as exc:
        return [*out, Check(host, "fail", str(exc))]
    out.extend(_registration(host, registered, which, on_path))
    try:
        out.extend(_model_check(host, env))
    except ConfigError as exc:
        out.append(Check(host, "warn", f"its model server could not be read: {exc}"))
    return out


def _version_check(host: str, seen: tuple[int, int, int] | None) -> Check:
    tested = locate.TESTED[host]
    shown = ".".join(map(str, tested))
    if seen is None:
        return Check(host, "warn", "`--version` said no version")
    if seen < tested:
        return Check(
            host,
            "warn",
            f"version {'.'.join(map(str, seen))}, older than {shown}, the one mnemo is tested with: "
            "hooks or tools may be missing",
            "update it",
        )
    return Check(host, "ok", f"version {'.'.join(map(str, seen))}")


def _registration(host: str, found: Found, which: Callable[[str], str | None], on_path: bool) -> list[Check]:
    setup = f"mnemo setup {host}"
    if found.plugin and (found.server or found.hooks):
        return [
            Check(
                host,
                "warn",
                "the mnemo plugin and `mnemo setup` both registered mnemo: every hook runs twice",
                f"{setup} --undo",
            )
        ]
    if found.plugin:
        if on_path:
            return [Check(host, "ok", "the mnemo plugin: MCP server and hooks")]
        return [Check(host, "fail", "the mnemo plugin runs mnemo-mcp from PATH, and there is none", setup)]
    out = []
    if found.server is None:
        out.append(Check(host, "fail", "mnemo's MCP server is not registered", setup))
    elif not locate.runnable(found.server, which):
        out.append(Check(host, "fail", f"the MCP server's command {found.server[0]} does not exist", setup))
    else:
        out.append(Check(host, "ok", f"MCP server: {' '.join(found.server)}"))
    if missing := found.missing_hooks:
        state: State = "fail" if len(missing) == len(hookspec.EVENTS) else "warn"
        out.append(Check(host, state, f"hooks not registered: {', '.join(missing)}", setup))
    else:
        out.append(Check(host, "ok", "hooks: every event"))
    return out


def _model_check(host: str, env: Mapping[str, str]) -> list[Check]:
    url, model = _claude_server(env) if host == "claude-code" else _codex_server(env)
    if not url:
        return []
    context = probe_context(url, model)
    if context is UNREACHABLE:
        return [Check(host, "warn", f"its model server {url} does not answer")]
    tokens = context.tokens if context is not None else 0
    if not tokens:
        return []  # a hosted API, or a server that does not say
    first = FIRST_REQUEST[host]
    if tokens < first:
        detail = (
            f"its model server {url} has a {tokens}-token context; {host}'s first request is about "
            f"{first} tokens by default"
        )
        return [Check(host, "warn", detail, f"a larger context, or {SHRUNK[host]} (docs/models.md)")]
    if tokens < 2 * first:
        detail = f"its model server {url} has a {tokens}-token context: a session soon outgrows it"
        return [Check(host, "warn", detail, f"a larger context, or {SHRUNK[host]} (docs/models.md)")]
    return [Check(host, "ok", f"model server {url}: {tokens}-token context")]


def _claude_server(env: Mapping[str, str]) -> tuple[str, str]:
    settings = parse_json(claude.settings_path(env), read_text(claude.settings_path(env)))
    block = settings.get("env")
    configured: dict[str, Any] = block if isinstance(block, dict) else {}
    url = env.get("ANTHROPIC_BASE_URL") or str(configured.get("ANTHROPIC_BASE_URL") or "")
    model = env.get("ANTHROPIC_MODEL") or str(
        configured.get("ANTHROPIC_MODEL") or settings.get("model") or ""
    )
    return ("" if "anthropic.com" in url else url), model


def _codex_server(env: Mapping[str, str]) -> tuple[str, str]:
    config = codex.parse_toml(codex.config_path(env), read_text(codex.config_path(env)))
    provider = str(config.get("model_provider") or "")
    table = (config.get("model_providers") or {}).get(provider) or {}
    url = str(table.get("base_url") or CODEX_LOCAL_PROVIDERS.get(provider, ""))
    return url, str(config.get("model") or "")
