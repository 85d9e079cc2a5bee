"""What a memory names in code — identifiers, code spans and numbers — and what a file holds of
them now.

A memory names values ("the gateway timeout is 600 s via timeout_sec") and the file it is about
holds them on lines (``  timeout_sec = 600``). Each number on a line stands at a *site*: the name
right before it, with nothing but spaces, quotes and ``= : ( [ {`` between (``timeout_sec``,
``"ttlSeconds": 300``, ``sleep 30``, ``EXPOSE 8080``), or, with no such name, the line up to it
without spaces or quotes. A name followed by ``=`` or ``:`` and something that is not a number
(``desired_capacity = var.size``) is a site holding no number. Re-aligned ``=`` signs,
re-indentation, quote style and a block moved elsewhere in the file change no site.

A value the memory names is read at its sites in the old text — those whose lines, with the line
they sit under (the nearest one less indented) and the next one, share most words with the
memory — and each such site is found again in the new text: the one in the same place among the
sites of its name when the file has as many of them as before (the second ``memory:`` is the
limits' when the requests' comes first), else any of them. It is then:

- **held**: its sites still hold it (or the file no longer has any site of its name, and the
  value is still somewhere in it: the line was rewritten, and nothing says it changed);
- **changed**: a site of it now holds one other number (``timeout_sec = 900``), its other sites
  the value or that number;
- **gone**: otherwise (a site now holds no number, or several new ones).

A one-digit value ("3 retries") is read only at sites whose lines share a word with the memory:
alone, a digit is everywhere. No model is asked: a line is read only through its names and signs.
"""

from __future__ import annotations

import ast
import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from mnemo.numerals import as_digits

# A number on a line: a unit of up to three letters may be glued to it ("30s", "512Mi"); not part
# of a name (v2, x86), of a version (2.4.1) or of a longer number.
_TAIL = r"(?=[A-Za-z%]{0,3}(?!\w))(?!\.\d)"
_NUMBER = re.compile(rf"(?<![\w.])\d+(?:\.\d+)?{_TAIL}")
_IDENTIFIER = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]{2,80}\b")
_CAMEL = re.compile(r"[a-z]+[A-Z]\w*|[A-Z][a-z0-9]+[A-Z]\w*")
_CODE_SPAN = re.compile(r"`([^`\n]{3,80})`")
# The name right before a number, and the signs between them.
_NAME_BEFORE = re.compile(r"([A-Za-z_][\w.-]*)([\s=:(\[{\"'<>]*)$")
# A name given something that is not a number: `name = var.x`, `name: ${{ … }}`.
_NAME_GIVEN = re.compile(r"([A-Za-z_][\w.-]*)[\s\"']*(?::=|=>|[=:])[\s\"'(\[{]*(?=[^\s\d\"'(\[{])")
_SECTION = re.compile(r"\s*\[[^\]]+\]\s*$")
_UNIT = re.compile(r"[A-Za-z%]{0,3}")  # always matches
# A number followed by one or more operations on numbers: 60 * 60 * 24 * 14, 10*1024, 3600 + 60;
# + and - only between spaces (8080-8090 is a range, 2026-12-04 a date).
_ARITHMETIC = re.compile(r"\d+(?:\.\d+)?(?:(?:\s*[*/]\s*|\s+[-+]\s+)\d+(?:\.\d+)?)+(?![\w.])")
_NOT_BEFORE_NUMBER = re.compile(r"[\w.]")
_NUMBER_END = re.compile(_TAIL)
_WORD_CHAR = re.compile(r"\w")
_NAME_END = re.compile(r"(?!\w)")
_WORD = re.compile(r"[A-Za-z]{3,}")
_LOOSE = re.compile(r"[\s'\"`]+")
SHOWN_CHARS = 80


def named_values(texts: Iterable[str]) -> list[str]:
    """The numbers ``texts`` state (those written as words too: "three times"), in order, once each."""
    return list(dict.fromkeys(v for text in texts for v in _NUMBER.findall(as_digits(text))))


def named_symbols(texts: Iterable[str]) -> list[str]:
    """Identifiers that look like code (snake_case, SCREAMING_CASE, camelCase, PascalCase with two
    capitals or more), and spans written as code (`` `make migrate` ``), in order, once each."""
    found: dict[str, None] = {}
    for text in texts:
        for span in _CODE_SPAN.findall(text):
            found.setdefault(" ".join(span.split()), None)
        for token in _IDENTIFIER.findall(text):
            if is_code_name(token):
                found.setdefault(token, None)
    return list(found)


def is_code_name(token: str) -> bool:
    """Whether ``token`` is written as code writes names: timeout_sec, MAX_RETRIES, apiClient,
    ErrNotFound — not as prose writes words."""
    return "_" in token or _CAMEL.fullmatch(token) is not None


