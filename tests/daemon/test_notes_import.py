"""mnemo import --from claude-md|agents-md|claude-auto-memory|codex-memories through the real CLI
and daemon, on real-format files (tests/data/notes): the entries become candidates in the review
queue, a credential is refused with its line and stored nowhere, a second import adds nothing;
with the (scripted) model, each candidate is judged against what mnemo knows."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from mnemo.client.launcher import stop_daemon
from mnemo.store import open_store
from tests.helpers import DATA, UNRELATED, Home, git_repo, yes_with
from tests.llm_server import LLMServer

NOTES = DATA / "notes"
WORKSPACE = "workspace:github.com/shop/api"
TOKEN = "ghp_4f9d8c7b6a5e4d3c2b1a0f9e8d7c6b5a4f3e2d1c"


def _repo(tmp_path: Path) -> Path:
    repo = git_repo(tmp_path / "shop", "git@github.com:shop/api.git")
    for name in ("CLAUDE.md", "AGENTS.md"):
        shutil.copy(NOTES / name, repo / name)
    return repo


def _queue(home: Home) -> dict[str, dict[str, object]]:
    shown = json.loads(home.mnemo("review", "list", "--json").stdout)
    return {m["id"]: m for m in shown["memories"]}


def test_real_files_become_candidates_a_credential_is_refused_and_a_second_import_adds_nothing(
    home: Home, tmp_path: Path
) -> None:
    repo = _repo(tmp_path)
    done = home.mnemo("import", "--from", "claude-md", cwd=repo, check=False)  # ./CLAUDE.md by default
    assert done.returncode == 1  # one line refused
    assert "8 entries in 1 file: 7 new candidates, 0 already imported, 1 refused" in done.stdout
    assert f"{repo / 'CLAUDE.md'}:26: refused: text: holds what looks like a credential (github-token" in (
        done.stderr
    )
    assert TOKEN not in done.stderr
    assert "not judged (no language model" in done.stdout and "mnemo review list" in done.stdout
    home.mnemo("import", "--from", "claude-auto-memory", str(NOTES / "claude-projects"))
    home.mnemo("import", "--from", "codex-memories", str(NOTES / "codex-memories"))

    queue = _queue(home)
    assert len(queue) == 7 + 4 + 4
    imported = [m for m in queue.values() if str(m["status_reason"]).startswith(f"imported from {repo}")]
    assert len(imported) == 7 and all(m["namespace"] == WORKSPACE for m in imported)
    assert all(m["origin"] == "imported" and m["has_human_backing"] for m in imported)  # a person's file
    cents = next(m for m in imported if "integer cents" in str(m["content"]))
    assert cents["type"] == "decision" and str(cents["status_reason"]).endswith(
        ":25; waits for a person (not judged: no language model)"
    )
    claude = [m for m in queue.values() if "feedback_testing.md" in str(m["status_reason"])]
    assert len(claude) == 1 and not claude[0]["has_human_backing"]  # Claude wrote it
    assert claude[0]["why"].startswith("a mocked database hid")  # type: ignore[union-attr]
    # Recall finds no candidate (it waits for a person), only the episode the line became.
    found = json.loads(home.mnemo("recall", "how is money stored?", "--json").stdout)
    assert found["memories"] == [] and "integer cents" in found["episodes"][0]["episode"]["text"]

    # A second import of each adds nothing.
    again = home.mnemo("import", "--from", "claude-md", str(repo / "CLAUDE.md"), check=False)
    assert "0 new candidates, 7 already imported, 1 refused" in again.stdout
    again = home.mnemo("import", "--from", "claude-auto-memory", str(NOTES / "claude-projects"))
    assert "0 new candidates, 4 already imported" in again.stdout
    # AGENTS.md repeats one CLAUDE.md line (the same words under another heading are another entry).
    agents = home.mnemo("import", "--from", "agents-md", str(repo / "AGENTS.md"))
    assert "5 entries in 1 file: 5 new candidates" in agents.stdout
    assert len(_queue(home)) == 7 + 4 + 4 + 5

    # The credential is in no episode and no memory.
    stop_daemon(home.settings)
    store = open_store(home.settings.store)
    try:
        texts = [e.text for e in store.episodes_page("", 1_000)]
        assert len(texts) == 20 and not any(TOKEN in t or "deploy key" in t for t in texts)
        assert not any(TOKEN in m.content for m in store.memories_page("", 1_000))
    finally:
        store.close()


def test_with_a_model_each_candidate_is_judged_against_what_mnemo_knows(
    home: Home, tmp_path: Path, llm_server: LLMServer
) -> None:
    repo = _repo(tmp_path)
    configured = home.with_env(
        MNEMO_LLM_URL=llm_server.url,
        MNEMO_LLM_MODEL="scripted-1",
        MNEMO_EMBEDDER="use-multilingual-v3",
        MNEMO_DISTILL_IDLE_S="3600",
    )
    known = configured.mnemo(
        "remember", "Never commit directly to main: every change goes through a pull request",
        "--type", "decision", "--namespace", WORKSPACE, "--json",
    )  # fmt: skip
    known_id = json.loads(known.stdout)["id"]
    old_tests = configured.mnemo(
        "remember", "Run the whole test suite with `make test` before pushing", "--type", "procedure",
        "--namespace", WORKSPACE, "--json",
    )  # fmt: skip
    old_tests_id = json.loads(old_tests.stdout)["id"]
    for question in ("help a later conversation", "still be true in a month", "back the NEW memory's why"):
        llm_server.answer(contains=question, choices=yes_with(0.9))
    llm_server.answer(
        contains=lambda p: (
            "EXISTING memory: Never commit directly to main" in p
            and "NEW memory: Testing instructions: Never commit" in p
        ),
        choices={"A": 0.9, "B": 0.04, "C": 0.03, "D": 0.03},  # the same
    )
    llm_server.answer(
        contains=lambda p: (
            "EXISTING memory: Run the whole test suite with `make test`" in p and "pnpm turbo run test" in p
        ),
        choices={"B": 0.85, "A": 0.05, "C": 0.05, "D": 0.05},  # updates it
    )
    llm_server.answer(contains="How does the NEW memory relate", choices=UNRELATED)

    done = configured.mnemo("import", "--from", "agents-md", str(repo / "AGENTS.md"))
    assert "5 entries in 1 file: 5 new candidates" in done.stdout
    assert (
        "judged against what mnemo knows: 1 the same as a memory (folded into it), 1 would update one, 3 new"
        in (done.stdout)
    )
    log = json.loads(configured.mnemo("judge-log", "--json", "--limit", "50").stdout)["entries"]
    imported = [e for e in log if e["session"] == "import:agents-md"]
    assert len(imported) == 5
    merged = next(e for e in imported if e["action"] == "merge")
    assert merged["target"] == known_id
    relation = merged["detail"]["comparisons"][0]["relation"]["probabilities"]
    assert max(relation, key=relation.get) == "same"

    queue = _queue(configured)
    assert len(queue) == 4  # the folded one left the queue, archived
    updating = next(m for m in queue.values() if "pnpm turbo run test" in str(m["content"]))
    assert f"the judge says it updates {old_tests_id}" in str(updating["status_reason"])
    assert all("new to mnemo" in str(m["status_reason"]) for m in queue.values() if m is not updating)
    # The known memory gained the file's line as a source, and is still the one recall finds.
    recalled = json.loads(configured.mnemo("recall", "can I commit to main?", "--json").stdout)["memories"]
    top = recalled[0]["memory"]
    assert top["id"] == known_id and top["seen_count"] == 2 and len(top["sources"]) == 2
    # The updated memory stays until a person decides.
    still = json.loads(configured.mnemo("recall", "how do I run the tests?", "--json").stdout)["memories"]
    assert any(hit["memory"]["id"] == old_tests_id and hit["memory"]["status"] == "active" for hit in still)
