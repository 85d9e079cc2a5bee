"""``python -m mnemo.daemon``: run the daemon in the foreground (what the launcher starts)."""

import sys

from mnemo.config import load_settings
from mnemo.daemon.server import configure_file_logging, run_daemon
from mnemo.errors import MnemoError


def main() -> int:
    try:
        settings = load_settings()
    except MnemoError as exc:
        sys.stderr.write(f"mnemo daemon: {exc}\n")
        return 1
    configure_file_logging(settings)
    return run_daemon(settings)


if __name__ == "__main__":
    sys.exit(main())
