"""Fuzz what a host reaches — mnemo-mcp's stdin and the daemon's hook route — for a while, and
print what happened: calls made, errors answered, crashes, hangs, foreign stdout lines.

    uv run --frozen python -m tools.evals.fuzz_surfaces --minutes 10 [--load 2] [--surface hooks]

The inputs are tests/fuzzing.py's hypothesis strategies (the same as tests/daemon/test_fuzz.py,
which runs a bounded number in CI), drawn here in rounds of fresh random examples with no
shrinking: a hang or a crash is counted, its input printed (cut) with what the daemon answered,
and the server restarted; ``--failures FILE`` keeps the failing inputs whole, to replay them (a
printed input is cut at 300 bytes: a long path replayed from it is another input). Half the time
goes to each surface (all of it to one with ``--surface``). ``--load N`` runs N busy processes
beside it the whole time. The daemon's log lines at WARNING and above are printed at the end.
Everything runs in a MNEMO_HOME of its own under /tmp, removed at the end.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx2
from hypothesis import HealthCheck, Phase, given, settings

from mnemo.client.launcher import daemon_pid, ensure_daemon
from mnemo.config import Settings
from tests.fuzzing import Outcome, Tally, drive_mcp, hook_inputs, mcp_lines, post_hook_said
from tests.helpers import BIN, isolated_home
from tests.mcp_wire import RawSession

ROUND = settings(
    max_examples=200,
    deadline=None,
    database=None,
    phases=[Phase.generate],  # no shrinking: a failure is counted, not minimised
    suppress_health_check=list(HealthCheck),
)


def run_rounds(seconds: float, one_round: Callable[[], None]) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        one_round()


def fuzz_mcp(home_env: dict[str, str], stderr: Path, seconds: float, tally: Tally) -> None:
    deadline = time.monotonic() + seconds
    session = RawSession([str(BIN / "mnemo-mcp")], home_env, stderr)
    session.initialize()

    @ROUND
    @given(line=mcp_lines())
    def one_round(line: bytes) -> None:
        nonlocal session
        if time.monotonic() > deadline:
            return
        outcome, is_error = drive_mcp(session, line)
        tally.count(outcome, line, is_error)
        if outcome in (Outcome.HANG, Outcome.CRASH):
            tally.foreign_stdout += len(session.foreign_lines())
            session.close(timeout_s=5)
            session = RawSession([str(BIN / "mnemo-mcp")], home_env, stderr)
            session.initialize()

    try:
        run_rounds(seconds, one_round)
    finally:
        tally.foreign_stdout += len(session.foreign_lines())
        session.close()


def fuzz_hooks(home_settings: Settings, seconds: float, tally: Tally) -> None:
    deadline = time.monotonic() + seconds
    ensure_daemon(home_settings)
    transport = httpx2.HTTPTransport(uds=str(home_settings.socket_path))
    with httpx2.Client(transport=transport, base_url="http://mnemo") as http:

        @ROUND
        @given(sent=hook_inputs())
        def one_round(sent: tuple[str, bytes]) -> None:
            if time.monotonic() > deadline:
                return
            outcome, is_error, said = post_hook_said(http, *sent)
            tally.count(outcome, sent[0].encode() + b" " + sent[1], is_error, said)
            if outcome is Outcome.CRASH and daemon_pid(home_settings) is None:
                ensure_daemon(home_settings)  # counted; the run goes on with a new daemon

        run_rounds(seconds, one_round)


def replay_hooks(home_settings: Settings, failures: Path, tally: Tally) -> None:
    """Send the hook inputs a ``--failures`` file kept, whole, once each."""
    ensure_daemon(home_settings)
    transport = httpx2.HTTPTransport(uds=str(home_settings.socket_path))
    with httpx2.Client(transport=transport, base_url="http://mnemo") as http:
        for line in failures.read_text().splitlines():
            kept = json.loads(line)
            if kept["surface"] != "hooks":
                continue
            latin1 = kept.get("input_latin1")
            sent = latin1.encode("latin-1") if latin1 is not None else kept["input"].encode()
            event, _, body = sent.partition(b" ")
            outcome, is_error, said = post_hook_said(http, event.decode(), body)
            tally.count(outcome, sent, is_error, said)


def report(name: str, tally: Tally, seconds: float) -> dict[str, object]:
    figures = {
        "surface": name,
        "seconds": round(seconds, 1),
        "calls": tally.calls,
        "answered": tally.answered,
        "errors_answered": tally.errors,
        "rightly_unanswered": tally.silent,
        "crashes": tally.crashes,
        "hangs": tally.hangs,
        "answered_unowed": tally.wrong,
        "foreign_stdout_lines": tally.foreign_stdout,
    }
    print(
        f"{name:<10} {seconds:6.0f} s  calls {tally.calls:>7,}  answered {tally.answered:>7,} "
        f"(errors {tally.errors:,})  unanswered by rule {tally.silent:,}  crashes {tally.crashes}  "
        f"hangs {tally.hangs}  answered unowed {tally.wrong}  foreign stdout lines {tally.foreign_stdout}"
    )
    for example in tally.examples:
        print(f"    {example}")
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="total time, split between the two")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument(
        "--failures", type=Path, help="write the failing inputs here, whole (JSON lines), to replay them"
    )
    parser.add_argument("--replay", type=Path, help="send the hook inputs of a --failures file, once each")
    parser.add_argument("--load", type=int, default=0, help="busy processes beside the run")
    parser.add_argument("--surface", choices=["both", "mcp", "hooks"], default="both")
    args = parser.parse_args()
    shares = {"both": (0.5, 0.5), "mcp": (1.0, 0.0), "hooks": (0.0, 1.0)}[
        "hooks" if args.replay else args.surface
    ]
    mcp, hooks = Tally(), Tally()
    load = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(max(0, args.load))]
    try:
        with isolated_home() as home:
            started = time.monotonic()
            if shares[0]:
                fuzz_mcp(home.env, home.path / "mcp.stderr", args.minutes * 60 * shares[0], mcp)
            mcp_s = time.monotonic() - started
            started = time.monotonic()
            if args.replay:
                replay_hooks(home.settings, args.replay, hooks)
            elif shares[1]:
                fuzz_hooks(home.settings, args.minutes * 60 * shares[1], hooks)
            hooks_s = time.monotonic() - started
            figures = [report("mnemo-mcp", mcp, mcp_s), report("hooks", hooks, hooks_s)]
            logged = home.settings.log_path
            warned = [
                line
                for line in (logged.read_text(errors="replace").splitlines() if logged.exists() else [])
                if " WARNING " in line or " ERROR " in line or "Traceback" in line
            ]
            print(f"daemon log: {len(warned)} lines at WARNING or above")
            for line in warned[:20]:
                print(f"    {line[:300]}")
    finally:
        for busy in load:
            busy.kill()
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    if args.failures:
        lines = [
            # latin-1: every byte as one character, so the input is replayed byte for byte
            json.dumps({"surface": name, "input_latin1": sent.decode("latin-1"), "outcome": why})
            for name, tally in (("mnemo-mcp", mcp), ("hooks", hooks))
            for sent, why in tally.failed
        ]
        args.failures.write_text("".join(f"{line}\n" for line in lines))
    failed = sum(t.crashes + t.hangs + t.wrong + t.foreign_stdout for t in (mcp, hooks))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
