"""The daemon runs the writer: idle sessions are distilled, a session can be asked for, a daemon
killed mid-batch (SIGKILL) redoes it exactly once. The model is the scripted server, over HTTP."""

from __future__ import annotations

import json
import os
import signal
from typing import Any

import anyio
import pytest

from mnemo.api.recall import RecallRequest
from mnemo.client.launcher import daemon_pid
from mnemo.client.typed import DaemonClient
from mnemo.episodes import EpisodeIn, Role
from mnemo.errors import StoreLockedError
from mnemo.store import ClickHouseStore, open_store
from tests.helpers import SAME, Home, is_alive, wait_until
from tests.llm_server import LLMServer

YES = {"A": 0.9, "B": 0.1}
UNRELATED = {"D": 0.9, "A": 0.05, "B": 0.03, "C": 0.02}
TUESDAY = {
    "type": "decision",
    "what": "The shop is deployed on Tuesdays",
    "entities": [{"name": "deploys", "role": "subject"}],
    "sources": ["s2-0"],
}
EPISODES = [
    EpisodeIn(
        id="s2-0", text="From now on we deploy the shop on Tuesdays.", role=Role.USER, session="s2", turn=0
    ),
    EpisodeIn(
        id="s2-1", text="Understood, deploys go out on Tuesday.", role=Role.ASSISTANT, session="s2", turn=1
    ),
]


def _script(server: LLMServer) -> None:
    server.answer(contains="Transcript:\n[s2-0]", text=json.dumps({"memories": [TUESDAY]}))
    for question in ("help a later conversation", "still be true in a month", "back the NEW memory's why"):
        server.answer(contains=question, choices=YES)
    server.answer(contains="How does the NEW memory relate", choices=UNRELATED)


def _configured(home: Home, server: LLMServer, **extra: str) -> Home:
    return home.with_env(
        MNEMO_LLM_URL=server.url, MNEMO_LLM_MODEL="scripted-1", MNEMO_EMBEDDER="use-multilingual-v3", **extra
    )


async def _wait_for(client: DaemonClient, predicate: object, timeout_s: float = 60) -> None:
    with anyio.fail_after(timeout_s):
        while not predicate(await client.status()):  # type: ignore[operator]
            await anyio.sleep(0.1)


def test_an_idle_session_is_distilled_and_judged_by_the_daemon(home: Home, llm_server: LLMServer) -> None:
    _script(llm_server)
    configured = _configured(home, llm_server, MNEMO_DISTILL_IDLE_S="0.5")

    async def run() -> tuple[str, int]:
        async with DaemonClient(configured.settings) as client:
            await client.append(EPISODES)
            await _wait_for(client, lambda s: s.distillation.batches_done >= 1)
            found = await client.recall(RecallRequest(query="what day do we deploy?"))
            status = await client.status()
            return found.memories[0].memory.what, status.language_model.by_model[0].calls

    what, calls = anyio.run(run)
    assert what == "The shop is deployed on Tuesdays"
    assert calls == 3  # the extraction, then useful? and durable? (no why to check, nothing to compare)
    shown = configured.mnemo("judge-log").stdout
    assert "add" in shown and "The shop is deployed on Tuesdays" in shown and " s2 " in shown
    assert "distilled  1 batches, 1 memories added since start" in configured.mnemo("status").stdout
    [entry] = json.loads(configured.mnemo("judge-log", "--json").stdout)["entries"]
    assert entry["detail"]["about_new"]["useful"]["probabilities"]["yes"] == pytest.approx(0.9, abs=0.01)


def test_a_distilled_session_is_not_queued_again_but_read_anew_when_asked(
    home: Home, llm_server: LLMServer
) -> None:
    """`mnemo distill` on a session distilled up to its last episode says so (it used to say
    "queued" and do nothing); `--again` reads it anew: the extraction is asked again, and what it
    says again merges into the memory that says it — nothing added, nothing closed."""
    llm_server.answer(contains="How does the NEW memory relate", choices=SAME)  # before _script's rule
    _script(llm_server)
    configured = _configured(home, llm_server, MNEMO_DISTILL_IDLE_S="3600")

    async def run() -> int:
        async with DaemonClient(configured.settings) as client:
            await client.append(EPISODES)
            assert (await client.distil("s2")).queued
            await _wait_for(client, lambda s: s.distillation.batches_done == 1 and not s.distillation.asked)
            done = await client.distil("s2")
            assert not done.queued and done.distilled and "--again" in done.reason, done
            asked = len(llm_server.requests)
            assert (await client.distil("s2", again=True)).queued
            await _wait_for(client, lambda s: s.distillation.batches_done == 2 and not s.distillation.asked)
            return asked

    asked = anyio.run(run)
    assert any("Transcript:\n[s2-0]" in p for p in llm_server.prompts()[asked:]), "the extraction, again"
    refused = configured.mnemo("distill", "s2", check=False)
    assert refused.returncode == 1 and "is distilled up to its last episode" in refused.stderr
    first, again = reversed(json.loads(configured.mnemo("judge-log", "--json").stdout)["entries"])
    assert first["action"] == "add" and again["action"] != "add" and first["batch"] != again["batch"], again
    memories = json.loads(configured.mnemo("recall", "which day do we deploy?", "--json").stdout)["memories"]
    tuesdays = [m["memory"] for m in memories if m["memory"]["what"] == TUESDAY["what"]]
    assert [m["status"] for m in tuesdays] == ["active"], tuesdays


