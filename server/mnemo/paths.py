"""Where mnemo keeps its files, from ``MNEMO_HOME`` or the platform's user directories.

Kept apart from :mod:`mnemo.config` and free of third-party imports because the hook process
(:mod:`mnemo.hook_process`) needs the daemon's socket path and must start in a few milliseconds: it cannot
afford pydantic, nor ``import platformdirs``. On Linux the XDG rules are
applied here directly (a test checks they agree with platformdirs); elsewhere platformdirs is
imported on demand.
"""

from __future__ import annotations

import fcntl
import os
import sys
from _collections_abc import Mapping  # collections.abc, less its package's import (~2 ms of a hook)

HOME_ENV = "MNEMO_HOME"
HOOK_TIMEOUT_ENV = "MNEMO_HOOK_TIMEOUT_S"
APP = "mnemo"
SOCKET_NAME = "daemon.sock"
DAEMON_LOCK_NAME = "daemon.lock"
SPOOL_NAME = "hooks.spool"  # hook events that found no daemon, for it to replay (mnemo.hook_process)
MAX_HOOK_INPUT_BYTES = 16 * 1024 * 1024  # a hook event's JSON, as the host gives it
SPAWNED_NAME = "hook-spawned"  # the pid of the daemon a hook last started, and when (its mtime)
# The digest of the inputs a daemon's settings were resolved from, given to it by its spawner.
INPUTS_ENV = "MNEMO_SPAWNED_FROM"
# Besides MNEMO_*, what the settings' defaults depend on (the user directories, the person).
_INPUT_NAMES = ("HOME", "USER", "LOGNAME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME")


class Layout:
    """The directories, as strings (the hook process avoids ``pathlib``, ``dataclasses`` and
    ``socket``, whose imports would be most of its start)."""

    __slots__ = ("config_file", "data_dir", "home", "log_dir", "run_dir")

    def __init__(self, home: str | None, config_file: str, data_dir: str, run_dir: str, log_dir: str) -> None:
        self.home, self.config_file, self.data_dir = home, config_file, data_dir
        self.run_dir, self.log_dir = run_dir, log_dir

    @property
    def socket_path(self) -> str:
        return os.path.join(self.run_dir, SOCKET_NAME)

    @property
    def spool_path(self) -> str:
        return os.path.join(self.run_dir, SPOOL_NAME)

    @property
    def daemon_lock_path(self) -> str:
        """Held by the running daemon for its whole life (from before its socket exists)."""
        return os.path.join(self.run_dir, DAEMON_LOCK_NAME)


def layout(env: Mapping[str, str] | None = None) -> Layout:
    """The directories for this environment: everything under ``MNEMO_HOME`` when it is set."""
    env = os.environ if env is None else env
    home_text = env.get(HOME_ENV, "").strip()
    join = os.path.join
    if home_text:
        home = os.path.realpath(os.path.expanduser(home_text))
        return Layout(
            home, join(home, "config.toml"), join(home, "store"), join(home, "run"), join(home, "logs")
        )
    config, data, state = _user_dirs(env)
    return Layout(
        None, join(config, "config.toml"), join(data, "store"), join(state, "run"), join(state, "logs")
    )


def _user_dirs(env: Mapping[str, str]) -> tuple[str, str, str]:
    """(config, data, state) directories of the app, as platformdirs gives them."""
    if sys.platform.startswith("linux"):
        home = env.get("HOME") or os.path.expanduser("~")

        def xdg(name: str, default: str) -> str:
            value = env.get(name, "").strip()
            return os.path.join(value if value else os.path.join(home, default), APP)

        return (
            xdg("XDG_CONFIG_HOME", ".config"),
            xdg("XDG_DATA_HOME", ".local/share"),
            xdg("XDG_STATE_HOME", ".local/state"),
        )
    import platformdirs  # noqa: PLC0415 - slow to import, only off Linux

    return (
        platformdirs.user_config_dir(APP),
        platformdirs.user_data_dir(APP),
        platformdirs.user_state_dir(APP),
    )


def inputs_digest(env: Mapping[str, str] | None = None, *, config: bytes | str | None = "read") -> str:
    """A digest of everything the settings are resolved from: the config file's bytes (``config``:
    those already read, None for no file; by default the file is read here) and the environment
    they read. Two processes with the same digest resolve the same settings, so a client that finds
    its own digest in the daemon's health knows, without loading the settings (pydantic), that the
    daemon serves what it is configured for. Always computed: a digest a spawner handed down
    (``INPUTS_ENV``) is :func:`spawned_digest`'s, and only the daemon's."""
    import hashlib  # noqa: PLC0415 - not for the hook process, which never compares

    env = os.environ if env is None else env
    digest = hashlib.sha256()
    names = sorted(n for n in env if (n.startswith("MNEMO_") and n != INPUTS_ENV) or n in _INPUT_NAMES)
    for name in names:
        digest.update(f"{name}={env[name]}\0".encode("utf-8", "surrogateescape"))
    if isinstance(config, str):
        try:
            with open(layout(env).config_file, "rb") as file:
                config = file.read()
        except FileNotFoundError:
            config = None
        except OSError as exc:  # the settings would refuse it: never the digest of "no file"
            digest.update(f"unreadable {exc.errno}\0".encode())
            return digest.hexdigest()
    digest.update(b"no config\0" if config is None else b"config\0" + config)
    return digest.hexdigest()


