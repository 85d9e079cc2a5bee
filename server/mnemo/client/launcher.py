"""Start the daemon on demand (exactly one), stop it, and ask whether it runs.

Any client calls :func:`ensure_daemon`. If nothing answers on the socket it takes the start lock,
checks again (another client may have started it meanwhile), and starts the daemon through
:mod:`mnemo.client.spawn` with these settings.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

from mnemo.client import spawn
from mnemo.client.http import UnixHTTP
from mnemo.client.policy import health_of
from mnemo.config import Settings
from mnemo.daemon.rundir import ensure_private_dir, held_lock, is_locked, read_pid
from mnemo.errors import DaemonError

POLL_S = 0.025


def ping(settings: Settings, *, timeout_s: float = 2.0) -> dict[str, object] | None:
    """The daemon's health document, or None when nothing answers on the socket."""
    http = UnixHTTP(str(settings.socket_path))
    try:
        return health_of(http, timeout_s=timeout_s)
    finally:
        http.close()


def ensure_daemon(settings: Settings) -> dict[str, object]:
    """Return the running daemon's health, starting the daemon first if needed."""
    health = ping(settings)
    if health is None:
        ensure_private_dir(settings.run_dir)
        with held_lock(settings.start_lock_path, timeout_s=settings.daemon_start_timeout_s + 5):
            health = ping(settings)
            if health is None:
                health = _start_and_wait(settings)
    _check_same_store(settings, health)
    return health


def _check_same_store(settings: Settings, health: dict[str, object]) -> None:
    if health.get("store") != settings.store_dsn_for_display:
        raise DaemonError(
            f"the running mnemo daemon (pid {health.get('pid')}) serves {health.get('store')}, "
            f"but this client is configured for {settings.store_dsn_for_display}; "
            "stop it with `mnemo daemon stop` or use a separate MNEMO_HOME"
        )


def _start_and_wait(settings: Settings) -> dict[str, object]:
    settings.start_failure_path.unlink(missing_ok=True)
    is_spawned = False
    deadline = time.monotonic() + settings.daemon_start_timeout_s
    while time.monotonic() < deadline:
        # A daemon holding the lock is on its way up (a hook started it) or down: wait for it
        # rather than start a spare one, which would wait for the lock and take over once the
        # first stops — a daemon nobody asked for.
        if not is_spawned and not is_locked(settings.daemon_lock_path):
            spawn_detached(settings)
            is_spawned = True
        health = ping(settings)
        if health is not None:
            return health
        if settings.start_failure_path.exists():
            reason = settings.start_failure_path.read_text(encoding="utf-8").strip()
            raise DaemonError(f"the mnemo daemon could not start: {reason}")
        time.sleep(POLL_S)
    raise DaemonError(
        f"the mnemo daemon did not answer within {settings.daemon_start_timeout_s:.0f} s; "
        f"see its log at {settings.log_path}"
    )


def spawn_detached(settings: Settings) -> None:
    """Start the daemon with these settings (:mod:`mnemo.client.spawn`); DaemonError if the
    settings cannot be resolved where it starts."""
    intermediate = spawn.start(
        str(settings.log_dir), {**os.environ, **settings.as_environment()}, stderr=subprocess.PIPE
    )
    try:
        _, errors = intermediate.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        intermediate.kill()
        intermediate.communicate()  # reaped: no zombie left in a long-lived client
        raise DaemonError("could not spawn the mnemo daemon: its starter did not finish in 30 s") from None
    if intermediate.returncode != 0:
        raise DaemonError(
            f"could not spawn the mnemo daemon: {errors.decode(errors='replace')[-500:].strip()}"
        )


def daemon_pid(settings: Settings) -> int | None:
    """The pid of the running daemon, or None (a pid file whose lock nobody holds is stale)."""
    if not is_locked(settings.daemon_lock_path):
        return None
    return read_pid(settings.pid_path)


def stop_daemon(settings: Settings, *, timeout_s: float = 15.0) -> int | None:
    """Ask the running daemon to exit (SIGTERM) and wait for it; return its pid, or None if none ran."""
    pid = daemon_pid(settings)
    if pid is None:
        return None
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return None
    deadline = time.monotonic() + timeout_s
    while is_locked(settings.daemon_lock_path):
        if time.monotonic() > deadline:
            raise DaemonError(f"the mnemo daemon (pid {pid}) did not stop within {timeout_s:.0f} s")
        time.sleep(POLL_S)
    return pid
