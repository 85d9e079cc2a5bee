"""The export file (``mnemo export``, read back by ``mnemo import --memories``): memory versions,
the entities they name and, when asked, episodes — as JSONL or as Markdown.

Written the same way every time from the same records (no date, no version of mnemo, records in
a fixed order: namespaces by name, memories by id and version, entities by key, episodes by
namespace and id) and read back to exactly those records, so an export imported into an empty
store exports again byte for byte.

**JSONL**: one JSON object a line, ``record`` first — the header (``mnemo-export``), then one
``memory`` line per version, ``entity`` lines, ``episode`` lines.

**Markdown**, to read (and to commit beside the code)::

    # mnemo export

    ```mnemo-export
    {"format": 1, "history": false, "episodes": false, "namespaces": null}
    ```

    ## workspace:github.com/shop/api

    ### mem_0193b1c2d4e5f60718293a4b5c

    > We deploy on Thursdays.

    ```mnemo-memory
    version: 1
    type: "decision"
    why: "Tuesday deploys collided with the release train"
    …
    ```

A memory's section is its id (a heading), its content quoted line by line (``> ``; an empty line
is ``>``), then its other fields, one ``name: JSON value`` a line (empty ones left out, and ``what`` when it
is the content; content holding a carriage return is given as a field too, which wins over the
quote). Entities
and episodes follow in ``## Entities`` and ``## Episodes``, one JSON object a line in a
``mnemo-entities`` / ``mnemo-episodes`` block. Namespace headings only group what follows: each
version names its own namespace.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any, Literal, TextIO

from mnemo.errors import InputError

FORMAT = 1
Format = Literal["jsonl", "markdown"]
Record = dict[str, Any]
# Fields a Markdown section leaves out when empty, and what they are then.
_EMPTY: dict[str, object] = {
    "who": "", "when": "", "where": "", "why": "", "how": "", "closed_by": "",
    "status_reason": "", "batch": "", "valid_to": None, "code": None, "replaces": "", "entities": [],
    "sources": [],
}  # fmt: skip
_TITLE = "# mnemo export"
_FENCE = "```"


def header(*, history: bool, episodes: bool, namespaces: list[str] | None) -> Record:
    return {"format": FORMAT, "history": history, "episodes": episodes, "namespaces": namespaces}


class ArchiveWriter:
    """Writes an export to ``out`` in ``fmt``: the header at once, then namespaces' memories,
    entities and episodes in the order they are given (the caller gives them in the file's order)."""

    def __init__(self, out: TextIO, fmt: Format, head: Record) -> None:
        self._out = out
        self._fmt: Format = fmt
        self._section = ""
        if fmt == "jsonl":
            self._line({"record": "mnemo-export", **head})
        else:
            out.write(f"{_TITLE}\n\n{_FENCE}mnemo-export\n{_json(head)}\n{_FENCE}\n")

    def memories(self, namespace: str, records: Iterable[Record]) -> None:
        """Memory versions (exported records, ``id`` first) of ``namespace``'s memories."""
        for record in records:
            if self._fmt == "jsonl":
                self._line({"record": "memory", **record})
                continue
            self._heading(namespace)
            content = record["content"]
            # A carriage return would not survive a reader's line ends: such content is a field.
            shown = content.replace("\r", "")
            quoted = "\n".join(f"> {line}" if line else ">" for line in shown.split("\n"))
            fields = [f"content: {_json(content)}"] if shown != content else []
            fields += [
                f"{name}: {_json(value)}"
                for name, value in record.items()
                if name not in ("id", "content") and not _is_implied(name, value, content)
            ]
            self._out.write(
                f"\n### {record['id']}\n\n{quoted}\n\n{_FENCE}mnemo-memory\n"
                + "\n".join(fields)
                + f"\n{_FENCE}\n"
            )

    def entities(self, records: Iterable[Record]) -> None:
        self._block("entity", "Entities", records)

    def episodes(self, records: Iterable[Record]) -> None:
        self._block("episode", "Episodes", records)

    def _block(self, kind: str, title: str, records: Iterable[Record]) -> None:
        if self._fmt == "jsonl":
            for record in records:
                self._line({"record": kind, **record})
            return
        lines = [_json(record) for record in records]
        if lines:
            self._heading(title)
            self._out.write(f"\n{_FENCE}mnemo-{title.lower()}\n" + "\n".join(lines) + f"\n{_FENCE}\n")

    def _heading(self, title: str) -> None:
        if title != self._section:
            self._section = title
            self._out.write(f"\n## {title}\n")

    def _line(self, record: Record) -> None:
        self._out.write(_json(record) + "\n")


def _is_implied(name: str, value: object, content: str) -> bool:
    """Whether a Markdown section may leave the field out: empty, or (``what``) the content."""
    if name == "what":
        return value == content
    return name in _EMPTY and value == _EMPTY[name]


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False)


def read_archive(lines: Iterable[str], name: str) -> Iterator[tuple[int, Record]]:
    """The records of an export file (``lines`` with their line ends, as a file gives them), each
    with the number of the line it starts on: the header first (``record`` ``mnemo-export``), then
    ``memory``, ``entity`` and ``episode`` records. A line that is not what the format says is an
    InputError naming ``name`` and the line."""
    numbered = enumerate((line.removesuffix("\n") for line in lines), start=1)
    first = next(numbered, None)
    if first is None:
        raise InputError(f"{name}: empty file; not a mnemo export")
    if first[1].startswith("{"):
        yield from _read_jsonl(first, numbered, name)
    elif first[1] == _TITLE:
        yield from _read_markdown(numbered, name)
    else:
        raise InputError(f"{name}:1: not a mnemo export (a JSONL or Markdown file `mnemo export` wrote)")


