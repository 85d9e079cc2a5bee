"""The writer never stalls: the model's context asked of its server, every request sized to it,
a stretch too long or too slow read again in halves, a request refused for another reason failing
its batch with the reason while the writer moves on, and a turn that ended in a host's error
not read — through the real openai client against the scripted model server (which stands in
for llama.cpp's, vLLM's, LM Studio's and Ollama's context answers; tests/llm_server.py)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mnemo.config import Settings
from mnemo.distill.decide import DecisionModel
from mnemo.distill.extract import extract
from mnemo.distill.llm import LLM
from mnemo.distill.meter import TokenMeter
from mnemo.distill.shown import TOOLS_PER_TURN, answered, stretches, transcript
from mnemo.distill.sizing import TIMEOUT_CAP, Context, ModelLimits
from mnemo.distill.writer import MAX_TIMEOUTS, Distiller
from mnemo.embed.fallback import FALLBACK_ID
from mnemo.episodes import Episode, EpisodeIn, EpisodeIntake, Role
from mnemo.errors import ModelTimeoutError
from mnemo.index.live import RecallEngine
from mnemo.secrets import SecretRedactor
from mnemo.store import ClickHouseStore
from tests.helpers import Home, record_turns
from tests.llm_server import LLMServer

INTAKE = EpisodeIntake(max_chars=100_000, default_namespace="workspace:shop", redactor=SecretRedactor())
START = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def _settings(home: Home, server: LLMServer, **env: str) -> Settings:
    return home.with_env(
        MNEMO_LLM_URL=server.url, MNEMO_LLM_MODEL="scripted-1", MNEMO_EMBEDDER=FALLBACK_ID, **env
    ).settings


def _llm(home: Home, server: LLMServer, store: ClickHouseStore, **env: str) -> LLM:
    return LLM(_settings(home, server, **env), TokenMeter(store, 0))


def _session(count: int, chars: int, turns: int = 1) -> list[Episode]:
    """``turns`` turns: a person's line, then ``count`` tool results of ``chars`` characters and an
    answer; the first turn's person's line states the note."""
    output = "\n".join(
        f"drwxr-xr-x 2 ana ana 4096 Mar 2 09:{j % 60:02} build-{j}" for j in range(chars // 50)
    )
    lines = []
    for turn in range(1, turns + 1):
        said = (
            "From now on the release notes live in docs/releases, not the wiki." if turn == 1 else "ok, next"
        )
        lines += [(f"p{turn}" if turn > 1 else "p", Role.USER, said)]
        lines += [(f"t{turn}.{i}", Role.TOOL, f"Bash ls build/{i}\n{output}") for i in range(count)]
        lines += [(f"a{turn}", Role.ASSISTANT, f"Listed build {turn}.")]
    return [
        INTAKE.accept(EpisodeIn(id=f"ep_{eid}", text=text, role=role, session="s1", turn=1))
        for eid, role, text in lines
    ]


NOTE = {"type": "decision", "what": "Release notes live in docs/releases", "sources": ["ep_p"]}


def _extraction(prompt: str) -> str:
    """The scripted model's answer: the note when the person's line is shown, else nothing."""
    return json.dumps({"memories": [NOTE] if "[ep_p]" in prompt else []})


@pytest.mark.parametrize(
    ("path", "method", "body", "expected"),
    [
        pytest.param("/props", "GET", {"default_generation_settings": {"n_ctx": 4096}}, 4096, id="llama.cpp"),
        pytest.param(
            "/v1/models", "GET", {"data": [{"id": "scripted-1", "max_model_len": 32768}]}, 32768, id="vllm"
        ),
        pytest.param(
            "/api/v0/models/scripted-1", "GET", {"loaded_context_length": 12000}, 12000, id="lm-studio"
        ),
        pytest.param(
            "/api/ps",
            "GET",
            {"models": [{"name": "scripted-1", "context_length": 6144}]},
            6144,
            id="ollama-ps",
        ),
        pytest.param(
            "/api/show",
            "POST",
            {"parameters": "num_ctx 16384\nstop x", "model_info": {}},
            16384,
            id="ollama-num-ctx",
        ),
        pytest.param(
            "/api/show",
            "POST",
            {"parameters": "", "model_info": {"qwen2.context_length": 32768}},
            4096,
            id="ollama-default",
        ),
    ],
)
def test_the_context_is_asked_of_the_server_in_the_shape_it_answers(
    home: Home,
    llm_server: LLMServer,
    store: ClickHouseStore,
    path: str,
    method: str,
    body: Any,
    expected: int,
) -> None:
    llm_server.serve_json(path, body, method)
    limits = _llm(home, llm_server, store).limits
    assert limits.context_tokens == expected
    assert path.rsplit("/", maxsplit=1)[-1] in limits.context.source


def test_a_server_that_says_nothing_gets_the_default_and_the_setting_is_taken_unasked(
    home: Home, llm_server: LLMServer, store: ClickHouseStore
) -> None:
    assert _llm(home, llm_server, store).limits.context_tokens == 8192
    llm_server.serve_json("/props", {"default_generation_settings": {"n_ctx": 4096}})
    limits = _llm(home, llm_server, store, MNEMO_LLM_CONTEXT_TOKENS="2048").limits
    assert (limits.context_tokens, limits.context.source) == (2048, "llm_context_tokens")


def test_a_request_is_given_the_time_its_size_needs_but_never_past_the_cap() -> None:
    limits = ModelLimits(Context(8_192, "llm_context_tokens"), 120.0)
    assert limits.timeout_s(10, 10) == 120.0  # small: the setting
    needed = limits.timeout_s(4_000, 1_000)  # at the slow defaults: 100 s to read, 200 s to write
    assert needed == pytest.approx(600.0)
    assert limits.timeout_s(400_000, 100_000) == TIMEOUT_CAP * 120.0  # a server that hangs is cut off


def test_a_long_session_is_read_in_stretches_that_each_fit_the_context(
    home: Home, llm_server: LLMServer, store: ClickHouseStore
) -> None:
    llm_server.serve_json("/props", {"default_generation_settings": {"n_ctx": 2048}})
    llm_server.context_tokens = 2048  # a longer request would be refused
    llm_server.answer(contains="Transcript:", text=_extraction)
    episodes = _session(count=3, chars=2_000, turns=30)
    [draft] = extract(_llm(home, llm_server, store), episodes)
    assert draft.memory.what == NOTE["what"]
    asked = [json.dumps(r["messages"]) for r in llm_server.requests]
    assert len(asked) > 3
    # Every episode was read once, in order, and every request fit beside its reply.
    shown = [e.id for e in episodes if any(f"[{e.id}]" in a for a in asked)]
    assert shown == [e.id for e in episodes]
    for body in llm_server.requests:
        prompt = "\n".join(m["content"] for m in body["messages"])
        assert len(prompt) // 4 + body["max_tokens"] <= 2048


def test_of_a_turns_many_tool_runs_those_nearest_to_what_was_said_are_shown() -> None:
    said = INTAKE.accept(EpisodeIn(id="ep_p", text="Why does the deploy of billing fail?", role=Role.USER))
    runs = [
        INTAKE.accept(EpisodeIn(id=f"ep_t{i}", text=f"Bash ls\nfile-{i}.txt", role=Role.TOOL))
        for i in range(20)
    ]
    runs[13] = INTAKE.accept(
        EpisodeIn(id="ep_t13", text="Bash deploy billing\nbilling deploy fails: quota", role=Role.TOOL)
    )
    answer = INTAKE.accept(
        EpisodeIn(id="ep_a", text="The billing deploy fails on quota.", role=Role.ASSISTANT)
    )
    limits = _llm_limits()
    [stretch] = stretches([said, *runs, answer], limits, 5_000)
    ids = [e.id for e in stretch]
    assert ids[0] == "ep_p" and ids[-1] == "ep_a" and "ep_t13" in ids
    assert len(ids) == 2 + TOOLS_PER_TURN


def _llm_limits() -> ModelLimits:
    return ModelLimits(Context(8192, "test"), 120.0)


def test_a_tool_output_is_shown_as_its_call_and_the_lines_that_share_words_with_what_was_said() -> None:
    output = "\n".join([f"noise line {i} " + "z" * 50 for i in range(200)] + ["docs/releases is missing"])
    episodes = [
        INTAKE.accept(EpisodeIn(id="ep_p", text="Where do the release notes live?", role=Role.USER)),
        INTAKE.accept(EpisodeIn(id="ep_t", text="Bash ls docs\n" + output, role=Role.TOOL)),
    ]
    line = transcript(episodes).splitlines()[1]
    assert line.startswith("[ep_t] tool: Bash ls docs | noise line 0")
    assert "docs/releases is missing" in line and len(line) < 700


def test_a_stretch_the_server_refuses_as_too_long_is_read_again_in_halves(
    home: Home, llm_server: LLMServer, store: ClickHouseStore
) -> None:
    # The server says 8,192 tokens but serves 1,500: what an estimate that runs short meets.
    llm_server.serve_json("/props", {"default_generation_settings": {"n_ctx": 8192}})
    llm_server.context_tokens = 1_500
    llm_server.answer(contains="Transcript:", text=_extraction)
    episodes = _session(count=3, chars=2_000, turns=10)
    [draft] = extract(_llm(home, llm_server, store), episodes)
    assert draft.memory.sources == ["ep_p"]
    prompts = llm_server.prompts()
    assert sum("[ep_p]" in p for p in prompts) >= 2  # refused once, then read in a half
    assert all(any(f"[{e.id}]" in p and len(p) // 4 <= 1_500 for p in prompts) for e in episodes)


@pytest.fixture
def writer(home: Home, llm_server: LLMServer, store: ClickHouseStore) -> Iterator[Distiller]:
    settings = _settings(home, llm_server, MNEMO_LLM_MAX_RETRIES="0")
    llm = LLM(settings, TokenMeter(store, 0))
    yield Distiller(store, RecallEngine(None), llm, DecisionModel(llm, settings))


def _record(store: ClickHouseStore, session: str, *turns: tuple[Role, str]) -> None:
    record_turns(store, session, list(turns), START)


def test_a_request_refused_for_another_reason_fails_its_batch_and_the_writer_moves_on(
    llm_server: LLMServer, store: ClickHouseStore, writer: Distiller
) -> None:
    _record(store, "bad", (Role.USER, "We keep the audit log for 90 days."), (Role.ASSISTANT, "Noted."))
    _record(store, "good", (Role.USER, "We keep the access log for 30 days."), (Role.ASSISTANT, "Noted."))
    llm_server.fail_next(2, status=400)  # with the JSON schema, then without (a refused schema)
    [failed] = writer.distil_session("bad")
    assert failed.batch.id in {b.id for b in store.failed_batches()} and not failed.added
    [stored] = store.failed_batches()
    assert "HTTP 400" in stored.error and "scripted failure" in stored.error
    assert store.started_batches() == []
    llm_server.answer(contains="Transcript:", text='{"memories": []}')
    [done] = writer.distil_session("good")
    assert done.batch.id != failed.batch.id and store.session_cursor("good") is not None


def test_a_stretch_too_slow_to_answer_is_read_in_halves_and_a_batch_that_keeps_timing_out_fails(
    home: Home, llm_server: LLMServer, store: ClickHouseStore
) -> None:
    llm_server.answer(contains="Transcript:", text=_extraction)
    llm = _llm(home, llm_server, store, MNEMO_LLM_TIMEOUT_S="2", MNEMO_LLM_MAX_RETRIES="0")
    llm.limits.observe(
        1, 1, 1, 0.01, {"prompt_n": 1000, "prompt_ms": 1, "predicted_n": 100, "predicted_ms": 1}
    )

    def slow_when_long(body: dict[str, Any]) -> None:
        if len(json.dumps(body["messages"])) > 4_000:
            time.sleep(3)  # the server is held: a short request after it waits at most a second

    llm_server.on_request = slow_when_long
    episodes = _session(count=3, chars=1_500, turns=3)
    [draft] = extract(llm, episodes)
    assert draft.memory.sources == ["ep_p"]
    assert len(llm_server.requests) >= 3  # the whole stretch, then its halves

    # A stretch of one line that is still too slow: the batch fails on its third try.
    llm_server.on_request = lambda body: time.sleep(3)
    _record(store, "slow", (Role.USER, "We keep the audit log for 90 days."), (Role.ASSISTANT, "Noted."))
    writer = Distiller(store, RecallEngine(None), llm, DecisionModel(llm, _settings(home, llm_server)))
    for _ in range(MAX_TIMEOUTS - 1):
        with pytest.raises(ModelTimeoutError):
            writer.distil_session("slow")
    [failed] = writer.distil_session("slow")
    [stored] = store.failed_batches()
    assert stored.id == failed.batch.id and "did not answer within" in stored.error


def test_a_turn_that_ended_in_a_hosts_error_is_not_read_and_leaves_nothing(
    llm_server: LLMServer, store: ClickHouseStore, writer: Distiller
) -> None:
    _record(
        store,
        "failed",
        (Role.USER, "From now on we deploy on Thursdays."),
        (Role.ASSISTANT, "API Error: 529 {'type':'overloaded_error','message':'Overloaded'}"),
    )
    [quiet] = writer.distil_session("failed")
    assert quiet.quiet and llm_server.requests == []


def test_only_the_failed_turn_is_left_out_of_what_is_read() -> None:
    said = [
        ("p1", Role.USER, "Use pnpm, not npm."),
        ("a1", Role.ASSISTANT, "API Error: 500 internal"),
        ("p2", Role.USER, "Use pnpm, not npm, please."),
        ("t2", Role.TOOL, "Bash pnpm install\ndone"),
        ("a2", Role.ASSISTANT, "Switched to pnpm."),
        ("p3", Role.USER, "And the lockfile?"),
    ]
    at = START
    episodes = []
    for eid, role, text in said:
        at += timedelta(seconds=1)
        episodes.append(INTAKE.accept(EpisodeIn(id=eid, text=text, role=role, time=at)))
    assert [e.id for e in answered(episodes)] == ["p2", "t2", "a2", "p3"]
