"""The tools that weigh the writer's levers without a model: tools/evals/replay_judge.py replays the judge
from collected step answers (refitting the combination, scoring through today's rules),
tools/fit/fit_durable.py fits the durable-line classifier on the real fallback embedder, and
tools/models/llm_cache.py answers an evaluation's repeated requests from the model's earlier answers.
Their plumbing and the files they write; the figures on real data are in docs/benchmarks.md."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from mnemo.distill.durable import DurableWeights
from mnemo.distill.weights import StepWeights
from mnemo.embed.fallback import FALLBACK_ID
from tests.helpers import REPO
from tests.lab import tool_command, tool_env
from tests.llm_server import LLMServer

ANSWERS = {  # what the model answered to the steps, by label: far apart, so a fit separates them
    "same": {"about": 4, "same": 4, "changed": -4, "wrong": -4, "word_same": -0.1},
    "updates": {"about": 4, "same": -4, "changed": 4, "wrong": -4, "word_updates": -0.1},
    "contradicts": {"about": 4, "same": -4, "changed": -4, "wrong": 4, "word_contradicts": -0.1},
    "unrelated": {"about": -4, "same": -4, "changed": -4, "wrong": -4, "word_unrelated": -0.1},
}
WORDS = ("word_same", "word_updates", "word_contradicts", "word_unrelated")


def _pair(i: int, label: str) -> dict[str, object]:
    old = {"type": "fact", "what": f"Service {chr(97 + i % 26)}x keeps its logs on disk"}
    new = {"type": "fact", "what": f"Service {chr(97 + i % 26)}x keeps its logs on disk for a while"}
    return {
        "id": f"r-{i}",
        "lang": "en",
        "topic": "t",
        "old": old,
        "new": new,
        "label": label,
        "trap": "none",
    }


def _steps(i: int, label: str) -> dict[str, object]:
    features = {w: -5.0 for w in WORDS} | {"cosine": 4.0} | ANSWERS[label]
    return {"id": f"r-{i}", "label": label, "features": features}


def test_the_judge_is_replayed_from_collected_answers_refitted_and_scored(tmp_path: Path) -> None:
    labels = [label for label in ANSWERS for _ in range(10)]
    pairs, steps = tmp_path / "pairs.jsonl", tmp_path / "steps.jsonl"
    pairs.write_text("".join(json.dumps(_pair(i, x)) + "\n" for i, x in enumerate(labels)))
    steps.write_text("".join(json.dumps(_steps(i, x)) + "\n" for i, x in enumerate(labels)))
    out = tmp_path / "weights.json"
    command = tool_command("tools.evals.replay_judge", "--steps", str(steps))
    command += ["--fit", str(pairs), "--score", str(pairs), "--weights-out", str(out), "--json"]
    command += ["--family", "test-model"]
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=300, check=False, cwd=tmp_path, env=tool_env()
    )
    assert done.returncode == 0, done.stderr
    [scored] = [json.loads(line) for line in done.stdout.splitlines()]
    assert scored["count"] == 40 and scored["relation_accuracy"] == 1.0 and scored["bad_merges"] == 0
    weights = StepWeights.model_validate_json(out.read_text())
    assert weights.family == "test-model" and weights.fitted_on == "40 pairs"
    # A pair with no collected answers is named, not guessed.
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps(_pair(99, "same") | {"id": "r-missing"}) + "\n")
    command = tool_command("tools.evals.replay_judge", "--steps", str(steps))
    done = subprocess.run(
        [*command, "--score", str(other)], capture_output=True, text=True, timeout=300, check=False,
        env=tool_env(),
    )  # fmt: skip
    assert done.returncode == 1 and "no collected answers for 1 pairs (r-missing" in done.stderr


LINES = [
    ("person", "durable", "staging is qa-eu now, the old name confused people"),
    ("person", "durable", "we never deploy on Fridays: nobody is around to roll back"),
    ("person", "durable", "los mensajes de commit van en inglés"),
    ("person", "durable", "invoices are kept seven years, it's the law here"),
    ("person", "durable", "no Mongo, keep Postgres: our backups are built around it"),
    ("person", "passing", "run the tests again"),
    ("person", "passing", "ok push it"),
    ("person", "passing", "dale, commitealo"),
    ("person", "passing", "can you fix the typo in the readme"),
    ("person", "passing", "bump lodash to 4.17.21"),
    ("note", "durable", "Deploys happen on Thursdays because QA tests on Wednesday"),
    ("note", "durable", "The billing service is called ledger"),
    ("note", "passing", "Upgraded axios to 1.7.2"),
    ("note", "passing", "The CI pipeline is green"),
]


def test_the_durable_classifier_is_fitted_on_the_fallback_embedder_and_scored(tmp_path: Path) -> None:
    lines = tmp_path / "lines.jsonl"
    rows = [
        {"id": f"l{i}", "lang": "en", "kind": k, "label": y, "text": t} for i, (k, y, t) in enumerate(LINES)
    ]
    lines.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "durable.json"
    command = tool_command("tools.fit.fit_durable", "--fit", str(lines), "--score", str(lines))
    env = tool_env() | {"MNEMO_EMBEDDER": FALLBACK_ID, "MNEMO_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [*command, "--out", str(out)], capture_output=True, text=True, timeout=300, check=False, env=env
    )
    assert done.returncode == 0, done.stderr
    assert "5-fold held out on 14 lines" in done.stdout and f"{lines} (14 lines)" in done.stdout
    weights = DurableWeights.model_validate_json(out.read_text())
    assert weights.embedder == FALLBACK_ID and len(weights.weights) == 512
    assert set(weights.thresholds) == {"person", "note"}
    # A malformed line is named.
    lines.write_text(json.dumps(rows[0] | {"label": "maybe"}) + "\n")
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False, env=env)
    assert done.returncode == 1 and "lines.jsonl:1: label is 'maybe'" in done.stderr


def test_every_labelled_set_we_keep_loads_with_the_tools_that_read_it() -> None:
    """Pairs, scenarios and lines in tests/data, ours and the helpers' (fit and blind), and the fit
    pairs that ship for `mnemo writer calibrate`, in the documented formats the tools read: a set
    that stopped loading could no longer be rescored."""
    data = REPO / "tests" / "data"
    shipped = REPO / "server" / "mnemo" / "distill" / "pairs"
    code = (
        "from pathlib import Path\n"
        "from tools.evals.eval_pairs import load_pairs\n"
        "from tools.evals.eval_scenarios import load_scenarios\n"
        "from tools.fit.fit_durable import load_lines; from tools.evals.eval_changes import load_cases\n"
        "d = Path('tests/data')\n"
        "shipped = sorted(Path('server/mnemo/distill/pairs').glob('*.jsonl'))\n"
        "for p in [*sorted(d.glob('judge_pairs_*.jsonl')), *shipped]: print(p.name, len(load_pairs(p)))\n"
        "for p in sorted(d.glob('writer_scenarios*.json')): print(p.name, len(load_scenarios(p)))\n"
        "for p in sorted(d.glob('durable_lines_*.jsonl')): print(p.name, len(load_lines(p)))\n"
        "for p in sorted(d.glob('changes_*.jsonl')): print(p.name, len(load_cases(p)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=False)
    assert done.returncode == 0, done.stderr
    counts = dict(line.split() for line in done.stdout.splitlines())
    expected = {p.name for p in [*data.glob("judge_pairs_*.jsonl"), *shipped.glob("*.jsonl")]} | {
        p.name for p in data.glob("writer_scenarios*.json")
    }
    assert {"judge_pairs_fit.jsonl", "judge_pairs_authors_fit.jsonl"} <= expected
    expected |= {p.name for p in [*data.glob("durable_lines_*.jsonl"), *data.glob("changes_*.jsonl")]}
    assert set(counts) == expected and all(int(n) > 0 for n in counts.values())


def _post(url: str, body: dict[str, object]) -> tuple[int, dict[str, object]]:
    request = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}, method="POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, {}


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


def test_the_answer_cache_answers_a_request_asked_before_without_the_model(
    tmp_path: Path, llm_server: LLMServer
) -> None:
    """tools/models/llm_cache.py in front of the scripted model server: a request asked again is answered
    from the cache, a new one and a failed one reach the model, a failure is not kept."""
    llm_server.answer(contains="deploy", text="Tuesdays")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proxy = subprocess.Popen(
        tool_command("tools.models.llm_cache", "--upstream", llm_server.url.removesuffix("/v1"),
                     "--port", str(port), "--db", str(tmp_path / "answers.sqlite")),
        cwd=REPO, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        deadline = time.monotonic() + 30
        while not _listening(port):
            assert time.monotonic() < deadline and proxy.poll() is None, "llm_cache did not start"
            time.sleep(0.05)
        ask = {"model": "m", "temperature": 0, "messages": [{"role": "user", "content": "deploy day?"}]}
        llm_server.fail_next(1)
        assert _post(url, ask)[0] == 500  # the model's failure passes through, and is not kept
        status, first = _post(url, ask)
        assert status == 200 and len(llm_server.requests) == 2
        status, again = _post(url, ask)
        assert status == 200 and again == first and len(llm_server.requests) == 2  # from the cache
        other = ask | {"messages": [{"role": "user", "content": "deploy time?"}]}
        assert _post(url, other)[0] == 200 and len(llm_server.requests) == 3
    finally:
        proxy.terminate()
        _, err = proxy.communicate(timeout=30)
    assert "1 hits, 3 misses" in err
