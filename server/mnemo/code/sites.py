"""Where a file holds a value a memory names, and what it holds there after an edit.

A memory names values ("the gateway timeout is 600 s via timeout_sec") and the file it is about
holds them on lines (``  timeout_sec = 600``). Each number on a line stands at a *site*: the name
right before it, with nothing but spaces, quotes and ``= : ( [ {`` between (``timeout_sec``,
``"ttlSeconds": 300``, ``sleep 30``, ``EXPOSE 8080``), or, with no such name, the line up to it
without spaces or quotes; the unit glued to it is part of what it holds (``512Mi``); a number
that starts an arithmetic of numbers holds its result (``60 * 60 * 24 * 14`` holds 1209600). A
name followed by ``=`` or ``:`` and something that is not a number (``desired_capacity =
var.size``) is a site holding no number. Re-aligned ``=`` signs, re-indentation, quote style and a
block moved elsewhere in the file change no site.

A value is read at its sites in the old text — those whose lines, with the line they sit under
(the nearest one less indented, or a TOML/INI ``[section]``) and the next one, share most words
with the memory — each found again in the new text: the one under the same line, then and now;
else the one in the same place among the sites of its name when the file has as many of them as
before (the second ``memory:`` is the limits' when the requests' comes first); else any of them.
It is then:

- **held**: its sites still hold it, with the same unit (600.0 is 600), or the file no longer has
  any site of its name and the value is still somewhere in it (a rewritten line: nothing says it
  changed);
- **changed**: a site of it now holds one other number with the same unit (``timeout_sec = 900``),
  its other sites the value or that number;
- **gone**: otherwise (a site holds no number now, a number with another unit, or several new
  numbers; or the value has too many sites to tell which one the memory means, and is nowhere).

A one-digit value ("3 retries") is anchored only at sites whose lines share a word with the
memory: alone, a digit is everywhere. No model is asked: a line is read only through its names
and signs. The work is bounded by the lines that hold the value or its site's name; a line longer
than 4,000 characters (minified, generated) has no sites, and values there are read by presence.
"""

from __future__ import annotations

import ast
import math
import re
from collections import Counter
from dataclasses import dataclass

from mnemo.code.named import NUMBER, holds_value, words_of

# The name right before a number, and the signs between them.
_NAME_BEFORE = re.compile(r"([A-Za-z_][\w.-]*)([\s=:(\[{\"'<>]*)$")
# A name given something that is not a number: `name = var.x`, `name: ${{ … }}`.
_NAME_GIVEN = re.compile(r"([A-Za-z_][\w.-]*)[\s\"']*(?::=|=>|[=:])[\s\"'(\[{]*(?=[^\s\d\"'(\[{])")
_SECTION = re.compile(r"\s*\[[^\]]+\]\s*$")
_UNIT = re.compile(r"[A-Za-z%]{0,3}")  # always matches
# A number followed by up to 8 operations on numbers: 60 * 60 * 24 * 14, 10*1024, 3600 + 60; + and
# - only between spaces (8080-8090 is a range, 2026-12-04 a date).
_ARITHMETIC = re.compile(
    r"\d{1,20}(?:\.\d{1,20})?(?:(?:\s*[*/]\s*|\s+[-+]\s+)\d{1,20}(?:\.\d{1,20})?){1,8}(?![\w.])"
)
_LOOSE = re.compile(r"[\s'\"`]+")
SHOWN_CHARS = 80
_WINDOW_CHARS = 200
_LONGEST_LINE = 4_000
# A value with more sites than this that tie for the memory's words is read by presence alone.
MAX_SITES = 16


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
    unit: str = ""
    begins: int = 0  # where its name (or its line's text) starts
    ends: int = 0  # where its number and unit end


_GONE = _Site("", None, -1)


def anchors_value(text: str, value: str, memory: str) -> bool:
    """Whether ``value``, which ``memory`` names, is worth anchoring to ``text``: held there, and
    for a single digit, at a site whose lines share a word with the memory."""
    if len(value) > 1:
        return holds_value(text, value)
    lines, wanted = _Lines(text), words_of(memory)
    sites = [s for s in lines.sites_holding(value) if s.number == value][: MAX_SITES * 8]
    return any(lines.context(s.line) & wanted for s in sites)