def holds_value(text: str, value: str) -> bool:
    """``value`` in ``text`` as a whole number (600 is not in 6000, 1600 or 600.5; it is in 600s)."""
    return _found(text, value, _NOT_BEFORE_NUMBER, _NUMBER_END)


def holds_symbol(text: str, symbol: str) -> bool:
    """``symbol`` in ``text`` as a whole name (``timeout`` is not in ``timeout_sec``); a code span
    with its spaces loose."""
    if any(c.isspace() for c in symbol):
        spaced = r"\s+".join(re.escape(part) for part in symbol.split())
        return re.search(rf"(?<!\w){spaced}(?!\w)", text) is not None
    return _found(text, symbol, _WORD_CHAR, _NAME_END)


def _found(text: str, token: str, not_before: re.Pattern[str], end: re.Pattern[str]) -> bool:
    """``token`` in ``text`` where the character before it is not ``not_before`` and ``end``
    matches right after it (found with str.find: a pattern per token would be compiled anew for
    each of a check's thousands of values)."""
    at = text.find(token)
    while at >= 0:
        if (at == 0 or not not_before.match(text, at - 1)) and end.match(text, at + len(token)):
            return True
        at = text.find(token, at + 1)
    return False


def anchors_value(text: str, value: str, memory: str) -> bool:
    """Whether ``value``, which ``memory`` names, is worth anchoring to ``text``: held there, and
    for a single digit, at a site whose lines share a word with the memory."""
    if len(value) > 1:
        return holds_value(text, value)
    lines, wanted = _Lines(text), _words(memory)
    return any(
        s.number == value and lines.context(s.line) & wanted
        for n in lines.with_(value)
        for s in lines.sites(n)
    )


@dataclass(frozen=True, slots=True)
class Reading:
    """What a file holds now of a value a memory names."""

    value: str
    state: str  # held | changed | gone
    now: str = ""  # changed: the number in its place
    line: str = ""  # changed: its site and the new number as the file has them ("timeout_sec = 900")


@dataclass(frozen=True, slots=True)
class _Site:
    key: str
    number: str | None  # None: a name given something that is not a number
    line: int
    begins: int = 0  # where its name (or its line's text) starts
    ends: int = 0  # where its number and unit end


_GONE = _Site("", None, -1)


def _computed(arithmetic: str) -> str | None:
    """The value of an arithmetic of numbers (+ - * /), as a number is written; None when it has
    none."""
    try:
        value = _evaluated(ast.parse(arithmetic.strip(), mode="eval").body)
    except (SyntaxError, ZeroDivisionError, OverflowError):
        return None
    if value is None or not math.isfinite(value) or abs(value) > 1e15:
        return None
    return str(int(value)) if value.is_integer() else f"{value:g}"


def _evaluated(node: ast.AST) -> float | None:
    if (
        isinstance(node, ast.Constant)
        and isinstance(node.value, int | float)
        and not isinstance(node.value, bool)
    ):
        return float(node.value)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub | ast.Mult | ast.Div):
        left, right = _evaluated(node.left), _evaluated(node.right)
        if left is None or right is None:
            return None
        match node.op:
            case ast.Add():
                return left + right
            case ast.Sub():
                return left - right
            case ast.Mult():
                return left * right
            case _:
                return left / right
    return None


