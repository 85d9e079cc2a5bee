"""`mnemo audit` through the real CLI and daemon, on a store written as a writer before the rules
of mnemo.distill.gate left it: likely junk (commands, session events, wrapper text, a name its
sources never held), a duplicate pair, a value superseded by a newer one, an old memory never
injected, one holding a credential — each found with its reason and action; each action applied
only when confirmed, as new versions, and the audit after it finds what is left."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from mnemo.episodes import EpisodeIn, EpisodeIntake, Role
from mnemo.memories import Origin
from mnemo.secrets import SecretRedactor
from mnemo.store import open_store
from mnemo.store.usage import InjectionRow
from mnemo.vocabulary import MemoryStatus, MemoryType
from tests.helpers import Home, make_memory

NOW = datetime.now(UTC)
# What the audit reads as junk in the seeded store (m-persist is the person's decision).
JUNK = {"m-repo", "m-ide", "m-struct", "m-port", "m-yaml", "m-summary", "m-installed"}
TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"  # the shape of a GitHub token, not one


def _episode(episode_id: str, text: str, role: Role = Role.USER) -> EpisodeIn:
    return EpisodeIn(id=episode_id, text=text, role=role, session="s-1", turn=1, namespace="workspace:shop")


def _seed(home: Home) -> None:
    store = open_store(home.settings.store)
    try:
        intake = EpisodeIntake(
            max_chars=100_000, default_namespace="workspace:shop", redactor=SecretRedactor()
        )
        store.append_episodes([intake.accept(e) for e in (
            _episode("e-repo", "create a github repo on my account and push it"),
            _episode("e-ide", "Please modify the spec as we discussed"),
            _episode("e-persist", "Persistence goes behind a repository interface: storage swaps later."),
            _episode("e-deploy", "We deploy on Thursdays from now on."),
            _episode("e-t30", "The payments API timeout is 30 s."),
            _episode("e-t60", "Raise the payments API timeout: it is 60 s now."),
            _episode("e-plan", "help me plan and set up a development framework, and track the progress"),
            _episode("e-tool", "cat README.md\nThe service listens on port 8080.", Role.TOOL),
            _episode("e-where", "globally"),  # where to install, which the agent then did
            _episode("e-cp", "cp agents/*.md ~/.claude/agents/", Role.TOOL),
        )])  # fmt: skip
        day = timedelta(days=1)
        store.put_memories([
            make_memory("m-repo", "Create a GitHub repository for the project", NOW, sources=["e-repo"]),
            make_memory("m-ide", "The user ran the spec check in the terminal", NOW,
                        type=MemoryType.EVENT, sources=["e-ide"]),
            make_memory("m-struct", "I must call the StructuredOutput tool", NOW, type=MemoryType.FACT,
                        sources=["e-ide"], status=MemoryStatus.CANDIDATE),
            make_memory("m-port", "The service listens on port 8080", NOW, type=MemoryType.FACT,
                        sources=["e-tool"], status=MemoryStatus.CANDIDATE),
            make_memory("m-persist", "Persistence goes behind a repository interface", NOW,
                        sources=["e-persist"]),
            make_memory("m-yaml", "The settings live in config/prod.yaml", NOW, type=MemoryType.FACT,
                        sources=["e-persist"]),
            make_memory("m-summary", "The project keeps a comprehensive summary of its setup", NOW,
                        type=MemoryType.STATE, sources=["e-plan"]),
            make_memory("m-installed", "Subagents are installed globally", NOW, type=MemoryType.STATE,
                        sources=["e-where", "e-cp"]),
            make_memory("m-deploy-1", "We deploy on Thursdays", NOW - 2 * day, sources=["e-deploy"]),
            make_memory("m-deploy-2", "We deploy on Thursdays.", NOW - day, sources=["e-deploy"]),
            make_memory("m-t30", "The payments API timeout is 30 s", NOW - 3 * day, type=MemoryType.FACT,
                        sources=["e-t30"]),
            make_memory("m-t60", "The payments API timeout is 60 s", NOW - day, type=MemoryType.FACT,
                        sources=["e-t60"]),
            make_memory("m-old", "Release notes live in docs/releases", NOW - 60 * day,
                        type=MemoryType.FACT, origin=Origin.EXPLICIT),
            make_memory("m-token", f"The CI token is {TOKEN}", NOW,
                        type=MemoryType.FACT, origin=Origin.EXPLICIT),
            make_memory("m-idle", "The blog builds with Hugo", NOW - 60 * day, type=MemoryType.FACT,
                        origin=Origin.EXPLICIT, namespace="workspace:blog"),  # a project nobody opened
        ])  # fmt: skip
        # The shop was worked on in the window: its memories were injected, though not m-old.
        store.put_injections(
            [
                InjectionRow(
                    session="s-9",
                    block=1,
                    turn=1,
                    memory="m-persist",
                    event="prompt",
                    person=home.settings.namespace_of_person,
                    tokens=20,
                    at=NOW - day,
                )
            ]
        )
    finally:
        store.close()


def _audit(home: Home, *args: str) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(home.mnemo("audit", "--json", *args).stdout)
    return report


def _about(report: dict[str, Any], kind: str) -> dict[str, str]:
    """The first memory of each finding of ``kind`` → its reason."""
    return {f["memories"][0]: f["reason"] for f in report["findings"] if f["kind"] == kind}


@pytest.fixture
def seeded(home: Home) -> Home:
    configured = home.with_env(MNEMO_EMBEDDER="use-multilingual-v3")
    _seed(configured)
    return configured


def test_the_audit_finds_each_kind_with_its_reason_and_action(seeded: Home) -> None:
    report = _audit(seeded)
    assert report["scanned"] == 15
    junk = _about(report, "junk")
    assert set(junk) == JUNK  # not the person's decision
    assert junk["m-repo"] == "reads as a command to do something now"
    assert junk["m-ide"] == "reads as something about the session itself"
    assert junk["m-struct"] == "reads as a host's wrapper text"
    assert junk["m-port"] == "rests on tool output alone"
    assert junk["m-yaml"] == "names what none of its sources holds: config/prod.yaml"
    assert junk["m-summary"] == "its words are not in its sources: a summary no one gave"
    assert (
        junk["m-installed"]
        == "a state or event no line of the person's words: what the agent did or saw here"
    )
    [duplicate] = [f for f in report["findings"] if f["kind"] == "duplicate"]
    assert duplicate["memories"] == ["m-deploy-1", "m-deploy-2"] and duplicate["action"] == "merge"
    [superseded] = [f for f in report["findings"] if f["kind"] == "superseded"]
    assert superseded["memories"] == ["m-t60", "m-t30"] and superseded["action"] == "close"
    # The shop's others are younger than the 30-day window; the blog's project was not opened in it.
    assert set(_about(report, "unused")) == {"m-old"}
    assert set(_about(report, "credential")) == {"m-token"}
    assert TOKEN not in json.dumps(report)  # the finding shows the memory's text redacted
    shown = seeded.mnemo("audit").stdout
    assert "junk (7): action archive — mnemo audit --apply junk" in shown


def test_an_action_is_applied_only_when_confirmed_and_the_next_audit_finds_what_is_left(seeded: Home) -> None:
    refused = seeded.mnemo("audit", "--apply", "junk", check=False)  # no terminal to ask on, no --yes
    assert refused.returncode == 1 and "--yes" in refused.stderr
    assert set(_about(_audit(seeded), "junk")) == JUNK

    done = seeded.mnemo("audit", "--apply", "junk", "--id", "m-repo", "--yes").stdout
    assert "archive: 1 memory version(s) written" in done
    assert set(_about(_audit(seeded), "junk")) == JUNK - {"m-repo"}
    seeded.mnemo("audit", "--apply", "junk", "--yes")
    seeded.mnemo("audit", "--apply", "duplicate", "--yes")
    seeded.mnemo("audit", "--apply", "superseded", "--yes")
    seeded.mnemo("audit", "--apply", "credential", "--yes")
    after = _audit(seeded)
    assert [f["kind"] for f in after["findings"]] == ["unused"]
    nothing = json.loads(seeded.mnemo("audit", "--apply", "junk", "--yes", "--json").stdout)
    assert nothing == {"kind": "junk", "changed": [], "unchanged": []}  # stdout holds only the JSON

    seeded.mnemo("daemon", "stop")  # the embedded store opens in one process at a time
    store = open_store(seeded.settings.store)
    try:
        repo, struct = store.get_memory("m-repo"), store.get_memory("m-struct")
        assert repo is not None and repo.status is MemoryStatus.FORGOTTEN
        assert repo.status_reason == "audit: reads as a command to do something now" and repo.version == 2
        assert struct is not None and struct.status is MemoryStatus.REJECTED  # it was waiting
        kept, folded = store.get_memory("m-deploy-1"), store.get_memory("m-deploy-2")
        assert kept is not None and kept.status is MemoryStatus.ACTIVE and kept.seen_count == 2
        assert (
            folded is not None and folded.status is MemoryStatus.CLOSED and folded.closed_by == "m-deploy-1"
        )
        old = store.get_memory("m-t30")
        assert old is not None and old.status is MemoryStatus.CLOSED and old.closed_by == "m-t60"
        token = store.get_memory("m-token")
        assert token is not None and TOKEN not in token.model_dump_json()
        assert len(store.memory_versions(["m-repo"])) == 2  # the first version stays in the history
    finally:
        store.close()
    recalled = json.loads(seeded.mnemo("recall", "github repository", "--json").stdout)
    assert "m-repo" not in json.dumps(recalled)
