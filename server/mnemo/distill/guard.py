"""The deterministic guard: two memories that differ in a quantity, a version, an identifier or a
negation are never the same memory, whatever a judge says. The judge
(:mod:`mnemo.distill.judge`) applies it to *same* only: an update may well change a number.

Embeddings cannot tell "the load balancer cuts at 120 s" from "… at 600 s" (cosine ≈ 0.95), and a
model judge sometimes merges them; this rule runs after any judge and can only veto a merge or a
close, never cause one. It must not be so strict that it blocks real duplicates, so what counts as
a difference is narrow:

- **quantities** — a number (in digits, or a number word up to twelve and a few tens, English
  and Spanish) with its unit, normalised (``2 min`` = ``120 s`` = ``two minutes``;
  ``1.5 GB`` = ``1536 MB``); bare numbers count as quantities without a unit;
- **versions** — dotted numbers (``3.11``, ``v2.4.1``), compared as written (3.10 ≠ 3.1);
- **identifiers** — tokens mixing letters and digits (``OPS-123``, ``eu-west-1``, ``t3.large``,
  ``a1b2c3d``), ``#123``, file names with an extension (``lb.tf``);
- **negation** — ``not``, ``never``, ``no longer``, ``n't``, ``without`` … in one text and not the
  other (Spanish too: ``no``, ``nunca``, ``sin``, ``ya no``).

For each kind, the two texts conflict only when *each* holds a value the other lacks: one memory
naming a value the other omits ("600 s" against "600 s, up from 120 s") is a paraphrase with more
detail, not a different fact. ``tools/guard_check.py`` prints both error rates on the labelled
pairs of ``tests/data/guard_pairs.jsonl``.
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
    rf"(?<![\w.#\-])(v)?(\d{{1,3}}(?:,\d{{3}})+|\d+(?:\.\d+)*)(?:[-+]?(alpha|beta|rc|post|dev)\d*)?"
    rf"(?:\s*({_UNIT_PATTERN})(?![\w]))?(?![\w])",
    re.IGNORECASE,
)
_HASH_ID = re.compile(r"(?<![\w&])#(\d+)\b")
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-/]*[A-Za-z0-9]")
_FILE = re.compile(r"^[\w\-/]+\.[A-Za-z][A-Za-z0-9]{0,5}$")
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


def compare(a: str, b: str) -> GuardVerdict:
    """Whether ``a`` and ``b`` differ in a way that forbids treating them as one memory."""
    reasons = []
    left, right = facts(a), facts(b)
    for kind in ("quantity", "version", "identifier"):
        only_left, only_right = left[kind] - right[kind], right[kind] - left[kind]
        if only_left and only_right:
            reasons.append(f"{kind}: {_show(only_left)} vs {_show(only_right)}")
    negated = has_negation(a)
    if negated != has_negation(b):
        reasons.append(f"negation: only in {'the first' if negated else 'the second'}")
    return GuardVerdict(bool(reasons), tuple(reasons))


_WORDS = {
    w: str(n)
    for n, words in enumerate(
        [
            "zero cero", "one uno una", "two dos", "three tres", "four cuatro", "five cinco", "six seis",
            "seven siete", "eight ocho", "nine nueve", "ten diez", "eleven once", "twelve doce",
        ]
    )
    for w in words.split()
} | {"fifteen": "15", "twenty": "20", "thirty": "30", "sixty": "60", "hundred": "100", "quince": "15",
     "veinte": "20", "treinta": "30", "sesenta": "60", "cien": "100"}  # fmt: skip
_WORD_NUMBER = re.compile(r"\b(" + "|".join(_WORDS) + r")\b", re.IGNORECASE)


def facts(text: str) -> dict[str, set[str]]:
    """The quantities (normalised), versions and identifiers a text states."""
    text = _WORD_NUMBER.sub(lambda m: _WORDS[m.group(1).lower()], text)
    found: dict[str, set[str]] = {"quantity": set(), "version": set(), "identifier": set()}
    for match in _NUMBER.finditer(text):
        prefix, number, tag, unit = match.groups()
        if (
            number.count(".") >= 2
            or tag
            or (number.count(".") == 1 and not unit and _names_a_version(text, match))
        ):
            found["version"].add(number.lower() + (tag or "").lower())
        elif prefix and not unit:
            found["version"].add(number)
        else:
            value = float(number.replace(",", ""))
            if unit:
                dimension, factor = _UNITS[unit.lower()]
                found["quantity"].add(f"{dimension}:{value * factor:g}")
            else:
                found["quantity"].add(f"number:{value:g}")
    found["identifier"] |= {f"#{m.group(1)}" for m in _HASH_ID.finditer(text)}
    for match in _TOKEN.finditer(text):
        token = match.group(0).rstrip(".")
        if _NUMBER.fullmatch(token):
            continue  # a number, a version or a quantity written together (120s): counted above
        has_digit = any(c.isdigit() for c in token)
        has_letter = any(c.isalpha() for c in token)
        if (has_digit and has_letter) or _FILE.match(token):
            found["identifier"].add(token.lower())
    return found


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