def spawned_digest(env: Mapping[str, str] | None = None) -> str:
    """The digest of its client's inputs that the spawner gave a daemon (mnemo.client.spawn), or ""."""
    return (os.environ if env is None else env).get(INPUTS_ENV, "")


# Where the hosts keep their settings, and the model server Claude Code is pointed at (mnemo.hosts).
HOST_ENV_NAMES = ("HOME", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "ANTHROPIC_BASE_URL", "ANTHROPIC_MODEL")


def host_environment(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables that say where Claude Code and Codex keep their settings (``mnemo setup``)."""
    source = os.environ if env is None else env
    return {name: source[name] for name in HOST_ENV_NAMES if source.get(name)}


def hook_timeout_override(env: Mapping[str, str] | None = None) -> float | None:
    """``MNEMO_HOOK_TIMEOUT_S``: one deadline for every hook event instead of each event's own."""
    text = (os.environ if env is None else env).get(HOOK_TIMEOUT_ENV, "").strip()
    return float(text) if text else None


def write_private(path: str, text: str) -> None:
    """``path`` made anew, readable by this user only (0600), holding ``text``."""
    try:  # noqa: SIM105 - contextlib costs the hook process an import
        os.unlink(path)
    except FileNotFoundError:
        pass
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with open(fd, "w", encoding="utf-8") as out:
        out.write(text)


HASH_SEED_ENV = "PYTHONHASHSEED"
_HASH_SEED_NAME = "hash-seed"


def index_hash_seed(index_dir: str) -> str:
    """The string hash salt the user's daemon runs with (``PYTHONHASHSEED``), made at random once
    and kept in the index directory: a saved index finds its keys by their hashes, so the next
    daemon must hash alike (mnemo.index.image), while no one else knows the salt."""
    path = os.path.join(index_dir, _HASH_SEED_NAME)
    try:
        with open(path, encoding="ascii") as f:
            seed = f.read().strip()
        if seed.isdigit() and 0 < int(seed) < 1 << 32:
            return seed
    except (FileNotFoundError, UnicodeDecodeError):
        pass
    os.makedirs(index_dir, mode=0o700, exist_ok=True)
    seed = str(1 + int.from_bytes(os.urandom(4), "big") % ((1 << 32) - 1))
    try:
        write_private(path, seed)
    except FileExistsError:  # another spawner drew one at the same moment: theirs stands
        return index_hash_seed(index_dir)
    return seed


def salted_alike(index_dir: str) -> dict[str, str] | None:
    """The environment for a child that must hash strings as this process does (it builds the
    index's image, mnemo.index.image_build): this process's own, when it runs with its user's
    salt; None when it does not (started by hand or in a test), as a child could not match it."""
    env = dict(os.environ)
    return env if env.get(HASH_SEED_ENV) == index_hash_seed(index_dir) else None


def try_lock(path: str | os.PathLike[str]) -> int | None:
    """Take an exclusive lock on ``path`` without waiting; return the fd to keep it, or None if held."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def is_locked(path: str | os.PathLike[str]) -> bool:
    """Whether some process holds the lock on ``path`` right now."""
    if not os.path.exists(path):
        return False
    fd = try_lock(path)
    if fd is None:
        return True
    os.close(fd)
    return False


# Processes that stand between a host and what it starts: the shell a hook command runs in, uv
# running `uvx mnemo-mcp`. The host (Claude Code, Codex) is the first ancestor that is none of them.
_LAUNCHERS = frozenset({"sh", "dash", "bash", "zsh", "fish", "uv", "uvx", "env", "timeout"})


def host_pid() -> int:
    """The pid of the host that started this process (its hooks and its MCP server share it):
    the parent, or, past any shell or launcher in between, the first ancestor that is not one.
    Linux reads /proc; elsewhere it is the parent."""
    pid = os.getppid()
    for _ in range(4):
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as stat:
                fields = stat.read()
        except OSError:
            return pid
        name = fields[fields.index("(") + 1 : fields.rindex(")")]
        if name not in _LAUNCHERS:
            return pid
        parent = int(fields[fields.rindex(")") + 2 :].split()[1])
        if parent <= 1:
            return pid
        pid = parent
    return pid
