"""The files people keep read into entries (mnemo.importing.notes), on real-format files
(tests/data/notes): CLAUDE.md and AGENTS.md as /init and the agents.md convention write them,
Claude Code's auto-memory directory, Codex's memory folder. (Through the daemon:
tests/daemon/test_notes_import.py.)"""

from __future__ import annotations

from pathlib import Path
from typing import get_args

import pytest

from mnemo.api.notes import NoteSource
from mnemo.errors import InputError
from mnemo.importing.notes import guess_type, read_notes
from mnemo.vocabulary import NOTE_SOURCES, MemoryType
from tests.helpers import DATA

NOTES = DATA / "notes"
PERSON = "person:ana"


def _read(source: NoteSource, path: Path) -> list[tuple[str, int, str, str]]:
    return [
        (e.path.name, e.line, e.type.value, e.text)
        for e in read_notes(source, [path], PERSON, Path("/nohome"))
    ]


def test_the_command_offers_the_sources_the_api_takes() -> None:
    assert get_args(NoteSource) == NOTE_SOURCES


def test_claude_md_gives_each_item_and_paragraph_under_its_heading() -> None:
    entries = _read("claude-md", NOTES / "CLAUDE.md")
    assert [(line, kind) for _, line, kind, _ in entries] == [
        (9, "procedure"), (10, "procedure"), (14, "fact"), (18, "fact"),
        (23, "preference"), (24, "preference"), (25, "decision"), (26, "fact"),
    ]  # fmt: skip
    texts = [text for *_, text in entries]
    # The command's code block goes with the item it illustrates; wrapped lines are one entry.
    assert texts[1] == "Commands: Run the unit tests before every push:\n```\n  uv run pytest -m unit\n```"
    assert texts[3].startswith("Architecture: The API is a Starlette app") and texts[3].endswith(
        "for reporting."
    )
    # Left out: the title, the generated preamble, the HTML comment, the @import.
    assert not any(
        "guidance to Claude Code" in t or "Keep this file short" in t or "@docs" in t for t in texts
    )


def test_a_repositorys_file_is_its_workspaces_and_a_users_own_file_the_persons(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".claude").mkdir(parents=True)
    own = home / ".claude" / "CLAUDE.md"
    own.write_text("- Always answer in English, even when asked in Spanish.\n")
    repo = tmp_path / "shop"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "config").write_text('[remote "origin"]\n\turl = git@github.com:shop/api.git\n')
    (repo / "CLAUDE.md").write_text("- Money is kept as integer cents everywhere.\n")
    found = read_notes("claude-md", [own, repo], PERSON, home)
    assert [(e.namespace, e.type) for e in found] == [
        (PERSON, MemoryType.PREFERENCE),
        ("workspace:github.com/shop/api", MemoryType.FACT),
    ]


def test_auto_memory_topic_files_carry_their_why_and_how_and_the_index_adds_only_its_own_lines() -> None:
    entries = read_notes("claude-auto-memory", [NOTES / "claude-projects"], PERSON, Path("/nohome"))
    by_file = {e.path.name: e for e in entries}
    assert sorted(by_file) == ["MEMORY.md", "feedback_testing.md", "project_release.md", "user_role.md"]
    testing = by_file["feedback_testing.md"]
    assert testing.text == "Integration tests must hit a real PostgreSQL, never a mock."
    assert testing.why.startswith("a mocked database hid a broken migration")
    assert testing.how.startswith("start the test database with `docker compose up db`")
    assert testing.type is MemoryType.PREFERENCE  # feedback
    # The project's directory comes from its transcripts' cwd; a user memory is the person's.
    assert testing.namespace == "workspace:/home/ana/shop" and by_file["user_role.md"].namespace == PERSON
    assert by_file["MEMORY.md"].text == "The order service's p95 budget is 250 ms; alerts fire at 300 ms."


def test_codex_memories_give_the_handbooks_bullets_and_the_general_tips() -> None:
    entries = read_notes("codex-memories", [NOTES / "codex-memories"], PERSON, Path("/nohome"))
    assert [(e.path.name, e.line, e.namespace) for e in entries] == [
        ("MEMORY.md", 8, "workspace:/home/ana/shop"),
        ("MEMORY.md", 9, "workspace:/home/ana/shop"),
        ("memory_summary.md", 7, PERSON),
        ("memory_summary.md", 8, PERSON),
    ]
    assert entries[2].text == "Answer with the command first, the explanation after."


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Root cause: the cache TTL was longer than the token's", MemoryType.POSTMORTEM),
        ("We decided to use Postgres for orders", MemoryType.DECISION),
        ("Decidimos desplegar los jueves", MemoryType.DECISION),
        ("Never push on Fridays", MemoryType.PREFERENCE),
        ("I prefer short answers", MemoryType.PREFERENCE),
        ("Run `make ship` to deploy", MemoryType.PROCEDURE),
        ("The API runs on Starlette", MemoryType.FACT),
    ],
)
def test_a_type_is_guessed_from_the_words(text: str, expected: MemoryType) -> None:
    assert guess_type(text) is expected


def test_a_private_span_over_several_entries_hides_them_all(tmp_path: Path) -> None:
    file = tmp_path / "CLAUDE.md"
    file.write_text(
        "## Ops\n\n- Deploys go through the release train every Thursday.\n\n<private>\n\n"
        "- The staging admin logs in as root with the usual one.\n\n- Internal client is Acme Corp.\n\n"
        "</private>\n\n- Rollbacks use `make rollback` from main.\n"
    )
    texts = [e.text for e in read_notes("claude-md", [file], PERSON, tmp_path)]
    assert texts == [
        "Ops: Deploys go through the release train every Thursday.",
        "Ops: Rollbacks use `make rollback` from main.",
    ]


def test_nothing_to_import_is_said_plainly(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="nothing to import from agents-md"):
        read_notes("agents-md", [tmp_path / "AGENTS.md"], PERSON, tmp_path)
