"""The `mnemo` command as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.helpers import Home, event_input


def test_remember_then_recall_round_trip(home: Home) -> None:
    stored = home.mnemo(
        "remember", "We deploy on Thursdays", "--type", "decision",
        "--why", "Tuesday deploys collided with the release train", "--entity", "deploy:subject",
    ).stdout  # fmt: skip
    memory_id = stored.split()[-1]
    assert memory_id.startswith("mem_")
    found = home.mnemo("recall", "which day do we deploy?").stdout
    assert memory_id in found and "why: Tuesday deploys collided" in found
    as_json = json.loads(home.mnemo("recall", "deploy", "--type", "decision", "--json").stdout)
    assert as_json["memories"][0]["memory"]["entities"] == [{"name": "deploy", "role": "subject"}]
    assert json.loads(home.mnemo("recall", "deploy", "--type", "fact", "--json").stdout)["memories"] == []
    home.mnemo("forget", memory_id, "--reason", "moved to Fridays")
    assert memory_id not in home.mnemo("recall", "which day do we deploy?").stdout


def test_status_shows_version_store_daemon_and_counts(home: Home) -> None:
    home.mnemo("remember", "Ana prefers short answers", "--type", "preference")
    status = home.mnemo("status").stdout
    assert status.startswith("mnemo ")
    assert f"store      chdb://{home.path}/store" in status
    assert "daemon     pid " in status and "up " in status
    assert "episodes   1" in status and "memories   active 1" in status
    assert (
        "model      none (set llm_url and llm_model, or `mnemo writer use`, to distil conversations)"
        in status
    )


def test_status_shows_the_model_and_todays_spend_against_the_cap_never_the_key(home: Home) -> None:
    configured = home.with_env(
        MNEMO_LLM_URL="http://me:pw@127.0.0.1:9/v1",
        MNEMO_LLM_MODEL="qwen-1.5b",
        MNEMO_LLM_API_KEY="sk-secret-value",
        MNEMO_LLM_DAILY_TOKEN_CAP="50000",
    )
    status = configured.mnemo("status").stdout
    assert "model      qwen-1.5b at http://me:***@127.0.0.1:9/v1; today 0 of 50,000 tokens" in status
    as_json = json.loads(configured.mnemo("status", "--json").stdout)["language_model"]
    assert as_json == {
        "endpoint": "http://me:***@127.0.0.1:9/v1",
        "model": "qwen-1.5b",
        "backend": "openai",
        "tokens_today": 0,
        "daily_cap": 50000,
        "calls_today": 0,
        "daily_call_cap": 0,
        "calls_per_minute": 0,
        "resumes_at": None,
        "by_model": [],
        "judging": "relation in one question; calibration: none",
    }
    assert "judging: relation in one question; calibration: none" in status
    assert "sk-secret-value" not in status + json.dumps(as_json) and "pw@" not in status
    configured.mnemo("daemon", "stop")
    small = home.with_env(MNEMO_LLM_URL="http://127.0.0.1:9/v1", MNEMO_LLM_MODEL="qwen2.5-coder:1.5b")
    judging = json.loads(small.mnemo("status", "--json").stdout)["language_model"]["judging"]
    assert judging.startswith("relation in steps, shipped weights fitted on judge_pairs_fit.jsonl (320")
    # Which durable-line rule a small model's extraction is gated by, for the embedder in force.
    assert (
        "; durable lines by the classifier for use-multilingual-v3, fitted on 407 labelled lines" in judging
    )


def test_bad_input_exits_non_zero_with_the_problem_named(home: Home) -> None:
    bad_type = home.mnemo("remember", "x", "--type", "opinion", check=False)
    assert bad_type.returncode == 2 and "invalid choice: 'opinion'" in bad_type.stderr
    bad_limit = home.mnemo("recall", "x", "--limit", "0", check=False)
    assert bad_limit.returncode == 1 and "mnemo: error: limit:" in bad_limit.stderr
    unknown = home.mnemo("forget", "mem_nope", "--reason", "r", check=False)
    assert unknown.returncode == 1 and "no memory has the id 'mem_nope'" in unknown.stderr
    neither = home.mnemo("recall-episode", check=False)
    assert (
        neither.returncode == 1 and "give an episode id, a memory id, a session, or a query" in neither.stderr
    )


def test_a_broken_config_file_is_reported_without_a_traceback(home: Home) -> None:
    (home.path / "config.toml").write_text("max_episode_chars = 'lots'\n")
    result = home.mnemo("status", check=False)
    assert result.returncode == 1
    assert "mnemo: error: invalid mnemo settings: max_episode_chars" in result.stderr
    assert "Traceback" not in result.stderr


# What a command that only talks to a running daemon must not load (the fast path).
HEAVY = ("numpy", "onnxruntime", "openai", "pydantic", "anyio", "starlette", "mnemo.daemon", "mnemo.config")


def _run_and_list_modules(home: Home, call: str, stdin: str = "") -> tuple[str, list[str]]:
    """Run ``call`` (``from mnemo.x import main; code = main(...)``) in a new interpreter that then
    prints the modules it loaded; its output before them and those modules. Asserts it returned 0."""
    script = (
        f"import sys\n{call}\n"
        "sys.stdout.write('\\nmodules: ' + ' '.join(sorted(sys.modules)) + f'\\ncode: {code}\\n')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        input=stdin,
        env=home.env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    lines = done.stdout.splitlines()
    assert lines[-1] == "code: 0", done.stderr
    return "\n".join(lines[:-2]), lines[-2].removeprefix("modules: ").split()


def test_recall_and_status_against_a_running_daemon_load_nothing_but_the_standard_library(home: Home) -> None:
    home.mnemo("remember", "We deploy on Thursdays", "--type", "decision")  # the daemon is up
    for command in (["recall", "deploy"], ["status"]):
        _, modules = _run_and_list_modules(home, f"from mnemo.cli import main\ncode = main({command!r})")
        loaded = [m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY)]
        assert loaded == [], f"mnemo {command[0]} loaded {loaded}"
    assert "We deploy on Thursdays" in home.mnemo("recall", "deploy").stdout


# What a hook process answered by a running daemon must not load: it runs at every prompt and tool
# call, and each of these costs a host milliseconds (re, typing, json, datetime: ~18 ms in all).
HOOK_HEAVY = ("re", "typing", "json", "datetime", "enum", "collections", "mnemo.private", "mnemo.errors")


def test_a_hook_answered_by_the_daemon_loads_none_of_the_slower_standard_modules(home: Home) -> None:
    home.mnemo("remember", "We deploy on Thursdays", "--type", "decision")  # the daemon is up
    prompt = event_input("UserPromptSubmit", session="s-imports", cwd="/")
    call = "from mnemo.hook_process import main\ncode = main(['UserPromptSubmit'])"
    printed, modules = _run_and_list_modules(home, call, stdin=json.dumps(prompt))
    assert "Thursdays" in printed  # the daemon answered: the whole path ran
    assert [m for m in modules if m in HOOK_HEAVY] == []
