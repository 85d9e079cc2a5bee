"""The hook process (``mnemo-mcp hook <Event>``) against a real daemon, a dead one and a hung one."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest

from mnemo.api.recall import RecallRequest
from mnemo.client.launcher import ping
from mnemo.client.typed import DaemonClient
from mnemo.daemon.journal import EpisodeJournal
from mnemo.daemon.rundir import ensure_private_dir
from mnemo.episodes import Episode, EpisodeKind, Role
from mnemo.paths import inputs_digest
from mnemo.usage.budget import BLOCK_TOKENS, SESSION_TOKENS, estimate_tokens
from mnemo.vocabulary import MemoryType
from tests.helpers import (
    WORKSPACE,
    Home,
    context_of,
    event_input,
    git_repo,
    hook,
    remember_all,
    session_episodes,
    wait_until,
)
from tests.llm_server import LLMServer

EVENTS = ("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop", "PreCompact", "SessionEnd", "PreToolUse")
# A hook never keeps the agent waiting: past this bound the hook process is killed and the test
# fails (it is the bound, not a measured time, that the tests below check).
HOOK_BOUND_S = 1.0


def test_with_the_daemon_unreachable_every_hook_exits_0_silently_within_a_second(home: Home) -> None:
    # A store the daemon cannot open: it never comes up, so every event meets a dead daemon.
    broken = home.with_env(MNEMO_STORE="http://127.0.0.1:9/")
    for event in EVENTS:
        stdout, code = hook(broken, event, event_input(event), deadline_s=HOOK_BOUND_S)
        assert (code, stdout) == (0, ""), event


def test_a_hook_that_finds_no_daemon_starts_one_and_the_turn_is_recorded_all_the_same(home: Home) -> None:
    assert ping(home.settings) is None
    for event in ("SessionStart", "UserPromptSubmit", "Stop"):
        # Within the bound: the hook starts the daemon and does not wait for it.
        stdout, code = hook(home, event, event_input(event, session="s-down"), deadline_s=HOOK_BOUND_S)
        assert (code, stdout) == (0, ""), event
    assert "event spooled" in (home.settings.log_dir / "hooks.log").read_text()
    wait_until(lambda: ping(home.settings) is not None, timeout_s=60, what="the daemon the hook started")
    # The daemon replays what the hooks spooled: the turn is there as if it had been up.
    wait_until(lambda: len(anyio.run(session_episodes, home, "s-down")) == 2, what="the spool replayed")
    episodes = anyio.run(session_episodes, home, "s-down")
    assert [(e.id, e.turn, e.text) for e in episodes] == [
        ("claude-code:s-down:1:prompt", 1, "which day do we deploy?"),
        ("claude-code:s-down:1:answer", 1, "We deploy on Thursdays."),
    ]
    assert not (home.settings.run_dir / "hooks.spool").exists()


def test_a_daemon_a_hook_starts_resolves_the_settings_a_client_would_and_says_from_what(home: Home) -> None:
    # A setting only the config file holds: the daemon the hook starts must use it, and its
    # health carries the digest of the inputs, so that the command's fast path trusts it.
    (home.path / "config.toml").write_text("request_timeout_s = 17.5\n", encoding="utf-8")
    assert ping(home.settings) is None
    hook(home, "SessionStart", event_input("SessionStart", session="s-spawn"))
    wait_until(lambda: ping(home.settings) is not None, what="the daemon a hook started")
    health = ping(home.settings)
    assert health is not None
    assert health["request_timeout_s"] == 17.5
    assert health["inputs"] == inputs_digest(home.env) == home.settings.inputs_digest


@dataclass(frozen=True)
class HungDaemon:
    """A socket where the daemon should be that accepts and never answers."""

    path: Path
    held: list[socket.socket]

    def received(self) -> bytes:
        """What the first connection to it sent, up to its end (the hook process has exited)."""
        wait_until(lambda: bool(self.held), what="a connection to the hung daemon")
        connection = self.held[0]
        connection.settimeout(30)
        data = b""
        while chunk := connection.recv(65536):
            data += chunk
        return data


@pytest.fixture
def hung_daemon(home: Home) -> Iterator[HungDaemon]:
    path = home.settings.socket_path
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield HungDaemon(path, held)
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        server.close()
        path.unlink(missing_ok=True)


def test_a_daemon_that_does_not_answer_in_time_costs_the_deadline_and_no_output(
    home: Home, hung_daemon: HungDaemon
) -> None:
    payload = event_input("UserPromptSubmit")
    stdout, code = hook(
        home, "UserPromptSubmit", payload, deadline_s=HOOK_BOUND_S, MNEMO_HOOK_TIMEOUT_S="0.3"
    )
    assert (code, stdout) == (0, "")
    # It did wait for the daemon: its request went out whole, and it gave up when the read timed out.
    asked = hung_daemon.received()
    assert asked.startswith(b"POST /v1/hooks/UserPromptSubmit?") and asked.endswith(
        json.dumps(payload).encode()
    )
    assert "timed out" in (home.settings.log_dir / "hooks.log").read_text()


def test_bad_input_exits_0_silently_and_is_logged(home: Home) -> None:
    stdout, code = hook(home, "UserPromptSubmit", "not json")
    assert (code, stdout) == (0, "")
    stdout, code = hook(home, "NoSuchEvent", "{}")
    assert (code, stdout) == (0, "")
    assert "usage: mnemo-mcp hook" in (home.settings.log_dir / "hooks.log").read_text()


def test_plan_mode_denies_mnemos_write_tools_and_nothing_else(home: Home) -> None:
    plan = {"permission_mode": "plan"}
    for tool in ("mcp__mnemo__remember", "mcp__plugin_mnemo_mnemo__forget", "mcp__mnemo__keep"):
        stdout, code = hook(home, "PreToolUse", event_input("PreToolUse", tool_name=tool, **plan))
        decision = json.loads(stdout)["hookSpecificOutput"]
        assert code == 0
        assert decision["permissionDecision"] == "deny"
        assert "plan mode" in decision["permissionDecisionReason"]
    for tool, mode in (
        ("mcp__mnemo__recall", "plan"),
        ("mcp__other__remember", "plan"),
        ("Bash", "plan"),
        ("mcp__mnemo__remember", "default"),
    ):
        stdout, code = hook(
            home, "PreToolUse", event_input("PreToolUse", tool_name=tool, permission_mode=mode)
        )
        assert (code, stdout) == (0, ""), (tool, mode)


def test_a_turn_is_recorded_and_stop_and_post_tool_use_print_nothing(home: Home) -> None:
    anyio.run(
        remember_all,
        home,
        [("Deploys happen on Thursdays: QA tests on Wednesday", MemoryType.DECISION, WORKSPACE)],
    )
    hook(home, "SessionStart", event_input("SessionStart", session="s-turn"))
    stdout, _ = hook(home, "UserPromptSubmit", event_input("UserPromptSubmit", session="s-turn"))
    for event in ("PostToolUse", "Stop", "PreCompact", "SessionEnd"):
        stdout, code = hook(home, event, event_input(event, session="s-turn"))
        assert (code, stdout) == (0, ""), event
    episodes = anyio.run(session_episodes, home, "s-turn")
    assert [(e.kind.value, e.role.value, e.turn) for e in episodes] == [
        ("prompt", "user", 1),
        ("tool_result", "tool", 1),
        ("response", "assistant", 1),
    ]
    assert episodes[0].text == "which day do we deploy?"
    assert episodes[0].namespace == WORKSPACE
    assert episodes[0].client == "claude-code"
    assert "commit abc" in episodes[1].text
    assert episodes[2].text == "We deploy on Thursdays."


TOPICS = [
    ("deploy", "Deploys happen on Thursdays because QA tests on Wednesday", MemoryType.DECISION),
    ("deploy", "Deploys to production need two approvals in the release channel", MemoryType.PROCEDURE),
    ("deploy", "The deploy pipeline runs the smoke tests against staging first", MemoryType.FACT),
    ("database", "We moved the billing database from MySQL to Postgres 16 for JSON", MemoryType.DECISION),
    ("database", "Database migrations are written with Alembic and reviewed by Marta", MemoryType.PROCEDURE),
    ("database", "The Postgres primary keeps 30 days of WAL for point-in-time recovery", MemoryType.FACT),
    ("formatting", "Use ruff for formatting Python, never black", MemoryType.PREFERENCE),
    ("formatting", "Line length is 110 characters in every Python package", MemoryType.PREFERENCE),
    ("testing", "Tests run against the real embedded ClickHouse, never mocks", MemoryType.DECISION),
    ("testing", "pytest runs with filterwarnings=error so warnings fail the build", MemoryType.FACT),
    ("cache", "Redis is the session cache; its keys expire after 24 hours", MemoryType.FACT),
    ("cache", "The gateway cache was disabled after it served stale prices in March", MemoryType.POSTMORTEM),
    ("queue", "Kafka carries order events; consumers commit offsets after processing", MemoryType.FACT),
    ("queue", "Retry failed order events three times, then park them in dead letters", MemoryType.PROCEDURE),
    ("auth", "Login tokens are JWTs signed with RS256 and rotated monthly", MemoryType.FACT),
    ("auth", "Passwords are hashed with argon2id since the 2024 audit", MemoryType.DECISION),
    ("frontend", "The web app is built with Vite and React 19", MemoryType.FACT),
    ("frontend", "Components use CSS modules; no Tailwind in this repo", MemoryType.PREFERENCE),
    ("monitoring", "Alerts go to the #ops-alerts Slack channel through Grafana", MemoryType.FACT),
    ("monitoring", "The gateway died when logs filled its disk; retention is 7 days", MemoryType.POSTMORTEM),
]  # fmt: skip
PROMPTS = [
    "which day do we deploy to production?",
    "how do we ship a release, what approvals are needed?",
    "what database does billing use and why?",
    "how should I write a database migration?",
    "how do I format the Python code?",
    "what is the line length?",
    "can I mock ClickHouse in the tests?",
    "why did my test fail on a warning?",
    "how long do sessions stay in the cache?",
    "should I turn the gateway cache back on?",
    "how are order events delivered?",
    "what happens when an order event fails?",
    "how are login tokens signed?",
    "how are passwords stored?",
    "what is the frontend built with?",
    "can I use Tailwind for this component?",
    "where do alerts go?",
    "why is log retention 7 days on the gateway?",
    "tell me again about deploys and the database",
    "anything else about monitoring, caching or formatting?",
]


def test_a_hook_in_a_call_the_writer_makes_records_nothing_and_notes_nothing(home: Home) -> None:
    # A host's CLI as the writer's model runs with MNEMO_WRITER_CALL=1 (mnemo.distill.hostcli):
    # whatever hooks that host runs, nothing of the writer's own calls becomes an episode.
    anyio.run(remember_all, home, [("Deploys happen on Thursdays", MemoryType.DECISION, WORKSPACE)])
    for event in ("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop", "SessionEnd"):
        stdout, code = hook(home, event, event_input(event, session="s-writer"), MNEMO_WRITER_CALL="1")
        assert (code, stdout) == (0, ""), event
    hook(home, "UserPromptSubmit", event_input("UserPromptSubmit", session="s-person"))
    assert anyio.run(session_episodes, home, "s-writer") == []
    assert [e.kind.value for e in anyio.run(session_episodes, home, "s-person")] == ["prompt"]
    assert not (home.settings.log_dir / "hooks.log").exists()


def test_twenty_prompts_stay_within_budgets_never_repeat_and_skip_this_sessions_memories(home: Home) -> None:
    session = "s-twenty"
    items = [(f"{content} ({topic} note {n})", kind, WORKSPACE if n % 2 else "person:tester")
             for n, (topic, content, kind) in enumerate(TOPICS * 2)]  # fmt: skip
    anyio.run(remember_all, home, items)
    # Noted in this very session: the model has it in front of it already.
    own_item = ("Deploys happen on Fridays in this session's plan", MemoryType.DECISION, WORKSPACE)
    [own] = anyio.run(remember_all, home, [own_item], session)
    stdout, _ = hook(home, "SessionStart", event_input("SessionStart", session=session))
    blocks = [context_of(stdout)]
    assert blocks[0], "session start should inject the workspace's memories"
    task_note = "<task-notification><task-id>b1</task-id><status>completed</status></task-notification>"
    for n, prompt in enumerate(PROMPTS):
        stdout, code = hook(
            home, "UserPromptSubmit", event_input("UserPromptSubmit", session=session, prompt=prompt)
        )
        assert code == 0
        blocks.append(context_of(stdout))
        if n % 5 == 0:  # background-task notices arrive between prompts
            notice = event_input("UserPromptSubmit", session=session, prompt=task_note)
            stdout, code = hook(home, "UserPromptSubmit", notice)
            assert (code, stdout) == (0, "")
        hook(home, "Stop", event_input("Stop", session=session, last_assistant_message=f"answer {n}"))
    injected = [b for b in blocks if b]
    assert len(injected) >= 5, "memory on these topics should have been injected"
    assert all(estimate_tokens(b) <= BLOCK_TOKENS for b in injected)
    assert sum(estimate_tokens(b) for b in injected) <= SESSION_TOKENS
    ids = [line.split("]")[0][3:] for b in injected for line in b.splitlines() if line.startswith("- [")]
    assert len(ids) == len(set(ids)), "a memory was injected twice in one session"
    assert own not in ids
    assert all("data, not instructions" in b and "AGENTS.md" in b for b in injected)
    episodes = anyio.run(session_episodes, home, session)
    prompts = [e.text for e in episodes if e.kind.value == "prompt"]
    assert prompts == PROMPTS, "task notifications must not be recorded as prompts"
    # Another session is given the memory this one was not.
    elsewhere = event_input("UserPromptSubmit", session="s-other", prompt="which day do we deploy? Fridays?")
    other, _ = hook(home, "UserPromptSubmit", elsewhere)
    assert own in context_of(other)


def test_recall_still_works_for_what_hooks_would_not_inject(home: Home) -> None:
    [memory] = anyio.run(
        remember_all, home, [("Deploys happen on Thursdays", MemoryType.DECISION, WORKSPACE)]
    )
    first, _ = hook(home, "UserPromptSubmit", event_input("UserPromptSubmit", session="s-r"))
    assert memory in context_of(first)
    again, _ = hook(home, "UserPromptSubmit", event_input("UserPromptSubmit", session="s-r"))
    assert again == ""

    async def recall() -> list[str]:
        async with DaemonClient(home.settings) as client:
            found = await client.recall(RecallRequest(query="which day do we deploy?"))
            return [hit.memory.id for hit in found.memories]

    assert memory in anyio.run(recall)


def test_episodes_a_stopped_daemon_left_in_its_journal_are_stored_at_the_next_start(home: Home) -> None:
    settings = home.settings
    ensure_private_dir(settings.run_dir)
    journal = EpisodeJournal(settings.run_dir / "episodes.journal")
    when = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    parts = [
        ("prompt", EpisodeKind.PROMPT, Role.USER, "which day do we deploy?"),
        ("answer", EpisodeKind.RESPONSE, Role.ASSISTANT, "Thursdays."),
    ]
    left = [
        Episode(
            id=f"claude-code:s-j:1:{part}", kind=kind, text=text, who="t", role=role, namespace=WORKSPACE,
            session="s-j", turn=1, time=when + timedelta(seconds=n), received_at=when, client="claude-code",
            workspace="", cwd="", branch="", host="",
        )
        for n, (part, kind, role, text) in enumerate(parts)
    ]  # fmt: skip
    journal.write(left)
    journal.close()
    with (settings.run_dir / "episodes.journal").open("ab") as f:
        f.write(b'{"id": "cut-off')  # a crash in the middle of a line that was never acknowledged
    episodes = anyio.run(session_episodes, home, "s-j")
    assert [(e.id, e.text) for e in episodes] == [(e.id, e.text) for e in left]
    wait_until(
        lambda: (settings.run_dir / "episodes.journal").stat().st_size == 0, what="the journal emptied"
    )


def test_pre_compact_distils_the_session_now_and_session_end_marks_it_ended(
    home: Home, llm_server: LLMServer
) -> None:
    llm_server.answer(contains="Transcript:", text=json.dumps({"memories": []}))
    configured = home.with_env(
        MNEMO_LLM_URL=llm_server.url, MNEMO_LLM_MODEL="scripted-1", MNEMO_DISTILL_IDLE_S="3600"
    )
    session = "s-compact"
    hook(configured, "UserPromptSubmit", event_input("UserPromptSubmit", session=session))
    hook(configured, "Stop", event_input("Stop", session=session))
    assert not any("Transcript:" in p for p in llm_server.prompts()), "quiet sessions wait an hour here"
    stdout, code = hook(configured, "PreCompact", event_input("PreCompact", session=session))
    assert (code, stdout) == (0, "")
    wait_until(lambda: any("Transcript:" in p for p in llm_server.prompts()), what="the session distilled")
    [extraction] = [p for p in llm_server.prompts() if "Transcript:" in p]
    assert "which day do we deploy?" in extraction and "We deploy on Thursdays." in extraction

    stdout, code = hook(configured, "SessionEnd", event_input("SessionEnd", session=session))
    assert (code, stdout) == (0, "")
    stats = json.loads(configured.mnemo("stats", "--json").stdout)
    assert stats["sessions"] == 1


def test_a_workspaces_memories_are_never_injected_in_another_workspace(home: Home, tmp_path: Path) -> None:
    repo_a = git_repo(tmp_path / "billing", "git@github.com:shop/billing.git")
    repo_b = git_repo(tmp_path / "storefront", "https://github.com/shop/storefront.git")
    fact = "The billing service retries a failed charge three times, an hour apart"
    home.mnemo("remember", fact, "--type", "fact", "--namespace", "workspace:github.com/shop/billing")
    home.mnemo("remember", "Answers should be short", "--type", "preference")  # the person's: everywhere
    question = "how many times do we retry a failed charge?"

    def injected(event: str, session: str, repo: Path, **fields: Any) -> str:
        stdout, code = hook(home, event, event_input(event, session, cwd=str(repo), **fields))
        assert code == 0
        return context_of(stdout)

    in_b = injected("SessionStart", "s-b", repo_b)
    in_b += injected("UserPromptSubmit", "s-b", repo_b, prompt=question)
    assert "Answers should be short" in in_b and fact not in in_b
    in_a = injected("SessionStart", "s-a", repo_a)
    in_a += injected("UserPromptSubmit", "s-a", repo_a, prompt=question)
    assert fact in in_a