def test_a_session_read_anew_does_not_bring_back_what_a_later_word_closed(
    home: Home, llm_server: LLMServer
) -> None:
    """`--again` after a person moved the deploy day: the session's re-read still says Tuesday
    (and the judge, asked, would call it unrelated to Thursday), but Tuesday was closed by the
    later word, so it is not added again as current; the judge log says why."""
    _script(llm_server)
    configured = _configured(home, llm_server, MNEMO_DISTILL_IDLE_S="3600")

    async def distil(again: bool) -> None:
        async with DaemonClient(configured.settings) as client:
            if not again:
                await client.append(EPISODES)
            done = (await client.status()).distillation.batches_done
            assert (await client.distil("s2", again=again)).queued
            await _wait_for(
                client, lambda s: s.distillation.batches_done == done + 1 and not s.distillation.asked
            )

    anyio.run(distil, False)

    def tuesday() -> dict[str, Any]:
        found = configured.mnemo("recall", "which day do we deploy?", "--history", "--json").stdout
        [memory] = [
            m["memory"] for m in json.loads(found)["memories"] if m["memory"]["what"] == TUESDAY["what"]
        ]
        return memory  # type: ignore[no-any-return]

    thursday = "The shop is deployed on Thursdays now, no longer on Tuesdays"
    configured.mnemo("remember", thursday, "--type", "decision", "--namespace", tuesday()["namespace"])
    closed = tuesday()
    assert closed["status"] == "closed", closed  # the newest word closed it (mnemo.distill.frames)
    anyio.run(distil, True)
    again = json.loads(configured.mnemo("judge-log", "--session", "s2", "--json").stdout)["entries"][0]
    assert again["action"] == "dropped" and f"was settled: {closed['id']} is closed" in again["reason"], again
    recalled = json.loads(configured.mnemo("recall", "which day do we deploy?", "--json").stdout)["memories"]
    current = [m["memory"]["what"] for m in recalled if m["memory"]["status"] == "active"]
    assert TUESDAY["what"] not in current and thursday in current, current


def test_a_daemon_killed_mid_distillation_redoes_the_batch_exactly_once(
    home: Home, llm_server: LLMServer
) -> None:
    _script(llm_server)
    llm_server.delay_s = 30.0  # the daemon waits for the model's answer when it is killed
    configured = _configured(home, llm_server, MNEMO_DISTILL_IDLE_S="3600")

    pid = anyio.run(_distilling, configured, llm_server)
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not is_alive(pid), timeout_s=30, what="the killed daemon to be gone")
    # The daemon is gone (its last threads may still be letting go of the store): look at what it left.
    store = _open_when_free(configured.settings.store)
    try:
        [left] = store.started_batches()
        assert left.session == "s2" and not store.batch_applied(left.id)
    finally:
        store.close()
    llm_server.delay_s = 0.0
    assert anyio.run(_restarted_recall, configured).count("The shop is deployed on Tuesdays") == 1
    [entry] = json.loads(configured.mnemo("judge-log", "--json").stdout)["entries"]
    assert entry["action"] == "add"


def test_a_stop_during_a_model_call_that_never_answers_stops_at_once_and_the_batch_is_redone(
    home: Home, llm_server: LLMServer
) -> None:
    _script(llm_server)
    llm_server.delay_s = 3600.0  # accepts, never answers; llm_timeout_s stays at its default
    configured = _configured(home, llm_server, MNEMO_DISTILL_IDLE_S="3600")

    pid = anyio.run(_distilling, configured, llm_server)
    stopped = configured.mnemo("daemon", "stop", check=False)
    assert stopped.returncode == 0, stopped.stderr
    wait_until(lambda: not is_alive(pid), timeout_s=5, what="the stopped daemon to be gone")
    log = configured.settings.log_path.read_text(errors="replace")
    assert "the daemon stopped while the model" in log or "daemon is stopping" in log
    llm_server.delay_s = 0.0
    assert anyio.run(_restarted_recall, configured).count("The shop is deployed on Tuesdays") == 1


