"""`mnemo import`: idempotent by id, bad lines reported by number while good lines are kept."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import Home


def _line(i: int, **changes: object) -> str:
    record: dict[str, object] = {
        "id": f"imp-{i}", "session": "import-s", "time": f"2026-05-0{1 + i % 9}T10:00:00Z",
        "who": "Ana" if i % 2 else "assistant", "role": "user" if i % 2 else "assistant",
        "text": f"line {i}: the staging cluster is called Bluebird",
    }  # fmt: skip
    record.update(changes)
    return json.dumps({k: v for k, v in record.items() if v is not None})


def test_importing_the_same_file_twice_stores_each_episode_once(home: Home, tmp_path: Path) -> None:
    source = tmp_path / "episodes.jsonl"
    source.write_text("\n".join(_line(i, turn=i) for i in range(30)) + "\n")
    first = home.mnemo("import", str(source))
    assert "30 lines: 30 new episodes, 0 already present, 0 bad lines" in first.stdout
    second = home.mnemo("import", str(source))
    assert "30 lines: 0 new episodes, 30 already present, 0 bad lines" in second.stdout
    status = json.loads(home.mnemo("status", "--json").stdout)
    assert status["episodes"] == 30
    episodes = json.loads(
        home.mnemo("recall-episode", "--session", "import-s", "--limit", "200", "--json").stdout
    )
    assert [hit["episode"]["id"] for hit in episodes["episodes"]] == [f"imp-{i}" for i in range(30)]
    assert episodes["episodes"][1]["episode"]["who"] == "Ana"
    assert episodes["episodes"][1]["episode"]["kind"] == "prompt"
    assert episodes["episodes"][0]["episode"]["kind"] == "response"


def test_bad_lines_are_reported_with_their_numbers_and_good_lines_kept(home: Home, tmp_path: Path) -> None:
    small = home.with_env(MNEMO_MAX_EPISODE_CHARS="200")
    lines = [
        _line(1),
        "{not json",
        _line(3, role="narrator"),
        _line(4, session=None),
        "",
        _line(6, text="x" * 201),
        _line(7, colour="red"),
        _line(8, time="yesterday"),
        _line(9, kind="compaction"),
    ]
    source = tmp_path / "mixed.jsonl"
    source.write_text("\n".join(lines) + "\n")
    result = small.mnemo("import", str(source), check=False)
    assert result.returncode == 1
    errors = {
        int(line.split(":")[1]): line for line in result.stderr.splitlines() if line.startswith(str(source))
    }
    assert set(errors) == {2, 3, 4, 6, 7, 8}
    assert "not a JSON object" in errors[2]
    assert "role" in errors[3]
    assert "session" in errors[4] and "Field required" in errors[4]
    assert "201 characters; the cap is 200" in errors[6]
    assert "colour" in errors[7]
    assert "time" in errors[8]
    assert "9 lines: 2 new episodes, 0 already present, 6 bad lines" in result.stdout
    kept = json.loads(small.mnemo("recall-episode", "--session", "import-s", "--json").stdout)
    assert sorted(hit["episode"]["id"] for hit in kept["episodes"]) == ["imp-1", "imp-9"]
    assert {hit["episode"]["kind"] for hit in kept["episodes"]} == {"prompt", "compaction"}


def test_progress_is_shown_on_stderr_for_an_import(home: Home, tmp_path: Path) -> None:
    source = tmp_path / "many.jsonl"
    source.write_text("\n".join(_line(i) for i in range(2500)) + "\n")
    result = home.mnemo("import", str(source), "--batch-lines", "500")
    progress = [line for line in result.stderr.splitlines() if line.startswith("importing many.jsonl")]
    assert len(progress) >= 3 and progress[-1].split("]")[1].strip().startswith("100%")
    assert "2,500 lines: 2,500 new episodes" in result.stdout


def test_a_missing_file_is_a_clear_error(home: Home, tmp_path: Path) -> None:
    result = home.mnemo("import", str(tmp_path / "absent.jsonl"), check=False)
    assert result.returncode == 1
    assert "cannot read" in result.stderr and "absent.jsonl" in result.stderr