def read_value(old: str, new: str, value: str, memory: str) -> Reading:
    """``value``, which ``old`` held and ``memory`` names, read in ``new`` at its sites."""
    before, after = _Lines(old), _Lines(new)
    holding = before.holding(value)
    if not holding:  # the old text is not known (or never held it): only presence can be read
        return _by_presence(new, value)
    # Most edits leave the value's lines as they were, under the same lines: held, nothing to read.
    then = Counter((_LOOSE.sub("", before.lines[n]), before.parent(n)) for n in holding)
    now = Counter((_LOOSE.sub("", after.lines[n]), after.parent(n)) for n in after.holding(value))
    if all(now[line] >= count for line, count in then.items()):
        return Reading(value, "held")
    mine = [s for s in before.sites_holding(value) if _same(s.number, value)]
    if not mine or len(mine) > MAX_SITES * 8:  # a value written everywhere names no one site
        return _by_presence(new, value)
    wanted = words_of(memory)
    overlap = [len(before.context(s.line) & wanted) for s in mine]
    relevant = [s for s, n in zip(mine, overlap, strict=True) if n == max(overlap)]
    if len(relevant) > MAX_SITES:
        return _by_presence(new, value)
    found = [_found_again(site, before, after, value) for site in relevant]
    if all(s is None for s in found):  # a rewritten line: read by presence
        return _by_presence(new, value)
    now_held = [(s, site) for s, site in zip(found, relevant, strict=True) if s is not None]
    if all(_same(s.number, value) and s.unit == site.unit for s, site in now_held):
        return Reading(value, "held")
    changed = [
        s
        for s, site in now_held
        if s.number is not None and s.unit == site.unit and not _same(s.number, value)
    ]
    moved_on = [s for s, site in now_held if s.number is None or s.unit != site.unit]
    if moved_on or len({s.number for s in changed}) != 1:
        return Reading(value, "gone")
    return Reading(value, "changed", now=str(changed[0].number), line=after.shown(changed[0]))


def _found_again(site: _Site, before: _Lines, after: _Lines, value: str) -> _Site | None:
    """``site`` of ``before`` in ``after``: None when its name is gone from it."""
    olds, news = before.sites_of(site.key), after.sites_of(site.key)
    if not news:
        return None
    parent = before.parent(site.line)
    same_parent = [s for s in news if after.parent(s.line) == parent]
    if len(same_parent) == 1 and sum(before.parent(s.line) == parent for s in olds) == 1:
        return same_parent[0]  # the only one under the same line, then and now
    if len(news) == len(olds):
        return news[olds.index(site)]
    # Sites added or removed: the value anywhere there, else what is new there.
    held = next((s for s in news if _same(s.number, value) and s.unit == site.unit), None)
    numbered = {(s.number, s.unit) for s in olds}
    fresh = [s for s in news if s.number is not None and (s.number, s.unit) not in numbered]
    return held or (fresh[0] if len({(s.number, s.unit) for s in fresh}) == 1 else _GONE)


def _by_presence(new: str, value: str) -> Reading:
    return Reading(value, "held" if holds_value(new, value) else "gone")


def _same(number: str | None, value: str) -> bool:
    """Whether ``number`` is ``value``, however written (600.0 is 600)."""
    if number is None:
        return False
    return number == value or float(number) == float(value)