async def _distilling(configured: Home, llm_server: LLMServer) -> int:
    """Session s2 asked for distillation, the daemon waiting on the model: its pid."""
    async with DaemonClient(configured.settings) as client:
        await client.append(EPISODES)
        assert (await client.distil("s2")).queued
    with anyio.fail_after(60):  # the daemon calls the model
        while not llm_server.requests:
            await anyio.sleep(0.05)
    async with DaemonClient(configured.settings) as client:  # asked for, not done: status counts it
        work = (await client.status()).distillation
        assert (work.running, work.asked) == ("s2", 1), work
    pid = daemon_pid(configured.settings)
    assert pid is not None
    return pid


async def _restarted_recall(configured: Home) -> list[str]:
    """A new daemon, once it has redone the batch left started: what it recalls of deploy days."""
    async with DaemonClient(configured.settings) as client:
        await client.ensure_started()
        await _wait_for(client, lambda s: s.distillation.batches_done >= 1)
        found = await client.recall(RecallRequest(query="what day do we deploy?", limit=10))
        return [hit.memory.what for hit in found.memories]


def _open_when_free(dsn: str) -> ClickHouseStore:
    opened: list[ClickHouseStore] = []

    def opens() -> bool:
        try:
            opened.append(open_store(dsn))
        except StoreLockedError:
            return False
        return True

    wait_until(opens, what="the killed daemon to let go of the store")
    return opened[0]


def test_asking_for_distillation_without_a_model_says_so(home: Home) -> None:
    result = home.mnemo("distill", "s1", check=False)
    assert result.returncode == 1 and "no language model is configured" in result.stderr
    assert home.mnemo("judge-log").stdout.strip() == "the judge has decided nothing yet"


def test_an_unusable_extraction_is_a_failure_status_shows(home: Home, llm_server: LLMServer) -> None:
    llm_server.answer(contains="Transcript:", text="Sure! Here are the memories: deploys on Tuesday.")
    configured = _configured(home, llm_server, MNEMO_DISTILL_IDLE_S="3600")

    async def run() -> None:
        async with DaemonClient(configured.settings) as client:
            await client.append(EPISODES)
            assert (await client.distil("s2")).queued
            await _wait_for(client, lambda s: s.distillation.failed_batches == 1)

    anyio.run(run)
    status = configured.mnemo("status").stdout
    assert "1 failed batch(es), see the daemon log; latest: the model's extraction was unusable" in status
    assert len(llm_server.requests) == 3  # bounded: three attempts, then the batch is recorded as failed
    assert configured.mnemo("judge-log").stdout.strip() == "the judge has decided nothing yet"


def test_a_session_the_model_refuses_fails_with_its_reason_and_the_queue_moves_on(
    home: Home, llm_server: LLMServer
) -> None:
    """The first session asked for is refused by the server (a 400 that is no overflow): its batch
    fails with the server's words, and the session asked after it is distilled all the same;
    `mnemo status` shows the failure and the context the server said it runs."""
    _script(llm_server)
    llm_server.serve_json("/props", {"default_generation_settings": {"n_ctx": 4096}})
    refused = [EpisodeIn(id="b-0", text="Keep the API stable.", role=Role.USER, session="bad", turn=0)]
    llm_server.fail_next(2, status=400)  # the extraction, with its JSON schema and then without
    configured = _configured(home, llm_server, MNEMO_DISTILL_IDLE_S="3600")

    async def run() -> None:
        async with DaemonClient(configured.settings) as client:
            await client.append([*refused, *EPISODES])
            assert (await client.distil("bad")).queued and (await client.distil("s2")).queued
            await _wait_for(
                client, lambda s: s.distillation.failed_batches == 1 and s.distillation.memories_added
            )

    anyio.run(run)
    status = configured.mnemo("status").stdout
    assert "1 failed batch(es), see the daemon log; latest: the model at" in status
    assert "answered HTTP 400" in status
    assert "the model's context: 4,096 tokens, from the server (/props)" in status
    recalled = json.loads(configured.mnemo("recall", "which day do we deploy?", "--json").stdout)
    assert recalled["memories"][0]["memory"]["what"] == TUESDAY["what"]
