"""`mnemo import`: idempotent by id, bad lines reported by number while good lines are kept."""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import Home


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


def test_a_file_of_large_lines_is_sent_in_batches_under_the_daemons_request_cap(
    home: Home, tmp_path: Path
) -> None:
    """380 lines of ~190 KB (72 MB: one batch of them would pass the daemon's 64 MB cap)."""
    prose = "the staging cluster is called Bluebird and deploys go out on Thursdays. " * 2_600
    source = tmp_path / "large.jsonl"
    with source.open("w") as out:
        for i in range(380):
            out.write(_line(i, text=f"{i} {prose[:190_000]}") + "\n")
    assert source.stat().st_size > 64 * 1024 * 1024
    result = home.mnemo("import", str(source), "--quiet", timeout=600)
    assert "380 lines: 380 new episodes, 0 already present, 0 bad lines" in result.stdout
    assert json.loads(home.mnemo("status", "--json").stdout)["episodes"] == 380


def test_a_byte_order_mark_at_the_start_of_the_file_is_skipped(home: Home, tmp_path: Path) -> None:
    source = tmp_path / "bom.jsonl"
    source.write_bytes(b"\xef\xbb\xbf" + "\n".join(_line(i) for i in range(3)).encode() + b"\n")
    result = home.mnemo("import", str(source))
    assert "3 lines: 3 new episodes, 0 already present, 0 bad lines" in result.stdout


def test_an_id_stored_with_another_text_is_reported_per_line_in_a_batch_and_across_imports(
    home: Home, tmp_path: Path
) -> None:
    first = tmp_path / "first.jsonl"
    first.write_text("\n".join([_line(1), _line(2), _line(1, text="a different text"), _line(2)]) + "\n")
    result = home.mnemo("import", str(first), check=False)
    assert result.returncode == 1
    assert "4 lines: 2 new episodes, 1 already present, 1 bad lines" in result.stdout
    assert (
        f"{first}:3: id 'imp-1' is stored already with another text; episodes never change" in result.stderr
    )
    again = tmp_path / "again.jsonl"
    again.write_text("\n".join([_line(2), _line(3), _line(2, text="changed since")]) + "\n")
    result = home.mnemo("import", str(again), "--batch-lines", "1", check=False)
    assert "3 lines: 1 new episodes, 1 already present, 1 bad lines" in result.stdout
    assert f"{again}:3: id 'imp-2' is stored already with another text" in result.stderr
    stored = json.loads(home.mnemo("recall-episode", "imp-2", "--json").stdout)
    assert stored["episodes"][0]["episode"]["text"] == "line 2: the staging cluster is called Bluebird"


def test_a_time_must_be_a_date_and_one_without_a_zone_is_read_as_utc_and_said(
    home: Home, tmp_path: Path
) -> None:
    source = tmp_path / "times.jsonl"
    lines = [
        _line(1, time=0),
        _line(2, time=1_767_225_600),
        _line(3, time="2026-05-01T10:00:00"),
        _line(4),
        _line(5, time="0"),
        _line(6, time="1767225600.5"),
        _line(7, time="0001-01-01T00:00:00+01:00"),  # before year 1 in UTC
        _line(8, turn=20_000_000),
        _line(9),  # the lines before do not stop the import
    ]
    source.write_text("\n".join(lines) + "\n")
    result = home.mnemo("import", str(source), check=False)
    assert "9 lines: 3 new episodes, 0 already present, 6 bad lines" in result.stdout
    for number in (1, 2, 5, 6):
        assert f"{source}:{number}: time: Value error, give an ISO 8601 date-time" in result.stderr
    assert (
        f"{source}:7: time: Value error, the time in UTC falls outside the years 1 to 9999" in result.stderr
    )
    assert f"{source}:8: turn: Input should be less than or equal to 10000000" in result.stderr
    assert f"{source}: 1 lines gave a time with no zone (first: line 3); read as UTC" in result.stderr
    stored = json.loads(home.mnemo("recall-episode", "imp-3", "--json").stdout)
    assert stored["episodes"][0]["episode"]["time"].startswith("2026-05-01T10:00:00")
    assert stored["episodes"][0]["episode"]["time"].endswith(("Z", "+00:00"))


def _turns(home: Home, session: str) -> dict[str, int | None]:
    found = json.loads(home.mnemo("recall-episode", "--session", session, "--limit", "200", "--json").stdout)
    return {hit["episode"]["id"]: hit["episode"]["turn"] for hit in found["episodes"]}


def test_lines_without_a_turn_are_numbered_by_time_then_line_after_the_sessions_turns(
    home: Home, tmp_path: Path
) -> None:
    home = home.with_env(MNEMO_EMBEDDER="none")  # recall by words alone: candidates are exact
    source = tmp_path / "chat.jsonl"
    lines = [
        _line(1, id="late", session="chat", time="2026-05-01T10:05:00Z", text="See you at the retro."),
        _line(2, id="answer", session="chat", time="2026-05-01T10:01:00Z", text="It is called Bluebird."),
        _line(3, id="ask", session="chat", time="2026-05-01T10:00:00Z", text="What is staging called?"),
        _line(4, id="thanks", session="chat", time="2026-05-01T10:01:00Z", text="Thanks, noted."),
        _line(5, id="given-7", session="mixed", turn=7, text="Seven."),
        _line(6, id="unnumbered", session="mixed", time="2026-05-01T09:00:00Z", text="Early."),
        _line(7, id="given-5", session="mixed", turn=5, text="Five."),
        _line(8, id="answer", session="chat", time="2026-05-01T09:00:00Z", text="It is called Bluebird."),
    ]
    source.write_text("\n".join(lines) + "\n")
    assert "8 lines: 7 new episodes, 1 already present" in home.mnemo("import", str(source)).stdout
    # By time; "answer" and "thanks" share one, so the earlier line first; a repeated id is one episode.
    chat = {"ask": 0, "answer": 1, "thanks": 2, "late": 3}
    assert _turns(home, "chat") == chat
    # Given turns stand; the line without one follows the highest, whatever its time.
    assert _turns(home, "mixed") == {"given-5": 5, "given-7": 7, "unnumbered": 8}
    assert "8 lines: 0 new episodes, 8 already present" in home.mnemo("import", str(source)).stdout
    assert _turns(home, "chat") == chat
    more = tmp_path / "more.jsonl"  # the session again, later: after what is stored
    more.write_text(_line(9, id="more", session="chat", time="2026-05-01T09:30:00Z", text="And prod?") + "\n")
    assert "1 lines: 1 new episodes" in home.mnemo("import", str(more)).stdout
    assert _turns(home, "chat") == {**chat, "more": 4}
    # Recall reads the turns: the question and the thanks are found beside the answer that matched.
    found = json.loads(home.mnemo("recall", "Bluebird", "--explain", "--json").stdout)["episodes"]
    context = {hit["episode"]["id"]: hit["explain"]["context"] for hit in found}
    assert context["answer"] == 0.0 and context["ask"] > 0 and context["thanks"] > 0
    assert set(context) == {"answer", "ask", "thanks"}
