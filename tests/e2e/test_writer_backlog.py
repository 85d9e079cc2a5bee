"""A backlog through a host's CLI: 200 recorded sessions (a first import) with the writer on the
real Claude Code, against the scripted model server of tests/host_servers.py.

The calls keep the pace, the daily call cap stops the day, `mnemo status` shows the spend, and
nothing is lost: no batch fails, and what the cap left waits and is distilled once the cap allows
(here, raised, as the next UTC day would). Without the host installed it skips, as the other host
tests do.
"""

from __future__ import annotations

import json
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from mnemo.clock import utc_now
from mnemo.store import open_store
from tests.e2e.test_hosts import _host
from tests.e2e.test_writer_hosts import writer_reply
from tests.helpers import Home
from tests.host_servers import ScriptedServer, Text, running

SESSIONS = 200
CAP = 8
PER_MINUTE = 12  # a call every 5 s


def _backlog(path: Path) -> None:
    lines = []
    for n in range(SESSIONS):
        said = [("user", f"From now on service-{n} listens on port {8000 + n}."), ("assistant", "Noted.")]
        for turn, (role, text) in enumerate(said):
            line = {"id": f"ep_backlog_{n}_{turn}", "session": f"backlog-{n}", "time": "2026-11-02T10:00:00Z"}
            lines.append(line | {"who": role, "role": role, "text": text, "turn": turn})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def _status(home: Home) -> dict[str, Any]:
    return dict(json.loads(home.mnemo("status", "--json").stdout))


def _until(home: Home, done: Any, what: str, timeout_s: float = 300) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        status = _status(home)
        if done(status):
            return status
        time.sleep(0.5)
    raise AssertionError(f"{what}: not within {timeout_s:.0f} s: {_status(home)}")


def _waiting(home: Home) -> int:
    store = open_store(home.settings.store)
    try:
        return len(store.sessions_waiting(utc_now() + timedelta(days=1)))
    finally:
        store.close()


def test_a_backlog_keeps_the_pace_stops_at_the_cap_and_loses_nothing(home: Home, tmp_path: Path) -> None:
    claude = _host("claude")
    backlog = tmp_path / "backlog.jsonl"
    _backlog(backlog)
    arrived: list[float] = []

    def reply(body: dict[str, Any]) -> Any:
        arrived.append(time.monotonic())
        return writer_reply(body) or Text("?")

    with running(ScriptedServer(reply)) as server:
        user = home.with_env(
            HOME=str(tmp_path / "claude-home"),
            MNEMO_LLM_BACKEND="claude-code",
            MNEMO_LLM_HOST_COMMAND=str(claude),
            MNEMO_LLM_HOST_URL=server.url,
            MNEMO_LLM_DAILY_CALL_CAP=str(CAP),
            MNEMO_LLM_CALLS_PER_MINUTE=str(PER_MINUTE),
            MNEMO_DISTILL_IDLE_S="1",
        )
        out = user.mnemo("import", str(backlog), "--quiet").stdout
        assert f"{2 * SESSIONS} new episodes" in out, out
        status = _until(user, lambda s: s["distillation"]["paused_until"] is not None, "the cap")
        model, distillation = status["language_model"], status["distillation"]
        assert "budget is spent" in distillation["last_error"] and model["resumes_at"] is not None
        assert model["calls_today"] == CAP == len(server.posted()), (model, len(server.posted()))
        assert model["daily_call_cap"] == CAP and model["calls_per_minute"] == PER_MINUTE
        shown = user.mnemo("status").stdout
        assert f"{CAP} of {CAP} calls, at most {PER_MINUTE} a minute" in shown, shown
        # The pace: each call starts 5 s after the one before. What the server sees also carries
        # each CLI's start-up time, which varies: one gap of slack.
        gap = 60 / PER_MINUTE
        assert arrived[-1] - arrived[0] >= (CAP - 2) * gap, [round(t - arrived[0], 1) for t in arrived]
        done = distillation["batches_done"]
        assert distillation["failed_batches"] == 0
        assert done < SESSIONS
        user.mnemo("daemon", "stop")
        assert _waiting(user) == SESSIONS - done  # nothing lost: the rest waits, batch under way included

        # The next day's budget (here: a higher cap): the writer goes on where it stopped.
        more = user.with_env(MNEMO_LLM_DAILY_CALL_CAP=str(CAP + 4))
        status = _until(more, lambda s: s["distillation"]["paused_until"] is not None, "the raised cap")
        assert status["language_model"]["calls_today"] == CAP + 4
        assert status["distillation"]["failed_batches"] == 0
        more.mnemo("daemon", "stop")
        assert _waiting(more) < SESSIONS - done
        assert _waiting(more) + done + status["distillation"]["batches_done"] == SESSIONS
