"""mnemo's lab: benchmarks, evaluations, fitting and the local model servers (tools/README.md).

Each tool runs as a module from the repository root, ``uv run --frozen python -m tools.<group>.<tool>``."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
