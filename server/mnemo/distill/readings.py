"""The values a text states, read every way they are written: quantities with their units
normalised, versions and identifiers. What counts as each, and why, is the guard's to say
(:mod:`mnemo.distill.guard`, which compares two texts' readings); the extraction rails
(:mod:`mnemo.distill.extract`) use :func:`facts` to see whether a line states a value.

A value is a set of *readings*: "1,500" reads as 1500 or 1.5 (English and Spanish marks), a
quantity with a unit also keeps the number as written (``written:30`` for "30 s") for a bare
number elsewhere to match.
"""

from __future__ import annotations

import re
from functools import lru_cache

from mnemo.numerals import as_digits

# Unit spellings → (dimension, factor to the dimension's base unit).
_UNITS: dict[str, tuple[str, float]] = {}
for _names, _dimension, _factor in (
    (("ms", "msec", "millisecond", "milliseconds"), "time", 0.001),
    (("s", "sec", "secs", "second", "seconds", "segundo", "segundos"), "time", 1.0),
    (("m", "min", "mins", "minute", "minutes", "minuto", "minutos"), "time", 60.0),
    (("h", "hr", "hrs", "hour", "hours", "hora", "horas"), "time", 3600.0),
    (("d", "day", "days", "día", "días", "dia", "dias"), "time", 86400.0),
    (("week", "weeks", "semana", "semanas"), "time", 604800.0),
    # Not "b", "k", "g": "1b users", "10k requests" are counts, not sizes.
    (("byte", "bytes"), "size", 1.0),
    (("kb", "kib"), "size", 1024.0),
    (("mb", "mib"), "size", 1024.0**2),
    (("gb", "gib"), "size", 1024.0**3),
    (("tb", "tib"), "size", 1024.0**4),
    (("%", "percent", "pct", "por ciento"), "percent", 1.0),
    (("x",), "times", 1.0),
):
    for _name in _names:
        _UNITS[_name] = (_dimension, _factor)

_UNIT_PATTERN = "|".join(sorted((re.escape(u) for u in _UNITS), key=len, reverse=True))
# A number (1,200 / 3.5 / 3.11.2), an optional v before it, an optional unit after it.
_NUMBER = re.compile(
    rf"(?<![\w.#\-])(v)?(\d{{1,3}}(?:,\d{{3}})+|\d+,\d{{1,2}}(?!\d)|\d+(?:\.\d+)*)(?:[-+]?(alpha|beta|rc|post|dev)\d*)?"
    rf"(?:\s*({_UNIT_PATTERN})(?![\w]))?(?![\w])",
    re.IGNORECASE,
)
_HASH_ID = re.compile(r"(?<![\w&])#(\d+)\b")
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-/]*[A-Za-z0-9]")
_FILE = re.compile(r"^[\w\-/]+\.[A-Za-z][A-Za-z0-9]{0,5}$")
_VERSION_LINE = re.compile(r"^v?\d+(?:\.\d+)*\.[x*]$", re.IGNORECASE)
_SNAKE = re.compile(r"^[A-Za-z]\w*_\w*[A-Za-z0-9]$")  # a name in code: api_client, MAX_RETRIES
_PRODUCT = re.compile(r"^[A-Z][a-z0-9]*\.js$")  # Node.js, Vue.js: a product's name, not a file
# "un minuto y medio", "an hour and a half", "2 horas y media": the number and a half.
_AND_A_HALF = re.compile(
    rf"\b(\d+|an?|one|una?)\s+({_UNIT_PATTERN})\s+(?:y|and)\s+(?:a\s+)?(?:medio|media|half)\b", re.IGNORECASE
)
_THOUSAND = re.compile(r"\b(\d{1,3})k\b")  # 10k rows: ten thousand
_UPPER_NAME = re.compile(r"^[A-Z]{2,}(?:-[A-Z0-9]{2,})+$")  # EP-LEDGER, SG-BASTION
# "one", "uno", "una" are a number only before a unit ("one minute", "una hora"): alone they are
# a pronoun or an article ("one that fails", "una retro"). So is "once" (Spanish eleven, English
# "once a day").
_BEFORE_UNIT = {"one": "1", "uno": "1", "una": "1", "un": "1", "once": "11"}
_ONE = re.compile(rf"\b({'|'.join(_BEFORE_UNIT)})\b(?=\s+(?:{_UNIT_PATTERN})\b)", re.IGNORECASE)
WRITTEN = "written:"  # a reading that holds a quantity's number as written, before its unit
_JOINS_DURATIONS = re.compile(r"\s*(?:,|and|y)?\s*", re.IGNORECASE)
# "99th percentile", "percentil 99" are written p99 too.
_PERCENTILE = re.compile(
    r"\b(\d{1,2})(?:st|nd|rd|th)?[\s-]+percentile\b|\bpercentil\s+(\d{1,2})\b", re.IGNORECASE
)


def facts(text: str) -> dict[str, set[str]]:
    """The quantities (normalised), versions and identifiers a text states (every reading of an
    ambiguous number: "1,500" is 1500 in English and 1.5 in Spanish)."""
    return {
        kind: {r for readings in values for r in readings if not r.startswith(WRITTEN)}
        for kind, values in values_of(text).items()
    }


