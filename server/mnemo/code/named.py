"""What a memory names in code — identifiers, code spans and numbers — and whether a text holds
them as whole tokens.

A number is two digits or more, or a decimal (``0.75``, ``3.11``), or a digit ("3 retries"; see
:func:`mnemo.code.sites.anchors_value` for when one is kept); in a file, a unit of up to three
letters may be glued to it (``30s``, ``512Mi``). It is never part of a name (``v2``, ``x86``), of a
version (``2.4.1``), of a longer number, or of a number with thousands separators (``1,200`` in a
memory is 1200; in a file, where ``[1,200]`` is as likely a list, it is no number at all).
Numbers written as words ("three times") are read as digits.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from mnemo.numerals import as_digits

# At most 20 digits each side of the point: longer is no setting, and never reaches a note.
_TAIL = r"(?=[A-Za-z%]{0,3}(?!\w))(?!\.\d)(?!,\d)"
NUMBER = re.compile(rf"(?<![\w.])(?<!\d,)\d{{1,20}}(?:\.\d{{1,20}})?{_TAIL}")
_THOUSANDS = re.compile(r"(?<![\w.,])\d{1,3}(?:,\d{3})+(?![\w,]|\.\d)")
_IDENTIFIER = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]{2,80}\b")
_CAMEL = re.compile(r"[a-z]+[A-Z]\w*|[A-Z][a-z0-9]+[A-Z]\w*")
_CODE_SPAN = re.compile(r"`([^`\n]{3,80})`")
# Zero-width: matched where a token starts, they look behind it (str.find found it).
_NUMBER_START = re.compile(r"(?<![\w.])(?<!\d,)")
_NUMBER_END = re.compile(_TAIL)
_NAME_START = re.compile(r"(?<!\w)")
_NAME_END = re.compile(r"(?!\w)")
_WORD = re.compile(r"[A-Za-z]{3,}")


def named_values(texts: Iterable[str]) -> list[str]:
    """The numbers ``texts`` state (those written as words or with thousands separators too), in
    order, once each."""
    found: dict[str, None] = {}
    for text in texts:
        plain = _THOUSANDS.sub(lambda m: m.group().replace(",", ""), as_digits(text))
        found.update(dict.fromkeys(NUMBER.findall(plain)))
    return list(found)


def named_symbols(texts: Iterable[str]) -> list[str]:
    """Identifiers that look like code (snake_case, SCREAMING_CASE, camelCase, PascalCase with two
    capitals or more), and spans written as code (`` `make migrate` ``) but those holding a number
    (the number is a value, read as values are), in order, once each."""
    found: dict[str, None] = {}
    for text in texts:
        for span in _CODE_SPAN.findall(text):
            if not NUMBER.search(span):
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
    """``value`` in ``text`` as a whole number (600 is not in 6000, 1600, 600.5 or 1,600; it is in
    600s)."""
    return _found(text, value, _NUMBER_START, _NUMBER_END)


def holds_symbol(text: str, symbol: str) -> bool:
    """``symbol`` in ``text`` as a whole name (``timeout`` is not in ``timeout_sec``); a code span
    with its spaces loose."""
    if any(c.isspace() for c in symbol):
        spaced = r"\s+".join(re.escape(part) for part in symbol.split())
        return re.search(rf"(?<!\w){spaced}(?!\w)", text) is not None
    return _found(text, symbol, _NAME_START, _NAME_END)


def _found(text: str, token: str, start: re.Pattern[str], end: re.Pattern[str]) -> bool:
    """``token`` in ``text`` where ``start`` matches just before it and ``end`` right after it
    (found with str.find: a pattern per token would be compiled anew for each of a check's
    thousands of values)."""
    at = text.find(token)
    while at >= 0:
        if start.match(text, at) and end.match(text, at + len(token)):
            return True
        at = text.find(token, at + 1)
    return False


def words_of(text: str) -> set[str]:
    """Lower-cased words of three letters or more, names split on _ and case (timeout_sec: timeout,
    sec), a plural's s dropped (limits: limit)."""
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", text).replace("_", " ")
    return {
        w[:-1] if len(w) > 3 and w.endswith("s") else w for w in (m.lower() for m in _WORD.findall(spaced))
    }
