"""Running the lab's tools (tools/) from tests, as tools/README.md runs them: ``python -m
tools.<group>.<tool>`` with the repository root on the path, whatever the working directory."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

from tests.helpers import REPO


def tool_command(module: str, *args: str) -> list[str]:
    """``module`` is the tool's dotted name, e.g. ``tools.fit.fit_calibration``."""
    return [sys.executable, "-m", module, *args]


def tool_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``env`` (this process's environment when None) with the repository root on PYTHONPATH."""
    base = dict(os.environ if env is None else env)
    return base | {"PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), base.get("PYTHONPATH")]))}