@lru_cache(maxsize=8192)
def without_values(text: str) -> str:
    """``text`` with the values :func:`values_of` reads taken out (numbers with their units,
    versions, ``#123``, identifiers): what two statements of one thing at different values share."""
    text = _PERCENTILE.sub(" ", text)
    text = _NUMBER.sub(" ", as_digits(text))
    text = _HASH_ID.sub(" ", text)
    for match in list(_TOKEN.finditer(text)):
        token = match.group(0).rstrip(".")
        if _is_identifier(token):
            text = text.replace(token, " ")
    return text


def values_of(text: str) -> dict[str, list[frozenset[str]]]:
    text = _PERCENTILE.sub(lambda m: "p" + (m.group(1) or m.group(2)), text)
    text = _AND_A_HALF.sub(lambda m: f"{int(m.group(1)) if m.group(1).isdigit() else 1}.5 {m.group(2)}", text)
    text = _ONE.sub(lambda m: _BEFORE_UNIT[m.group(1).lower()], text)
    text = _THOUSAND.sub(lambda m: m.group(1) + "000", text)
    text = as_digits(text)
    found: dict[str, list[frozenset[str]]] = {"quantity": [], "version": [], "identifier": []}
    # Where the last duration ended, its unit's factor, its readings and its values in seconds.
    last_time: tuple[int, float, frozenset[str], set[float]] | None = None
    for match in _NUMBER.finditer(text):
        prefix, number, tag, unit = match.groups()
        if (
            (number.count(".") >= 2 and not _thousands(number, "."))
            or tag
            or (number.count(".") == 1 and not unit and _names_a_version(text, match))
            or (not unit and text[match.end() : match.end() + 2].lower() in (".x", ".*"))
        ):
            found["version"].append(frozenset({number.lower() + (tag or "").lower()}))
        elif prefix and not unit:
            found["version"].append(frozenset({number}))
        else:
            dimension, factor = _UNITS[unit.lower()] if unit else ("number", 1.0)
            scaled = {value * factor for value in _values(number)}
            # The number as written, which a bare number elsewhere may repeat ("30" / "30 s").
            written = {f"{WRITTEN}{value:g}" for value in _values(number)} if unit else set()
            if (
                dimension == "time"
                and last_time is not None
                and factor < last_time[1]
                and _JOINS_DURATIONS.fullmatch(text[last_time[0] : match.start()])
            ):
                # "1 min 15 s", "2 h y 30 min": one duration written in two units.
                found["quantity"].remove(last_time[2])
                scaled = {before + v for before in last_time[3] for v in scaled}
                written = set()
            readings = frozenset({f"{dimension}:{value:g}" for value in scaled} | written)
            found["quantity"].append(readings)
            last_time = (match.end(), factor, readings, scaled) if dimension == "time" else None
            continue
        last_time = None
    found["identifier"] += [frozenset({f"#{m.group(1)}"}) for m in _HASH_ID.finditer(text)]
    for match in _TOKEN.finditer(text):
        token = match.group(0).rstrip(".")
        if _NUMBER.fullmatch(token) or _VERSION_LINE.match(token):
            continue  # a number, a version (1.6.x) or a quantity written together (120s): counted above
        if _is_identifier(token):
            token = token.lower()
            if len(token) > 2 and token[-1] == "s" and token[-2].isdigit():
                token = token[:-1]  # SEV1s: the plural of SEV1
            found["identifier"].append(frozenset({token}))
    return found


@lru_cache(maxsize=16384)  # tokens recur across texts: most are plain words
def _is_identifier(token: str) -> bool:
    """Whether a token (not a number) names a thing: letters with digits, a file, a name in code,
    upper-case names joined by hyphens; not a product's name (Node.js)."""
    if _PRODUCT.match(token):
        return False
    has_digit = any(c.isdigit() for c in token)
    has_letter = any(c.isalpha() for c in token)
    named = _FILE.match(token) or _SNAKE.match(token) or _UPPER_NAME.match(token)
    return (has_digit and has_letter) or named is not None


def _thousands(number: str, mark: str) -> bool:
    """``5.000`` or ``1,500,000``: groups of three digits after the first, split by ``mark``."""
    head, *groups = number.split(mark)
    return bool(groups) and 1 <= len(head) <= 3 and all(len(g) == 3 for g in groups)


def _values(number: str) -> set[float]:
    """What a written number may mean: "1,500" and "1.500" are 1500 or 1.5 (English and Spanish
    thousands and decimal marks); "1,5" is 1.5; "2.5" is 2.5."""
    if "," in number and "." in number:
        return {float(number.replace(",", ""))}
    for mark in (",", "."):
        if mark in number:
            values = set()
            if _thousands(number, mark):
                values.add(float(number.replace(mark, "")))
            if number.count(mark) == 1:
                values.add(float(number.replace(mark, ".")))
            return values or {float(number.replace(mark, ""))}
    return {float(number)}


def _names_a_version(text: str, match: re.Match[str]) -> bool:
    """A one-dot number is a version after ``v``, ``version`` or a capitalised name (Python 3.11)."""
    if match.group(1):
        return True
    before = text[: match.start()].rstrip().split()
    return bool(before) and (
        before[-1].lower() in {"version", "versión", "release"} or before[-1][:1].isupper()
    )
