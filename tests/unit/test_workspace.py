"""Which workspace a directory is (mnemo.workspace): a git remote, a repository's root, or the
directory itself — and a path recorded on Windows, or a relative one, is itself, never the
repository this process happens to run in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mnemo import transcripts
from mnemo.importing.transcripts import transcript_episodes
from mnemo.workspace import workspace_namespace


@pytest.fixture
def inside_a_clone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The process runs inside a clone of github.com/org/shop."""
    repo = tmp_path / "shop"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "config").write_text('[remote "origin"]\n\turl = git@github.com:org/shop.git\n')
    monkeypatch.chdir(repo)
    return repo


def test_a_clone_is_its_remote(inside_a_clone: Path) -> None:
    assert workspace_namespace(str(inside_a_clone / "src")) == "workspace:github.com/org/shop"


def test_windows_paths_are_their_own_workspaces(inside_a_clone: Path) -> None:
    assert workspace_namespace("E:\\work\\app") == "workspace:E:/work/app"
    assert workspace_namespace("e:/work/api") == "workspace:E:/work/api"
    assert workspace_namespace("\\\\fileserver\\team\\app") == "workspace://fileserver/team/app"
    assert workspace_namespace("app") == "workspace:app", "relative: itself, not the process's clone"


def test_rollouts_recorded_on_windows_import_into_a_workspace_each(
    inside_a_clone: Path, tmp_path: Path
) -> None:
    def said(text: str) -> dict[str, object]:
        return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}

    namespaces = []
    for n, cwd in enumerate(["E:\\work\\app", "E:\\work\\api"]):
        path = tmp_path / f"rollout-{n}.jsonl"
        lines = [
            {"id": f"t-{n}", "timestamp": "2025-09-24T00:55:32.770Z", "instructions": None},
            said(f"<environment_context>\n  <cwd>{cwd}</cwd>\n</environment_context>"),
            said("We deploy on Thursdays."),
        ]
        path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
        [episode] = transcript_episodes(transcripts.read("codex", path), "ana", 10_000)
        namespaces.append(episode.namespace)
    assert namespaces == ["workspace:E:/work/app", "workspace:E:/work/api"]
