"""``python -m mnemo.daemon``: run the daemon in the foreground (what the launcher starts)."""

import os

# numpy's OpenBLAS reads this once, when numpy is first imported, hence before any import that
# could bring numpy in. One thread: a question's matrices are too small to gain from a second,
# while OpenBLAS's idle workers spin for a while after every call, taking the other core from
# the hooks and recalls that come next (docs/benchmarks/recall.md, "One BLAS thread in the daemon").
# Set in the environment, it is left as it is (e.g. 2 for a bulk re-embed).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # noqa: TID251 - a library's knob, set, not read

import ctypes
import sys

from mnemo.config import load_settings
from mnemo.daemon.server import configure_file_logging, run_daemon
from mnemo.errors import MnemoError
from mnemo.paths import HASH_SEED_ENV, index_hash_seed

# glibc serves a block this large or larger from a mapping of its own, given back when freed. Left
# to itself it raises that threshold each time such a block is freed (up to 32 MB), after which a
# search's or a page's buffers come from the heap and stay resident when freed, after the first
# start's build and over recalls alike (measured in docs/benchmarks/recall.md, "Memory at a million").
# A fixed threshold keeps them mappings.
_MMAP_THRESHOLD = 1 << 20
_M_MMAP_THRESHOLD = -3  # mallopt's parameter number (malloc.h)


def _fix_mmap_threshold() -> None:
    """Where the C library has ``mallopt`` (glibc; elsewhere nothing to do)."""
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt is not None:
        mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD)


def main() -> int:
    _fix_mmap_threshold()
    try:
        settings = load_settings(is_spawned=True)
    except MnemoError as exc:
        sys.stderr.write(f"mnemo daemon: {exc}\n")
        return 1
    if settings.index_dir is not None:
        # The user's own string hash salt, so that the index saved at exit is of use to the next
        # daemon (mnemo.index.image): set before the interpreter starts, hence a new one if not.
        seed = index_hash_seed(str(settings.index_dir))
        env = dict(os.environ)  # noqa: TID251 - the interpreter's knob, passed on whole
        if env.get(HASH_SEED_ENV) != seed:
            sys.stdout.flush()
            os.execve(sys.executable, [sys.executable, "-m", "mnemo.daemon"], {**env, HASH_SEED_ENV: seed})
    configure_file_logging(settings)
    return run_daemon(settings)


if __name__ == "__main__":
    sys.exit(main())
