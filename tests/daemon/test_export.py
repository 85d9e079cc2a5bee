"""mnemo export and mnemo import --memories through the real CLI and daemon: an export imported
into an empty store exports again byte for byte (JSONL and Markdown, with closed and forgotten
memories, history and episodes); a second import adds nothing; a memory stored with other content
under the same id is reported and left as it is; a credential is refused with its line. (The
file format alone: tests/unit/test_archive.py.)"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from mnemo.episodes import EpisodeIn, EpisodeIntake, Role
from mnemo.memories import AnchoredFile, CodeAnchor, EntityRef, Origin
from mnemo.secrets import SecretRedactor
from mnemo.store import open_store
from mnemo.vocabulary import MemoryStatus, MemoryType
from tests.helpers import Home, isolated_home, make_memory

AT = datetime(2026, 11, 3, 9, 30, tzinfo=UTC)
NS = "workspace:github.com/shop/api"


def _seed(home: Home) -> None:
    """A store with a history: a decision the writer closed (two versions each side), a candidate
    approved after an edit, odd content, a code anchor; then a remember and a forget by the CLI."""
    store = open_store(home.settings.store)
    try:
        store.migrate()
        intake = EpisodeIntake(max_chars=10_000, default_namespace=NS, redactor=SecretRedactor())
        store.append_episodes(
            [
                intake.accept(EpisodeIn(id="ep_x_1", text="we deploy on Tuesdays", session="s-x", turn=1)),
                intake.accept(
                    EpisodeIn(
                        id="ep_x_2", text="deploys move to Thursdays", role=Role.USER, session="s-x", turn=4
                    )
                ),
            ]
        )
        tuesday = make_memory(
            "mem_tuesday", "We deploy on Tuesdays", AT, namespace=NS, sources=["ep_x_1"], confidence=0.82,
            entities=[EntityRef(name="deploys", role="subject")],
        )  # fmt: skip
        thursday = make_memory(
            "mem_thursday", "We deploy on Thursdays", AT + timedelta(days=2), namespace=NS,
            sources=["ep_x_2"], why="Tuesday deploys collided\r\nwith the release train",
            how="`make ship` from main",
            code=CodeAnchor(commit="f" * 40, files=[AnchoredFile(path="Makefile", blob="e" * 40)]),
        )  # fmt: skip
        closed = tuesday.model_copy(
            update={
                "version": 2, "status": MemoryStatus.CLOSED, "closed_by": "mem_thursday",
                "valid_to": AT + timedelta(days=2), "updated_at": AT + timedelta(days=2),
                "status_reason": "updated by a newer memory",
            }
        )  # fmt: skip
        store.put_memories([tuesday], batch="batch_first")
        store.put_memories([thursday, closed], batch="batch_second")
        candidate = make_memory(
            "mem_cand", "Staging resets at 02:00 (UTC)\n\n> quoted, `ticks` and ```fences```", AT,
            namespace="person:tester", status=MemoryStatus.CANDIDATE, origin=Origin.DISTILLED,
            type=MemoryType.FACT, seen_count=2,
        )  # fmt: skip
        approved = candidate.model_copy(
            update={"version": 2, "status": MemoryStatus.ACTIVE, "has_human_backing": True, "updated_at": AT}
        )
        store.put_memories([candidate])
        store.put_memories([approved])
        store.upsert_entities([("deploys", "deploys", ["ship", "release"])])
    finally:
        store.close()
    home.mnemo("remember", "The primary database keeps two replicas", "--type", "fact", "--entity",
               "PostgreSQL:subject=pg,postgres")  # fmt: skip
    gone = json.loads(home.mnemo("remember", "Staging is on Heroku", "--type", "fact", "--json").stdout)
    home.mnemo("forget", gone["id"], "--reason", "moved to Fly")


def _export(home: Home, path: Path, *extra: str) -> bytes:
    home.mnemo("export", str(path), "--with-history", "--with-episodes", *extra)
    return path.read_bytes()


@pytest.mark.parametrize("fmt", ["jsonl", "markdown"])
def test_export_import_export_is_byte_identical_with_history_closed_and_forgotten(
    home: Home, tmp_path: Path, fmt: str
) -> None:
    _seed(home)
    first = _export(home, tmp_path / "first", "--format", fmt)
    text = first.decode()
    assert "mem_tuesday" in text and "mem_thursday" in text and "forgotten" in text and "closed" in text
    assert text.count("mem_cand") >= 2  # both of its versions
    with isolated_home() as empty:
        done = empty.mnemo("import", "--memories", str(tmp_path / "first"))
        assert "5 memories: 5 written (8 versions), 0 already present, 0 problems" in done.stdout
        assert _export(empty, tmp_path / "again", "--format", fmt) == first
        # Recall works on what was imported: by an alias the export carried.
        found = empty.mnemo("recall", "how many replicas does pg keep?").stdout
        assert "two replicas" in found
        # Imported again: nothing is written, nothing is reported.
        again = empty.mnemo("import", "--memories", str(tmp_path / "first"))
        assert (
            "5 memories: 0 written (0 versions), 5 already present, 0 problems; 0 entities updated"
            in again.stdout
        )
        assert "0 new episodes" in again.stdout
        assert _export(empty, tmp_path / "third", "--format", fmt) == first


def test_the_markdown_export_imports_to_the_same_store_as_the_jsonl_one(home: Home, tmp_path: Path) -> None:
    _seed(home)
    jsonl = _export(home, tmp_path / "all.jsonl")
    _export(home, tmp_path / "all.md")  # the format from the name
    assert (tmp_path / "all.md").read_text().startswith("# mnemo export\n")
    with isolated_home() as empty:
        empty.mnemo("import", "--memories", str(tmp_path / "all.md"))
        assert _export(empty, tmp_path / "back.jsonl") == jsonl


def test_a_memory_stored_with_other_content_is_reported_and_left_as_stored(
    home: Home, tmp_path: Path
) -> None:
    _seed(home)
    path = tmp_path / "edited.jsonl"
    _export(home, path)
    lines = path.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if '"id": "mem_thursday"' in line)
    lines[at] = lines[at].replace("We deploy on Thursdays", "We deploy on Fridays")
    secret_at = next(i for i, line in enumerate(lines) if '"id": "mem_cand"' in line)
    lines[secret_at] = lines[secret_at].replace(
        "Staging resets", "ghp_4f9d8c7b6a5e4d3c2b1a0f9e8d7c6b5a4f3e2d1c resets"
    )
    path.write_text("\n".join(lines) + "\n")
    done = home.mnemo("import", "--memories", str(path), check=False)
    assert done.returncode == 1
    assert f"{path}:{at + 1}: mem_thursday: conflict: version 1 is stored with other content" in done.stderr
    assert (
        f"{path}:{secret_at + 1}: mem_cand: refused: version 1: content: holds what looks like a credential"
        in (done.stderr)
    )
    assert "ghp_" not in done.stderr  # named by kind, never by value
    assert "3 already present, 2 problems" in done.stdout
    shown = home.mnemo("recall", "which day do we deploy?", "--json").stdout
    assert "Thursdays" in shown and "Fridays" not in shown


def test_an_export_of_one_namespace_holds_only_it(home: Home, tmp_path: Path) -> None:
    _seed(home)
    path = tmp_path / "one.jsonl"
    home.mnemo("export", str(path), "--namespace", "person:tester", "--quiet")
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert records[0] == {
        "record": "mnemo-export", "format": 1, "history": False, "episodes": False,
        "namespaces": ["person:tester"],
    }  # fmt: skip
    memories = [r for r in records if r["record"] == "memory"]
    assert {m["namespace"] for m in memories} == {"person:tester"} and len(memories) == 3
    assert {r["name"] for r in records if r["record"] == "entity"} == {"PostgreSQL"}


def test_a_file_that_is_not_an_export_is_refused_with_its_line(home: Home, tmp_path: Path) -> None:
    path = tmp_path / "notes.md"
    path.write_text("# My notes\n\n- deploy on Thursdays\n")
    done = home.mnemo("import", "--memories", str(path), check=False)
    assert done.returncode == 1 and f"{path}:1: not a mnemo export" in done.stderr
    bad = tmp_path / "bad.jsonl"
    header = (
        '{"record": "mnemo-export", "format": 1, "history": false, "episodes": false, "namespaces": null}'
    )
    elsewhere = json.dumps({"record": "memory", **_a_memory(), "namespace": "team:x"})
    bad.write_text(header + '\n{"record": "memory", "id": "mem_1"}\n' + elsewhere + "\n")
    done = home.mnemo("import", "--memories", str(bad), check=False)
    assert done.returncode == 1 and f"{bad}:2: version: Field required" in done.stderr
    assert f"{bad}:3: namespace: String should match pattern" in done.stderr


def _a_memory() -> dict[str, object]:
    return make_memory("mem_ok", "We deploy on Thursdays", AT).model_dump(mode="json")
