"""The one way the daemon is started: detached, with the settings resolved for it.

:func:`start` runs ``python -m mnemo.client.spawn LOG`` and returns at once. That intermediate
process resolves the settings from the environment and config file it inherited (a client that
holds settings of its own puts them in that environment, see ``Settings.as_environment``), starts
``python -m mnemo.daemon`` in a new session with exactly those settings in its environment, and
exits. The daemon is re-parented to init: it outlives the client and never lingers as its zombie.
The hook process starts the daemon this same way, so a daemon a hook starts uses the settings a
client would resolve.

Standard library only at import: the hook process uses :func:`start`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping

DAEMON_STDERR_LOG = "daemon.stderr.log"


def start(
    log_dir: str, env: Mapping[str, str], *, stderr: int | None = None, pid_file: str = ""
) -> subprocess.Popen[bytes]:
    """Start the intermediate (see the module's docstring); its stderr goes to ``stderr`` (a
    pipe, for a caller that waits on it) or to the daemon's stderr log. ``pid_file``: where the
    intermediate writes the daemon's pid once it started it."""
    os.makedirs(log_dir, mode=0o700, exist_ok=True)
    log_path = os.path.join(log_dir, DAEMON_STDERR_LOG)
    with open(log_path, "ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "mnemo.client.spawn", log_path, pid_file],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log if stderr is None else stderr,
            env=dict(env),
            start_new_session=True,
            close_fds=True,
            cwd="/",
        )


def _run_intermediate(log_path: str, pid_file: str) -> int:
    from mnemo.config import load_settings  # noqa: PLC0415 - pydantic, in this process only
    from mnemo.errors import MnemoError  # noqa: PLC0415
    from mnemo.paths import HASH_SEED_ENV, index_hash_seed  # noqa: PLC0415

    try:
        settings = load_settings(is_spawned=True)
    except MnemoError as exc:
        sys.stderr.write(f"mnemo daemon: {exc}\n")
        return 1
    # With the digest of what they were read from, which clients compare (mnemo.paths).
    env = {**os.environ, **settings.as_environment()}
    if settings.index_dir is not None:  # the salt the daemon runs with (mnemo.daemon): no re-exec
        env[HASH_SEED_ENV] = index_hash_seed(str(settings.index_dir))
    with open(log_path, "ab") as log:
        daemon = subprocess.Popen(
            [sys.executable, "-m", "mnemo.daemon"],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            env=env,
            start_new_session=True,
            close_fds=True,
            cwd="/",
        )
    if pid_file:
        with open(pid_file, "w", encoding="ascii") as out:
            out.write(f"{daemon.pid}\n")
    return 0


if __name__ == "__main__":
    sys.exit(_run_intermediate(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else ""))
