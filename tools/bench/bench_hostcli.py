"""What one writer's call through a host's CLI costs beyond the model: the CLI's start, its request,
its answer read back (mnemo.distill.hostcli), against the scripted model server of
tests/host_servers.py, which answers at once. Median and p95 of N calls per CLI, interleaved.

    python -m tools.bench.bench_hostcli --hosts .hosts/node_modules/.bin --calls 21
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mnemo.config import load_settings
from mnemo.distill.hostcli import HostLLM
from mnemo.distill.llm import Message
from tests.host_servers import Block, ScriptedServer, Text, ToolCall, running

SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"],
          "additionalProperties": False}  # fmt: skip
CLIS = {"claude-code": "claude", "codex": "codex"}


class _Unmetered:
    """Nothing to cap or record here: the figure is the call's time."""

    def check(self) -> None:
        pass

    def record(self, *spent: object) -> None:
        pass


def _reply(body: dict[str, Any]) -> Block:
    if any(t.get("name") == "StructuredOutput" for t in body.get("tools", [])):
        return ToolCall("StructuredOutput", {"answer": "yes"}, id="toolu_bench")
    return Text('{"answer": "yes"}')


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--hosts", type=Path, default=Path(".hosts/node_modules/.bin"), help="where claude and codex are"
    )
    parser.add_argument("--calls", type=int, default=21, help="calls per CLI")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="mnemo-bench-hostcli-"))
    times: dict[str, list[float]] = {backend: [] for backend in CLIS}
    with running(ScriptedServer(_reply)) as server:
        models = {}
        for backend, name in CLIS.items():
            env = {"MNEMO_HOME": str(scratch / "mnemo"), "MNEMO_LLM_BACKEND": backend,
                   "MNEMO_LLM_HOST_COMMAND": str(args.hosts.resolve() / name),
                   "MNEMO_LLM_HOST_MODEL": "bench",
                   "MNEMO_LLM_HOST_URL": server.url + ("/v1" if backend == "codex" else "")}  # fmt: skip
            models[backend] = HostLLM(load_settings({**os.environ, **env}), _Unmetered())
        os.environ["HOME"] = os.environ["CODEX_HOME"] = str(scratch)  # the CLIs' own files: scratch
        asked = [Message("system", "Answer."), Message("user", "yes?")]
        for _ in range(args.calls):
            for backend, llm in models.items():  # interleaved: a noisy moment hits both
                started = time.perf_counter()
                llm.chat(asked, purpose="bench", max_tokens=5, schema=SCHEMA)
                times[backend].append(time.perf_counter() - started)
        for llm in models.values():
            llm.close()
    print(f"{'CLI':<12}{'calls':>6}{'median s':>10}{'p95 s':>8}")
    for backend, spent in times.items():
        p95 = statistics.quantiles(spent, n=20)[-1] if len(spent) >= 2 else spent[0]
        print(f"{backend:<12}{len(spent):>6}{statistics.median(spent):>10.2f}{p95:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