class _Lines:
    """A file's lines, its sites worked out only on the lines asked about (a check reads hundreds of
    files at a time; most of their lines never matter)."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self._sites: dict[int, list[_Site]] = {}

    def with_(self, token: str) -> list[int]:
        """The lines ``token`` is in, as text."""
        return [n for n, line in enumerate(self.lines) if token in line]

    def holding(self, value: str) -> list[int]:
        return [n for n in self.with_(value) if holds_value(self.lines[n], value)]

    def sites(self, n: int) -> list[_Site]:
        """The sites on line ``n``; a number that starts an arithmetic of numbers holds its result
        (``60 * 60 * 24 * 14`` holds 1209600)."""
        if n not in self._sites:
            line, found, taken = self.lines[n], [], 0
            for match in _NUMBER.finditer(line):
                if match.start() < taken:
                    continue  # a term of the arithmetic before it
                prefix = line[: match.start()]
                name = _NAME_BEFORE.search(prefix)
                if name is not None:
                    key, begins = name.group(1), name.start()
                else:
                    key, begins = _LOOSE.sub("", prefix), len(prefix) - len(prefix.lstrip())
                number, ends = match.group(), match.end()
                arithmetic = _ARITHMETIC.match(line, match.start())
                if arithmetic is not None and (result := _computed(arithmetic.group())) is not None:
                    number, ends = result, arithmetic.end()
                taken = ends = ends + len(_UNIT.match(line, ends).group())  # type: ignore[union-attr]
                found.append(_Site(key, number, n, begins, ends))
            if "=" in line or ":" in line:
                found += [_Site(given.group(1), None, n) for given in _NAME_GIVEN.finditer(line)]
            self._sites[n] = found
        return self._sites[n]

    def sites_of(self, key: str) -> list[_Site]:
        """Every site of ``key``, in order."""
        probe = max(re.findall(r"[\w.-]+", key), key=len, default="")
        lines = self.with_(probe) if probe else range(len(self.lines))
        return [s for n in lines for s in self.sites(n) if s.key == key]

    def parent(self, n: int) -> str:
        """The line ``n`` sits under — the nearest before it that is less indented, or for a line
        that is not indented, the nearest ``[section]`` header (TOML, INI) — loose; '' for none."""
        line = self.lines[n]
        indent = len(line) - len(line.lstrip())
        for i in range(n - 1, -1, -1):
            above = self.lines[i]
            if not above.strip():
                continue
            depth = len(above) - len(above.lstrip())
            if (indent and depth < indent) or (not indent and not depth and _SECTION.match(above)):
                return _LOOSE.sub("", above)
        return ""

    def context(self, n: int) -> set[str]:
        """The words of line ``n``, of the line it sits under and of the next one."""
        following = next((line for line in self.lines[n + 1 :] if line.strip()), "")
        return _words(" ".join((self.lines[n], self.parent(n), following)))

    def shown(self, site: _Site) -> str:
        """A site and its number as a note quotes them: quotes dropped, spaces collapsed, bounded."""
        text = self.lines[site.line][site.begins : site.ends]
        text = " ".join(text.replace('"', "").replace("'", "").replace("`", "").split())
        return text if len(text) <= SHOWN_CHARS else "…" + text[-(SHOWN_CHARS - 1) :]


def read_value(old: str, new: str, value: str, memory: str) -> Reading:
    """``value``, which ``old`` held and ``memory`` names, read in ``new`` at its sites."""
    before, after = _Lines(old), _Lines(new)
    holding = before.holding(value)
    if not holding:  # the old text is not known (or never held it): only presence can be read
        return Reading(value, "held" if holds_value(new, value) else "gone")
    # Most edits leave the value's lines as they were, under the same lines: held, nothing to read.
    then = Counter((_LOOSE.sub("", before.lines[n]), before.parent(n)) for n in holding)
    now = Counter((_LOOSE.sub("", after.lines[n]), after.parent(n)) for n in after.holding(value))
    if all(now[line] >= count for line, count in then.items()):
        return Reading(value, "held")
    mine = [s for n in holding for s in before.sites(n) if s.number == value]
    wanted = _words(memory)
    overlap = [len(before.context(s.line) & wanted) for s in mine]
    relevant = [s for s, n in zip(mine, overlap, strict=True) if n == max(overlap)]
    found: list[_Site | None] = []  # each relevant site in the new text; None: its name is gone
    for site in relevant:
        olds, news = before.sites_of(site.key), after.sites_of(site.key)
        parent = before.parent(site.line)
        same_parent = [s for s in news if after.parent(s.line) == parent]
        if not news:
            found.append(None)
        elif len(same_parent) == 1 and sum(before.parent(s.line) == parent for s in olds) == 1:
            found.append(same_parent[0])  # the only one under the same line, then and now
        elif len(news) == len(olds):
            found.append(news[olds.index(site)])
        else:  # sites added or removed: the value anywhere there, else what is new there
            held = next((s for s in news if s.number == value), None)
            numbered = {s.number for s in olds}
            fresh = [s for s in news if s.number is not None and s.number not in numbered]
            found.append(held or (fresh[0] if len({s.number for s in fresh}) == 1 else _GONE))
    if all(s is None for s in found):  # a rewritten line: read by presence
        return Reading(value, "held" if holds_value(new, value) else "gone")
    numbers = {s.number for s in found if s is not None}
    if numbers == {value}:
        return Reading(value, "held")
    changed = [s for s in found if s is not None and s.number not in (None, value)]
    if None in numbers or len({s.number for s in changed}) != 1:
        return Reading(value, "gone")
    return Reading(value, "changed", now=str(changed[0].number), line=after.shown(changed[0]))


def _words(text: str) -> set[str]:
    """Lower-cased words of three letters or more, names split on _ and case (timeout_sec: timeout,
    sec), a plural's s dropped (limits: limit)."""
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", text).replace("_", " ")
    return {
        w[:-1] if len(w) > 3 and w.endswith("s") else w for w in (m.lower() for m in _WORD.findall(spaced))
    }