def _read_jsonl(
    first: tuple[int, str], numbered: Iterator[tuple[int, str]], name: str
) -> Iterator[tuple[int, Record]]:
    head = _object(first[1], f"{name}:{first[0]}")
    if head.get("record") != "mnemo-export":
        raise InputError(f"{name}:1: the first line is not a mnemo export's header")
    yield first[0], _checked_header(head, f"{name}:1")
    for number, line in numbered:
        if not line.strip():
            continue
        record = _object(line, f"{name}:{number}")
        if record.get("record") not in ("memory", "entity", "episode"):
            raise InputError(f"{name}:{number}: record must be memory, entity or episode")
        yield number, record


def _read_markdown(numbered: Iterator[tuple[int, str]], name: str) -> Iterator[tuple[int, Record]]:
    lines = _Lines(numbered, name)
    lines.blank()
    number, block = lines.block("mnemo-export")
    if len(block) != 1:
        raise InputError(f"{name}:{number}: the mnemo-export block holds one JSON object")
    yield (
        number,
        _checked_header({"record": "mnemo-export", **_object(block[0], f"{name}:{number + 1}")}, name),
    )
    while (line := lines.next_content()) is not None:
        number, text = line
        if text.startswith("### "):
            yield number, _markdown_memory(text[4:], lines)
        elif text.startswith(_FENCE + "mnemo-entities") or text.startswith(_FENCE + "mnemo-episodes"):
            kind = "entity" if "entities" in text else "episode"
            for offset, item in enumerate(lines.rest_of_block(), start=1):
                yield number + offset, {"record": kind, **_object(item, f"{name}:{number + offset}")}
        elif not text.startswith("## "):
            raise InputError(f"{name}:{number}: expected a heading or a block, found {text[:60]!r}")


def _markdown_memory(memory_id: str, lines: _Lines) -> Record:
    lines.blank()
    content: list[str] = []
    while (quoted := lines.peek()) is not None and quoted[1].startswith(">"):
        lines.take()
        text = quoted[1]
        if text != ">" and not text.startswith("> "):
            raise InputError(f"{lines.name}:{quoted[0]}: a quoted content line starts with '> '")
        content.append(text[2:])
    if not content:
        at = lines.peek()
        where = f"{lines.name}:{at[0] if at else 'end'}"
        raise InputError(f"{where}: expected the memory's content, quoted ('> ' before each line)")
    lines.blank()
    number, fields = lines.block("mnemo-memory")
    record: Record = {"record": "memory", "id": memory_id.strip(), "content": "\n".join(content)}
    for offset, field in enumerate(fields, start=1):
        key, sep, value = field.partition(": ")
        if not sep:
            raise InputError(f"{lines.name}:{number + offset}: a field line is `name: JSON value`")
        record[key] = _value(value, f"{lines.name}:{number + offset}")
    implied = {**_EMPTY, "what": record["content"]}
    return {**{k: v for k, v in implied.items() if k not in record}, **record}


class _Lines:
    """A Markdown export's lines, read one at a time with one line of look-ahead."""

    def __init__(self, numbered: Iterator[tuple[int, str]], name: str) -> None:
        self._numbered = numbered
        self._ahead: tuple[int, str] | None = None
        self.name = name

    def peek(self) -> tuple[int, str] | None:
        if self._ahead is None:
            self._ahead = next(self._numbered, None)
        return self._ahead

    def take(self) -> tuple[int, str]:
        line = self.peek()
        if line is None:
            raise InputError(f"{self.name}: the file ends in the middle of a record")
        self._ahead = None
        return line

    def blank(self) -> None:
        number, text = self.take()
        if text.strip():
            raise InputError(f"{self.name}:{number}: expected an empty line, found {text[:60]!r}")

    def next_content(self) -> tuple[int, str] | None:
        """The next line that is not empty (None at the end of the file)."""
        while (line := self.peek()) is not None:
            self._ahead = None
            if line[1].strip():
                return line
        return None

    def block(self, info: str) -> tuple[int, list[str]]:
        """A fenced block of ``info``: its first line's number and the lines inside."""
        number, text = self.take()
        if text != _FENCE + info:
            raise InputError(f"{self.name}:{number}: expected {_FENCE}{info}, found {text[:60]!r}")
        return number, self.rest_of_block()

    def rest_of_block(self) -> list[str]:
        """The lines up to the block's closing fence (the opening one read already)."""
        inside = []
        while (line := self.take())[1] != _FENCE:
            inside.append(line[1])
        return inside


def _object(text: str, where: str) -> Record:
    value = _value(text, where)
    if not isinstance(value, dict):
        raise InputError(f"{where}: expected a JSON object")
    return value


def _value(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except ValueError as exc:
        raise InputError(f"{where}: not JSON ({exc})") from None


def _checked_header(head: Record, where: str) -> Record:
    if head.get("format") != FORMAT:
        raise InputError(f"{where}: export format {head.get('format')!r}; this mnemo reads format {FORMAT}")
    return head
