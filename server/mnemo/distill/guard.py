"""The deterministic guard: two memories that differ in a quantity, a version, an identifier or a
negation are never the same memory, whatever a judge says. The judge
(:mod:`mnemo.distill.judge`) applies it to *same* only: an update may well change a number.

Embeddings cannot tell "the load balancer cuts at 120 s" from "… at 600 s" (cosine ≈ 0.95), and a
model judge sometimes merges them; this rule runs after any judge and can only veto a merge or a
close, never cause one. It must not be so strict that it blocks real duplicates, so what counts as
a difference is narrow:

- **quantities** — a number (in digits, or a number word up to twelve and a few tens, English
  and Spanish; "one", "una" only before a unit) with its unit, normalised (``2 min`` = ``120 s``
  = ``two minutes``; ``75 s`` = ``1 min 15 s``; ``1.5 GB`` = ``1536 MB``); bare numbers count as
  quantities without a unit. A number written either way reads both ways: ``1,500`` and
  ``1.500`` are 1500 or 1.5 (English and Spanish marks), ``1,5`` is 1.5;
- **versions** — dotted numbers (``3.11``, ``v2.4.1``), compared as written (3.10 ≠ 3.1), one a
  more precise form of the other being no difference (18.2 and 18.2.0, 1.6 and 1.6.3);
- **identifiers** — tokens mixing letters and digits (``OPS-123``, ``eu-west-1``, ``t3.large``,
  ``a1b2c3d``; ``SEV1s`` is ``SEV1``), ``#123``, file names with an extension (``lb.tf``), names
  in code (``api_client``); ``p99`` is also written ``99th percentile``;
- **negation** — ``not``, ``never``, ``no longer``, ``n't``, ``without`` … in one text and not the
  other (Spanish too: ``no``, ``nunca``, ``sin``, ``ya no``).

For each kind, the two texts conflict only when *each* holds a value the other lacks: one memory
naming a value the other omits ("600 s" against "600 s, up from 120 s") is a paraphrase with more
detail, not a different fact. Except when the one value a text states is, in the other, only named
beside the value that one leads with ("120 s" against "600 s, up from 120 s"; "768 px" against
"640 px; 768 px is the tablet one"): that is a change or a correction, whose old value is cited.
``tools/guard_check.py`` prints both error rates on the labelled pairs of
``tests/data/guard_pairs.jsonl``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

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
_NEGATION = re.compile(
    r"\b(?:not|never|no longer|no more|nothing|none|nobody|without|cannot|can't|won't|isn't|aren't|"
    r"wasn't|weren't|don't|doesn't|didn't|shouldn't|mustn't|hasn't|haven't|no|nunca|jamás|sin|ya no)\b"
    r"|n't\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class GuardVerdict:
    blocks: bool
    reasons: tuple[str, ...]  # e.g. "quantity: 120 s vs 600 s"
    # What the verdict was made of, for the judge's features (mnemo.distill.relation): whether
    # each text states a value (quantity, version, identifier) the other does not, and whether
    # each is negated.
    values_only_in: tuple[bool, bool] = (False, False)
    negated: tuple[bool, bool] = (False, False)

    @property
    def values_conflict(self) -> bool:
        """Each text states a value of one kind the other does not (the guard's blocks but for
        negation)."""
        return any(not r.startswith("negation") for r in self.reasons)


def compare(a: str, b: str) -> GuardVerdict:
    """Whether ``a`` and ``b`` differ in a way that forbids treating them as one memory."""
    reasons = []
    left, right = _readings(a), _readings(b)
    any_left = any_right = False
    for kind in ("quantity", "version", "identifier"):
        only_left = _unmatched(left[kind], right[kind], kind)
        only_right = _unmatched(right[kind], left[kind], kind)
        any_left, any_right = any_left or bool(only_left), any_right or bool(only_right)
        if only_left and only_right:
            reasons.append(f"{kind}: {_show(only_left)} vs {_show(only_right)}")
        elif kind != "identifier" and (beside := _named_beside(left[kind], right[kind])):
            reasons.append(f"{kind}: {beside}")
    negated = (has_negation(a), has_negation(b))
    if negated[0] != negated[1]:
        reasons.append(f"negation: only in {'the first' if negated[0] else 'the second'}")
    return GuardVerdict(bool(reasons), tuple(reasons), (any_left, any_right), negated)


def _unmatched(values: list[frozenset[str]], other: list[frozenset[str]], kind: str) -> set[str]:
    """The values of one text the other does not state (a value with several readings, "1,500",
    is stated when any reading is): each shown by its first reading."""
    theirs = {reading for readings in other for reading in readings}
    out = set()
    for readings in values:
        if _stated(readings, theirs):
            continue
        if kind == "version" and any(_extends(r, t) or _extends(t, r) for r in readings for t in theirs):
            continue  # 18.2 and 18.2.0, 1.6 and 1.6.3: the same line, one more precise
        out.add(min(readings))
    return out


def _stated(readings: frozenset[str], theirs: set[str]) -> bool:
    """Whether a value (its readings) is among ``theirs``. A bare number is the number a quantity
    with a unit was written with ("reads at 30" / "reads after 30 s"), and the other way round;
    two quantities with units must agree in their normalised value ("30 s" is not "30 min")."""
    normalised = {r for r in readings if not r.startswith(_WRITTEN)}
    if normalised & theirs:
        return True
    if all(r.startswith("number:") for r in normalised):
        return bool({_WRITTEN + r.partition(":")[2] for r in normalised} & theirs)
    return bool({"number:" + r.removeprefix(_WRITTEN) for r in readings - normalised} & theirs)


def _named_beside(left: list[frozenset[str]], right: list[frozenset[str]]) -> str:
    """The old value named only beside a new one: one text states a single value (of its kind),
    the other states it too but leads with another of its dimension ("768 px" / "640 px; 768 px
    is the tablet one", "120 s" / "600 s, up from 120 s"). "" when there is no such value."""
    for one, several in ((left, right), (right, left)):
        if len(one) != 1:
            continue
        dimension = _dimension_of(one[0])
        theirs = [v for v in several if _dimension_of(v) == dimension]
        if len(theirs) > 1 and not _stated(one[0], set(theirs[0])):
            return f"{_show({min(theirs[0])})} stated, {_show({min(one[0])})} named beside it"
    return ""


def _dimension_of(readings: frozenset[str]) -> str:
    first = min(readings)
    return first.partition(":")[0] if ":" in first else "version"


def _extends(longer: str, shorter: str) -> bool:
    return longer.startswith(shorter + ".") and shorter[:1].isdigit()


_WORDS = {
    w: str(n)
    for n, words in enumerate(
        [
            "zero cero", "", "two dos", "three tres", "four cuatro", "five cinco", "six seis",
            "seven siete", "eight ocho", "nine nueve", "ten diez", "eleven once", "twelve doce",
        ]
    )
    for w in words.split()
} | {"fifteen": "15", "twenty": "20", "thirty": "30", "sixty": "60", "hundred": "100", "quince": "15",
     "veinte": "20", "treinta": "30", "sesenta": "60", "cien": "100"}  # fmt: skip
_WORD_NUMBER = re.compile(r"\b(" + "|".join(_WORDS) + r")\b", re.IGNORECASE)
# "one", "uno", "una" are a number only before a unit ("one minute", "una hora"): alone they are
# a pronoun or an article ("one that fails", "una retro").
_ONE = re.compile(rf"\b(?:one|uno|una|un)\b(?=\s+(?:{_UNIT_PATTERN})\b)", re.IGNORECASE)
_WRITTEN = "written:"  # a reading that holds a quantity's number as written, before its unit
_JOINS_DURATIONS = re.compile(r"\s*(?:,|and|y)?\s*", re.IGNORECASE)
# "99th percentile", "percentil 99" are written p99 too.
_PERCENTILE = re.compile(
    r"\b(\d{1,2})(?:st|nd|rd|th)?[\s-]+percentile\b|\bpercentil\s+(\d{1,2})\b", re.IGNORECASE
)


def facts(text: str) -> dict[str, set[str]]:
    """The quantities (normalised), versions and identifiers a text states (every reading of an
    ambiguous number: "1,500" is 1500 in English and 1.5 in Spanish)."""
    return {
        kind: {r for readings in values for r in readings if not r.startswith(_WRITTEN)}
        for kind, values in _readings(text).items()
    }


def _readings(text: str) -> dict[str, list[frozenset[str]]]:
    text = _PERCENTILE.sub(lambda m: "p" + (m.group(1) or m.group(2)), text)
    text = _ONE.sub("1", text)
    text = _WORD_NUMBER.sub(lambda m: _WORDS[m.group(1).lower()], text)
    found: dict[str, list[frozenset[str]]] = {"quantity": [], "version": [], "identifier": []}
    # Where the last duration ended, its unit's factor, its readings and its values in seconds.
    last_time: tuple[int, float, frozenset[str], set[float]] | None = None
    for match in _NUMBER.finditer(text):
        prefix, number, tag, unit = match.groups()
        if (
            (number.count(".") >= 2 and not _thousands(number, "."))
            or tag
            or (number.count(".") == 1 and not unit and _names_a_version(text, match))
        ):
            found["version"].append(frozenset({number.lower() + (tag or "").lower()}))
        elif prefix and not unit:
            found["version"].append(frozenset({number}))
        else:
            dimension, factor = _UNITS[unit.lower()] if unit else ("number", 1.0)
            scaled = {value * factor for value in _values(number)}
            # The number as written, which a bare number elsewhere may repeat ("30" / "30 s").
            written = {f"{_WRITTEN}{value:g}" for value in _values(number)} if unit else set()
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
        has_digit = any(c.isdigit() for c in token)
        has_letter = any(c.isalpha() for c in token)
        if (has_digit and has_letter) or _FILE.match(token) or _SNAKE.match(token):
            token = token.lower()
            if len(token) > 2 and token[-1] == "s" and token[-2].isdigit():
                token = token[:-1]  # SEV1s: the plural of SEV1
            found["identifier"].append(frozenset({token}))
    return found


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


def has_negation(text: str) -> bool:
    return _NEGATION.search(text) is not None


def _names_a_version(text: str, match: re.Match[str]) -> bool:
    """A one-dot number is a version after ``v``, ``version`` or a capitalised name (Python 3.11)."""
    if match.group(1):
        return True
    before = text[: match.start()].rstrip().split()
    return bool(before) and (
        before[-1].lower() in {"version", "versión", "release"} or before[-1][:1].isupper()
    )


_BASE_UNIT = {"time": " s", "size": " B", "percent": "%", "times": "x", "number": ""}


def _show(values: set[str]) -> str:
    shown = []
    for value in sorted(values):
        dimension, _, amount = value.partition(":")
        shown.append(amount + _BASE_UNIT[dimension] if amount else value)
    return ", ".join(shown)


_STOP = frozenset(
    "the and for with are was were been its this that from not "
    "los las del con por para que una uno son".split()
)


def words(text: str) -> frozenset[str]:
    """A text's words as :func:`overlap` compares them: their first five letters, short ones and a
    few function words left out."""
    return frozenset(w[:5] for w in re.findall(r"\w+", text.lower()) if len(w) >= 3 and w not in _STOP)


def overlap(a: str | frozenset[str], b: str | frozenset[str]) -> float:
    """The share of the shorter text's words the other text has too (either given as text or as
    its :func:`words`, for a text compared many times)."""
    left = words(a) if isinstance(a, str) else a
    right = words(b) if isinstance(b, str) else b
    return len(left & right) / max(1, min(len(left), len(right)))
