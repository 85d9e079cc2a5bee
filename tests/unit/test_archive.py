"""The export file (mnemo.archive): what it writes reads back to the same records, in both formats,
whatever the content holds; what is not an export is refused with its line. (Through the CLI
and the daemon: tests/daemon/test_export.py.)"""

from __future__ import annotations

import io
import re
from typing import Any

import pytest

from mnemo.archive import ArchiveWriter, Format, header, read_archive
from mnemo.errors import InputError

CONTENTS = [
    "plain",
    "",
    "two\nlines",
    "ends with a line break\n",
    "\nstarts with one",
    "> a quote, `ticks`, ```a fence```\n\n### not a heading\n```mnemo-memory\nversion: 9\n```",
    "carriage\rreturn and \r\n crlf",
    "  leading and trailing spaces  ",
]


def _memory(number: int, content: str, **fields: Any) -> dict[str, Any]:
    return {
        "id": f"mem_{number:03d}", "version": 1, "type": "fact", "status": "active",
        "namespace": "person:ana",
        "content": content, "what": content, "who": "", "when": "", "where": "", "why": "", "how": "",
        "entities": [], "sources": [], "origin": "explicit", "created_at": "2026-11-03T09:30:00Z",
        "updated_at": "2026-11-03T09:30:00Z", "valid_from": "2026-11-03T09:30:00Z", "valid_to": None,
        "closed_by": "", "status_reason": "", "has_human_backing": False, "confidence": 0.8199999928474426,
        "seen_count": 1, "code": None, "replaces": "", "batch": "", **fields,
    }  # fmt: skip


def _written(fmt: Format, memories: list[dict[str, Any]]) -> str:
    out = io.StringIO()
    writer = ArchiveWriter(out, fmt, header(history=True, episodes=True, namespaces=None))
    writer.memories("person:ana", memories)
    writer.entities([{"key": "pg", "name": "pg", "aliases": ["postgres"]}])
    writer.episodes([{"id": "ep_1", "kind": "note", "text": "```\nx", "turn": None}])
    return out.getvalue()


def _read(text: str) -> list[dict[str, Any]]:
    # As a file gives its lines: each with its line end, "\r\n" read as "\n" (mnemo.importing.archive).
    return [record for _, record in read_archive(io.StringIO(text, newline="\n"), "f")]


@pytest.mark.parametrize("fmt", ["jsonl", "markdown"])
def test_what_is_written_reads_back_to_the_same_records(fmt: Format) -> None:
    memories = [_memory(i, c) for i, c in enumerate(CONTENTS)]
    memories.append(_memory(99, "x", what="", why="because\nof this", valid_to="2026-11-04T00:00:00Z"))
    text = _written(fmt, memories)
    records = _read(text)
    assert records[0] == {"record": "mnemo-export", **header(history=True, episodes=True, namespaces=None)}
    assert [r for r in records if r["record"] == "memory"] == [{"record": "memory", **m} for m in memories]
    assert records[-2:] == [
        {"record": "entity", "key": "pg", "name": "pg", "aliases": ["postgres"]},
        {"record": "episode", "id": "ep_1", "kind": "note", "text": "```\nx", "turn": None},
    ]
    # Written again from what was read: the same bytes.
    again = _written(fmt, [{k: v for k, v in r.items() if k != "record"} for r in records[1:-2]])
    assert again == text


def test_markdown_quotes_the_content_and_leaves_empty_fields_out() -> None:
    text = _written("markdown", [_memory(1, "We deploy on Thursdays\n\nfrom main", why="collisions")])
    assert (
        "\n### mem_001\n\n> We deploy on Thursdays\n>\n> from main\n\n```mnemo-memory\nversion: 1\n" in text
    )
    assert 'why: "collisions"' in text and "who:" not in text and "what:" not in text


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty file"),
        ("# notes\n", "f:1: not a mnemo export"),
        ('{"record": "memory"}\n', "f:1: the first line is not a mnemo export's header"),
        ('{"record": "mnemo-export", "format": 2}\n', "f:1: export format 2; this mnemo reads format 1"),
        ('{"record": "mnemo-export", "format": 1}\n{"record": "memory"\n', "f:2: not JSON"),
        ('{"record": "mnemo-export", "format": 1}\n[1]\n', "f:2: expected a JSON object"),
        ('{"record": "mnemo-export", "format": 1}\n{"record": "note"}\n', "f:2: record must be memory"),
        ("# mnemo export\n\n```mnemo-export\n{}\n```\n", "format None"),
        (
            '# mnemo export\n\n```mnemo-export\n{"format": 1}\n```\n\n### mem_1\n\nnot quoted\n',
            "f:9: expected the memory's content, quoted ('> ' before each line)",
        ),
        (
            '# mnemo export\n\n```mnemo-export\n{"format": 1}\n```\n\n### mem_1\n\n> x\n\n'
            "```mnemo-memory\nversion 1\n```\n",
            "f:12: a field line is `name: JSON value`",
        ),
        ('# mnemo export\n\n```mnemo-export\n{"format": 1}\n```\n\n### mem_1\n\n> x\n', "ends in the middle"),
    ],
)
def test_what_is_not_an_export_is_refused_with_its_line(text: str, message: str) -> None:
    with pytest.raises(InputError, match=re.escape(message)):
        _read(text)
