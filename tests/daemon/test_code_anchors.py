"""Memories tied to code, in a real git repository the test makes: anchored when written,
flagged when a commit changes a value they name or deletes their files, followed when it renames
them, weighed down and marked, and the memory with the new value proposed for review.

The session that teaches "the gateway timeout is 600 s via timeout_sec in lb.tf" read lb.tf with
a tool; the scripted model distils it (the writer's own anchoring is what is tested, not the
model). Explicit memories are remembered from inside the checkout, as the CLI and the MCP server
do. Then a commit changes 600 to 900, deletes one file and renames another, and the next
SessionStart checks the workspace's memories against HEAD.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from mnemo.code.anchors import anchor
from mnemo.daemon.code_checks import STALE_WEIGHT
from mnemo.episodes import EpisodeIn, EpisodeIntake, Role
from mnemo.secrets import SecretRedactor
from mnemo.store import open_store
from mnemo.workspace import workspace_namespace
from tests.helpers import Home, committed_repo, context_of, event_input, hook, run_git, wait_until
from tests.llm_server import LLMServer

LB = 'resource "aws_lb" "gateway" {\n  name        = "gateway"\n  timeout_sec = 600\n}\n'
LB_CHANGED = LB.replace("600", "900")
FILES = {
    "infra/lb.tf": LB,
    "docs/deploy.md": "# Deploys\n\nDeploys go out on Tuesdays, after the QA sign-off.\n",
    "src/legacy.py": "def old_helper(payload):\n    return retry(payload, attempts=3)\n",
    "scripts/release.sh": '#!/bin/sh\n# Tags the release, pushes the tag.\ngit tag "$1" && git push --tags\n',
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return committed_repo(tmp_path / "shop", FILES)


def _the_move_on(repo: Path) -> str:
    """A commit that changes lb.tf, deletes legacy.py and renames release.sh; its short id."""
    (repo / "infra/lb.tf").write_text(LB_CHANGED)
    run_git(repo, "rm", "-q", "src/legacy.py")
    (repo / "tools").mkdir()
    run_git(repo, "mv", "scripts/release.sh", "tools/release.sh")
    run_git(repo, "commit", "-q", "-am", "two")
    return run_git(repo, "rev-parse", "--short=7", "HEAD").strip()


def _record_the_lb_session(home: Home, repo: Path) -> None:
    """The session that read lb.tf, stored before the daemon starts."""
    ns = workspace_namespace(str(repo))
    at = datetime(2026, 11, 30, 10, tzinfo=UTC)
    turns = [
        # The person states it: an agent's answer to a question alone is no memory (distill.gate).
        (Role.USER, "Keep the gateway timeout at 600 s (timeout_sec in lb.tf): the exports need it."),
        (Role.TOOL, f'Read {{"file_path": "{repo}/infra/lb.tf"}}\n{LB}'),
        (Role.ASSISTANT, "The gateway timeout is 600 s, set by timeout_sec in lb.tf."),
    ]
    intake = EpisodeIntake(max_chars=100_000, default_namespace=ns, redactor=SecretRedactor())
    store = open_store(home.settings.store)
    try:
        store.append_episodes(
            [
                intake.accept(
                    EpisodeIn(
                        id=f"lb-{i}",
                        text=text,
                        role=role,
                        who="Read" if role is Role.TOOL else "",
                        session="s-lb",
                        turn=i,
                        time=at + timedelta(minutes=i),
                        namespace=ns,
                        cwd=str(repo),
                    )
                )
                for i, (role, text) in enumerate(turns)
            ]
        )
    finally:
        store.close()


def _script(server: LLMServer) -> None:
    extracted = {
        "type": "fact",
        "what": "The gateway timeout is 600 s via timeout_sec in lb.tf",
        "entities": [{"name": "gateway", "role": "subject"}],
        "sources": ["lb-0", "lb-1", "lb-2"],
    }
    yes = {"A": 0.9, "B": 0.1}
    server.answer(contains="Transcript:\n[lb-0]", text=json.dumps({"memories": [extracted]}))
    server.answer(contains="Transcript:", text='{"memories": []}')
    for question in ("help a later conversation", "still be true in a month", "back the NEW memory's why"):
        server.answer(contains=question, choices=yes)
    server.answer(
        contains="How does the NEW memory relate", choices={"D": 0.9, "A": 0.04, "B": 0.03, "C": 0.03}
    )


@pytest.fixture
def coded(home: Home, llm_server: LLMServer, repo: Path) -> Iterator[tuple[Home, dict[str, str]]]:
    """The lb memory distilled, and explicit memories about the other files, remembered inside the
    checkout; {name: memory id}."""
    _record_the_lb_session(home, repo)
    _script(llm_server)
    configured = home.with_env(
        MNEMO_LLM_URL=llm_server.url, MNEMO_LLM_MODEL="scripted-1", MNEMO_EMBEDDER="none"
    )
    ns = workspace_namespace(str(repo))
    configured.mnemo("distill", "s-lb")
    found: dict[str, Any] = {}

    def distilled() -> bool:
        hits = json.loads(
            configured.mnemo("recall", "gateway timeout lb.tf", "--namespace", ns, "--json").stdout
        )
        found.update(
            {h["memory"]["id"]: h["memory"] for h in hits["memories"] if "600 s" in h["memory"]["what"]}
        )
        return bool(found)

    wait_until(distilled, timeout_s=60, what="the distilled lb memory")
    ids = {"lb": next(iter(found))}
    for name, text in (
        ("deploy", "Deploys go out on Tuesdays, as docs/deploy.md says"),
        ("legacy", "old_helper in src/legacy.py retries three times"),
        ("release", "Releases are tagged by scripts/release.sh"),
        ("alarm", "The gateway timeout alarm pages the on-call engineer"),
    ):
        ids[name] = _remember(configured, text, ns, repo / "src")["id"]
    yield configured, ids


def _remember(home: Home, text: str, ns: str, cwd: Path) -> dict[str, Any]:
    """A fact remembered through the CLI run in ``cwd``: the stored memory."""
    made = home.mnemo("remember", text, "--type", "fact", "--namespace", ns, "--json", cwd=cwd)
    return dict(json.loads(made.stdout))


def _memory(home: Home, memory_id: str, query: str, ns: str) -> dict[str, Any]:
    hits = json.loads(home.mnemo("recall", query, "--namespace", ns, "--json").stdout)["memories"]
    return next(h for h in hits if h["memory"]["id"] == memory_id)


def test_a_commit_that_changes_a_memorys_file_flags_it_ranks_it_behind_and_marks_it(
    coded: tuple[Home, dict[str, str]], repo: Path
) -> None:
    configured, ids = coded
    configured.mnemo("daemon", "stop")
    # No model: flagged only, never re-judged. Every memory at the session's start: its mark is
    # the point, not which memories a start is given.
    home = configured.with_env(MNEMO_LLM_URL="", MNEMO_START_MEMORIES="all")
    ns = workspace_namespace(str(repo))
    lb = _memory(home, ids["lb"], "gateway timeout lb.tf", ns)["memory"]
    head = run_git(repo, "rev-parse", "HEAD").strip()
    assert lb["code"] == {
        "commit": head,
        "files": [
            {
                "path": "infra/lb.tf",
                "blob": run_git(repo, "rev-parse", "HEAD:infra/lb.tf").strip(),
                "symbols": ["timeout_sec"],
                "values": ["600"],
            }
        ],
    }
    for name, path in (
        ("deploy", "docs/deploy.md"),
        ("legacy", "src/legacy.py"),
        ("release", "scripts/release.sh"),
    ):
        memory = _memory(home, ids[name], FILES[path].split()[1] if name == "deploy" else path, ns)["memory"]
        assert [f["path"] for f in memory["code"]["files"]] == [path], name
    assert _memory(home, ids["alarm"], "gateway timeout alarm", ns)["memory"]["code"] is None  # names no file

    unchanged = json.loads(home.mnemo("check-code", str(repo), "--json").stdout)
    assert unchanged["checked"] == 4 and unchanged["flagged"] == [] and unchanged["complete"]

    before = json.loads(home.mnemo("recall", "gateway timeout", "--namespace", ns, "--json").stdout)[
        "memories"
    ]
    ranked = [h["memory"]["id"] for h in before]
    assert ranked.index(ids["lb"]) < ranked.index(ids["alarm"])  # ahead while its code is unchanged
    assert not any(h["outdated"] for h in before)

    second = _the_move_on(repo)
    # The hook's own 3 s deadline is not what this test is about (tests/daemon/test_hooks.py): a
    # loaded machine once passed it here, and the hook answered nothing, as it should then.
    session = event_input("SessionStart", "s-next", cwd=str(repo))
    started, code = hook(home, "SessionStart", session, MNEMO_HOOK_TIMEOUT_S="30")
    assert code == 0
    injected = context_of(started)
    lb_line = next(line for line in injected.splitlines() if ids["lb"] in line)
    assert (
        f"(may be outdated: infra/lb.tf now has timeout_sec = 900 (was 600); changed in {second})" in lb_line
    )
    deploy_line = next(line for line in injected.splitlines() if ids["deploy"] in line)
    assert "may be outdated" not in deploy_line

    checked = json.loads(home.mnemo("check-code", str(repo / "infra"), "--json").stdout)
    flags = {f["memory"]: f for f in checked["flagged"]}
    assert set(flags) == {ids["lb"], ids["legacy"], ids["release"]}  # deploy.md did not change
    assert (flags[ids["lb"]]["kind"], flags[ids["lb"]]["commits"]) == ("changed", [second])
    assert flags[ids["lb"]]["readings"] == [{"value": "600", "now": "900", "line": "timeout_sec = 900"}]
    assert flags[ids["legacy"]]["kind"] == "deleted" and flags[ids["legacy"]]["stale"]
    release = flags[ids["release"]]
    assert (release["kind"], release["new_path"], release["stale"]) == ("moved", "tools/release.sh", False)

    hits = json.loads(
        home.mnemo("recall", "gateway timeout", "--namespace", ns, "--json", "--explain").stdout
    )["memories"]
    order = [h["memory"]["id"] for h in hits]
    lb_hit, alarm_hit = hits[order.index(ids["lb"])], hits[order.index(ids["alarm"])]
    assert lb_hit["outdated"].startswith("infra/lb.tf now has timeout_sec = 900")
    assert lb_hit["explain"]["stale_weight"] == STALE_WEIGHT  # weighed down, not sent behind all
    assert not alarm_hit["outdated"] and "stale_weight" not in alarm_hit["explain"]
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    shown = home.mnemo("check-code", str(repo)).stdout
    assert "3 memories tied to code" not in shown and "2 may be outdated" in shown


def test_without_git_or_with_a_broken_repository_nothing_is_anchored_or_flagged_and_hooks_answer(
    home: Home, repo: Path, tmp_path: Path
) -> None:
    ns = workspace_namespace(str(repo))
    empty = tmp_path / "no-git-here"
    empty.mkdir()
    no_git = home.with_env(MNEMO_EMBEDDER="none", PATH=str(empty))
    assert _remember(no_git, "The gateway is set in infra/lb.tf", ns, repo)["code"] is None
    no_git.mnemo("daemon", "stop")

    words = home.with_env(MNEMO_EMBEDDER="none")
    memory = _remember(words, "timeout_sec lives in infra/lb.tf", ns, repo)
    assert memory["code"]["files"][0]["path"] == "infra/lb.tf"
    (repo / ".git" / "HEAD").write_text("garbage\n")  # a broken repository
    started, code = hook(words, "SessionStart", event_input("SessionStart", "s-broken", cwd=str(repo)))
    assert code == 0 and memory["id"] in context_of(started)
    assert "may be outdated" not in context_of(started)
    broken = json.loads(words.mnemo("check-code", str(repo), "--json").stdout)
    assert broken["head"] is None and broken["flagged"] == []


def test_a_new_value_is_proposed_once_updated_while_pending_and_not_again_once_rejected(
    home: Home, repo: Path
) -> None:
    words = home.with_env(MNEMO_EMBEDDER="none")
    ns = workspace_namespace(str(repo))
    memory = _remember(words, "The gateway timeout is 600 s (timeout_sec in infra/lb.tf)", ns, repo)

    def proposals() -> list[dict[str, Any]]:
        words.mnemo("check-code", str(repo))
        queue = json.loads(words.mnemo("review", "list", "--json").stdout)["memories"]
        return [m for m in queue if m["replaces"] == memory["id"]]

    def commit(path: str, text: str) -> None:
        (repo / path).write_text(text)
        run_git(repo, "commit", "-q", "-am", f"edit {path}")

    commit("infra/lb.tf", LB.replace("600", "900"))
    [first] = proposals()
    assert first["what"] == "The gateway timeout is 900 s (timeout_sec in infra/lb.tf)"
    assert first["status_reason"].startswith(
        "proposed by the code check: infra/lb.tf now has timeout_sec = 900"
    )
    commit("docs/deploy.md", FILES["docs/deploy.md"] + "\nRollbacks use the previous tag.\n")
    assert [m["id"] for m in proposals()] == [first["id"]]  # the same change: the same proposal
    commit("infra/lb.tf", LB.replace("600", "1200"))
    [updated] = proposals()
    assert (updated["id"], updated["version"]) == (first["id"], 2)
    assert updated["what"] == "The gateway timeout is 1200 s (timeout_sec in infra/lb.tf)"
    # A person's edit of the proposal stands: a later value does not write over it.
    edited = "The gateway timeout is 1200 s (timeout_sec in infra/lb.tf), for the large uploads"
    words.mnemo("review", "edit", updated["id"], "--content", edited)
    commit("infra/lb.tf", LB.replace("600", "1300"))
    [kept] = proposals()
    assert (kept["version"], kept["content"]) == (3, edited)
    words.mnemo("review", "reject", kept["id"], "--reason", "the memory is about production only")
    commit("infra/lb.tf", LB.replace("600", "1500"))
    assert proposals() == []  # a person said no: not asked again for this version of the memory
    hit = _memory(words, memory["id"], "gateway timeout", ns)
    assert hit["memory"]["status"] == "active"  # a proposal never changes the memory itself
    assert "now has timeout_sec = 1500 (was 600)" in hit["outdated"]


def test_a_worktree_is_checked_against_its_own_head(home: Home, repo: Path, tmp_path: Path) -> None:
    words = home.with_env(MNEMO_EMBEDDER="none")
    tree = tmp_path / "shop-hotfix"
    run_git(repo, "remote", "add", "origin", "git@github.com:shop/api.git")  # the workspace's identity
    run_git(repo, "worktree", "add", "-q", "-b", "hotfix", str(tree))
    ns = workspace_namespace(str(tree))
    assert ns == workspace_namespace(str(repo))  # one workspace, two checkouts
    memory = _remember(words, "timeout_sec in infra/lb.tf is 600", ns, tree)
    assert memory["code"]["commit"] == run_git(tree, "rev-parse", "HEAD").strip()
    (tree / "infra/lb.tf").write_text(LB_CHANGED)
    run_git(tree, "commit", "-q", "-am", "hotfix: a longer timeout")
    in_tree = json.loads(words.mnemo("check-code", str(tree), "--json").stdout)
    assert [f["memory"] for f in in_tree["flagged"]] == [memory["id"]]
    in_main = json.loads(words.mnemo("check-code", str(repo), "--json").stdout)
    assert in_main["flagged"] == []  # main's checkout did not move


def test_a_slow_git_never_holds_the_hook_the_check_finishes_behind_it(
    home: Home, repo: Path, tmp_path: Path
) -> None:
    # The real git behind a shim that takes half a second a call, as on a huge repository or a
    # slow disk: the check outlasts the hook's wait, so the hook answers without it, and the flag
    # the check finds in the background is on the next hook's line.
    shim = tmp_path / "slow-git"
    shim.mkdir()
    real = subprocess.run(
        ["sh", "-c", "command -v git"], capture_output=True, text=True, check=True
    ).stdout.strip()
    (shim / "git").write_text(f'#!/bin/sh\nsleep 0.5\nexec "{real}" "$@"\n')
    (shim / "git").chmod(0o755)
    slow = home.with_env(MNEMO_EMBEDDER="none", PATH=f"{shim}:{home.env.get('PATH', '/usr/bin:/bin')}")
    ns = workspace_namespace(str(repo))
    memory_id = _remember(slow, "timeout_sec in infra/lb.tf is 600", ns, repo)["id"]
    (repo / "infra/lb.tf").write_text(LB_CHANGED)
    run_git(repo, "commit", "-q", "-am", "two")

    started, code = hook(
        slow, "SessionStart", event_input("SessionStart", "s-slow", cwd=str(repo)), deadline_s=2.5
    )
    line = next(x for x in context_of(started).splitlines() if memory_id in x)
    assert code == 0 and "may be outdated" not in line  # answered before the check was done
    flagged = json.loads(slow.mnemo("check-code", str(repo), "--json").stdout)["flagged"]
    assert [f["memory"] for f in flagged] == [memory_id]
    again, _ = hook(
        slow, "SessionStart", event_input("SessionStart", "s-slow-2", cwd=str(repo)), deadline_s=2.5
    )
    assert "may be outdated: infra/lb.tf now has timeout_sec = 900" in context_of(
        again
    )  # the same HEAD: no new check


def test_a_memory_is_anchored_to_files_named_by_name_by_code_name_or_by_what_they_hold(repo: Path) -> None:
    extra = {
        "Makefile": "test:\n\tpytest -q\n",
        "src/auth/PasswordPolicy.java": "class PasswordPolicy { int minLength = 12; }\n",
        ".gitlab-ci.yml": "deploy_production:\n  when: manual\n",
        ".travis.yml": "language: python\n",
        "a/retry.py": "MAX_RETRY = 3\n",
        "b/retry.py": "MAX_RETRY = 3\n",
        "c/retry.py": "MAX_RETRY = 3\n",
    }
    for path, text in extra.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    run_git(repo, "add", "-A")
    run_git(repo, "commit", "-q", "-m", "more")

    def files(text: str) -> list[str]:
        found = anchor(str(repo), [text])
        return [f.path for f in found.files] if found else []

    assert files("Tests run with make test, which calls pytest -q (see Makefile)") == ["Makefile"]
    assert files("PasswordPolicy requires 12 characters") == ["src/auth/PasswordPolicy.java"]
    assert files("deploy_production only runs when started by hand") == [".gitlab-ci.yml"]
    assert files("CI runs on .travis.yml") == [".travis.yml"]
    assert files("MAX_RETRY is 3 everywhere") == []  # three files hold it: which one is meant?
    assert files("retry.py retries") == []  # three files have that name
    assert files("We build before we deploy") == []  # words in prose name no file
    policy = anchor(str(repo), ["PasswordPolicy requires 12 characters"])
    assert policy is not None and policy.files[0].values == ["12"]
    assert policy.files[0].symbols == []  # the name is its path's: no symbol of its own