class _Lines:
    """A file's lines, its sites worked out only on the lines asked about (a check reads hundreds of
    files at a time; most of their lines never matter), each line's parent once for all."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self._sites: dict[int, list[_Site]] = {}
        self._by_key: dict[str, list[_Site]] = {}
        self._parents: list[int] | None = None

    def with_(self, token: str) -> list[int]:
        """The lines ``token`` is in, as text."""
        return [n for n, line in enumerate(self.lines) if token in line]

    def holding(self, value: str) -> list[int]:
        return [n for n in self.with_(value) if holds_value(self.lines[n], value)]

    def sites_holding(self, value: str) -> list[_Site]:
        """The sites on the lines where ``value`` is written (an arithmetic's result may be another)."""
        return [s for n in self.with_(value) for s in self.sites(n)]

    def sites(self, n: int) -> list[_Site]:
        """The sites on line ``n``."""
        if n not in self._sites:
            line, found, taken = self.lines[n], [], 0
            if len(line) > _LONGEST_LINE:  # minified or generated: values there are read by presence
                self._sites[n] = []
                return []
            for match in NUMBER.finditer(line):
                if match.start() < taken:
                    continue  # a term of the arithmetic before it
                # A site's name is near its number: a minified file's long line is read in windows.
                window_starts = max(0, match.start() - _WINDOW_CHARS)
                window = line[window_starts : match.start()]
                name = _NAME_BEFORE.search(window)
                if name is not None:
                    key, begins = name.group(1), window_starts + name.start()
                else:  # no name: the line up to it is its site; a note shows the number alone
                    key, begins = _LOOSE.sub("", window), match.start()
                number, ends = match.group(), match.end()
                arithmetic = _ARITHMETIC.match(line, match.start())
                if arithmetic is not None and (result := _computed(arithmetic.group())) is not None:
                    number, ends = result, arithmetic.end()
                unit = _UNIT.match(line, ends).group()  # type: ignore[union-attr]
                taken = ends + len(unit)
                found.append(_Site(key, number, n, unit, begins, taken))
            if "=" in line or ":" in line:
                found += [_Site(given.group(1), None, n) for given in _NAME_GIVEN.finditer(line)]
            self._sites[n] = found
        return self._sites[n]

    def sites_of(self, key: str) -> list[_Site]:
        """Every site of ``key``, in order."""
        if key not in self._by_key:
            probe = max(re.findall(r"[\w.-]+", key), key=len, default="")
            lines = self.with_(probe) if probe else range(len(self.lines))
            self._by_key[key] = [s for n in lines for s in self.sites(n) if s.key == key]
        return self._by_key[key]

    def parent(self, n: int) -> str:
        """The line ``n`` sits under — the nearest before it that is less indented, or for a line
        that is not indented, the nearest ``[section]`` header (TOML, INI) — loose; '' for none."""
        if self._parents is None:
            self._parents = _parents(self.lines)
        at = self._parents[n]
        return _LOOSE.sub("", self.lines[at]) if at >= 0 else ""

    def context(self, n: int) -> set[str]:
        """The words of line ``n``, of the line it sits under and of the next one."""
        following = next((self.lines[i] for i in range(n + 1, len(self.lines)) if self.lines[i].strip()), "")
        return words_of(" ".join((self.lines[n], self.parent(n), following)))

    def shown(self, site: _Site) -> str:
        """A site and its number as a note quotes them: quotes dropped, spaces collapsed, bounded."""
        text = self.lines[site.line][site.begins : site.ends]
        text = " ".join(text.replace('"', "").replace("'", "").replace("`", "").split())
        return text if len(text) <= SHOWN_CHARS else "…" + text[-(SHOWN_CHARS - 1) :]


def _parents(lines: list[str]) -> list[int]:
    """For each line, the index of the line it sits under (see :meth:`_Lines.parent`), -1 for none."""
    parents, open_lines, section = [], list[tuple[int, int]](), -1  # (indent, line), outermost first
    for n, line in enumerate(lines):
        if not line.strip():
            parents.append(-1)
            continue
        indent = len(line) - len(line.lstrip())
        while open_lines and open_lines[-1][0] >= indent:
            open_lines.pop()
        parents.append(open_lines[-1][1] if open_lines else section if indent == 0 else -1)
        open_lines.append((indent, n))
        if indent == 0 and _SECTION.match(line):
            section = n
    return parents


def _computed(arithmetic: str) -> str | None:
    """The value of an arithmetic of numbers (+ - * /), as a number is written; None when it has
    none."""
    try:
        value = _evaluated(ast.parse(arithmetic.strip(), mode="eval").body)
    except (SyntaxError, ZeroDivisionError, OverflowError, RecursionError):
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
