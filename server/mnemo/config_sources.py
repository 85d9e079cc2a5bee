"""Where settings come from, beside the Settings model (:mod:`mnemo.config`): the TOML file, the
environment, the store DSN's check and the checks of settings that go together, the default
person, and a DSN made safe to show."""

from __future__ import annotations

import getpass
import json
import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from mnemo.errors import ConfigError
from mnemo.paths import HOME_ENV

if TYPE_CHECKING:
    from mnemo.config import Settings

# Unix socket paths are limited to 108 bytes on Linux (104 on macOS) including the NUL.
MAX_SOCKET_PATH_BYTES = 103


def redact_dsn(dsn: str) -> str:
    parts = urlsplit(dsn)
    if parts.password is None:
        return dsn
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def read_config_file(path: Path, settable: Iterable[str]) -> tuple[bytes | None, dict[str, Any]]:
    """The file's bytes (None when there is none) and its settings."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None, {}
    except OSError as exc:
        raise ConfigError(f"cannot read the config file {path}: {exc.strerror}") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"the config file {path} is not UTF-8: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"the config file {path} is not valid TOML: {exc}") from None
    known = tuple(settable)
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ConfigError(
            f"unknown setting(s) {', '.join(unknown)} in {path}; known settings: {', '.join(known)}"
        )
    return raw, data


def environment_values(
    env: Mapping[str, str], prefix: str, settable: Iterable[str], json_settings: Iterable[str]
) -> tuple[dict[str, Any], dict[str, str]]:
    """The settings ``env`` sets (``<prefix><NAME>``), and where each came from; those in
    ``json_settings`` are JSON there."""
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    for key in settable:
        name = prefix + key.upper()
        if name not in env:
            continue
        values[key], sources[key] = env[name], f"environment variable {name}"
        if key in json_settings:
            try:
                values[key] = json.loads(env[name])
            except ValueError as exc:
                raise ConfigError(f"{key} (from {sources[key]}): not valid JSON: {exc}") from None
    return values, sources


def check_store_dsn(dsn: str, source: str) -> None:
    scheme = urlsplit(dsn).scheme
    if scheme == "chdb":
        path = dsn.removeprefix("chdb://")
        if not path.startswith("/"):
            raise ConfigError(
                f"store (from {source}): an embedded store needs an absolute path, chdb:///path"
            )
        return
    if scheme in {"http", "https"}:
        return
    raise ConfigError(
        f"store (from {source}): unsupported DSN {redact_dsn(dsn)!r}; "
        "use chdb:///absolute/path or http(s)://host:port/database"
    )


def default_person(env: Mapping[str, str]) -> str:
    name = env.get("USER") or env.get("LOGNAME")
    if not name:
        try:
            name = getpass.getuser()
        except (KeyError, OSError):
            name = "me"
    # A login name with spaces or control characters cannot name a namespace: made into one.
    return re.sub(r"[\s\x00-\x1f\x7f-\x9f]+", "-", name.strip())[:64] or "me"


def write_settings(path: Path, values: Mapping[str, str | None]) -> None:
    """Set top-level string settings in the TOML file (None removes one), keeping every other line
    as it was; the file is created when there is none. ConfigError when it cannot be written or
    would no longer read."""
    try:
        text = path.read_text(encoding="utf-8") if path.exists() else ""
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the config file {path}: {exc}") from None
    lines = text.splitlines()
    first_table = next((i for i, line in enumerate(lines) if line.lstrip().startswith("[")), len(lines))
    setting = re.compile(r"\s*(" + "|".join(re.escape(k) for k in values) + r")\s*=")
    head = [line for line in lines[:first_table] if not setting.match(line)]
    head += [
        f"{key} = {json.dumps(value, ensure_ascii=False)}"
        for key, value in values.items()
        if value is not None
    ]
    written = "\n".join([*head, *lines[first_table:]]) + "\n"
    try:
        tomllib.loads(written)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"the config file {path} would not be valid TOML: {exc}") from None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(path.name + ".new")
        temporary.write_text(written, encoding="utf-8")
        temporary.replace(path)
    except OSError as exc:
        raise ConfigError(f"cannot write the config file {path}: {exc.strerror}") from None


def check_settings(settings: Settings, sources: Mapping[str, str]) -> None:
    """ConfigError for settings that cannot go together (each named with where it came from)."""
    check_store_dsn(settings.store, sources.get("store", "defaults"))
    if settings.llm_url and not settings.llm_model:
        raise ConfigError(
            f"llm_url is set (from {sources.get('llm_url', 'defaults')}) but llm_model is empty: "
            'name the model to ask (e.g. llm_model = "qwen2.5-coder:1.5b")'
        )
    if settings.writer == "always" and not settings.llm_url and settings.llm_backend == "openai":
        raise ConfigError("writer is always, but no llm_url is set: distilling needs a language model")
    if len(os.fsencode(settings.socket_path)) > MAX_SOCKET_PATH_BYTES:
        raise ConfigError(
            f"the daemon socket path {settings.socket_path} is longer than unix sockets allow "
            f"({MAX_SOCKET_PATH_BYTES} bytes); set {HOME_ENV} to a shorter directory"
        )
