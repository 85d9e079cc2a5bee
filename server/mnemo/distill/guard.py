"""The deterministic guard: two memories that differ in a quantity, a version, an identifier or a
negation are never the same memory, whatever a judge says. The judge
(:mod:`mnemo.distill.judge`) applies it to *same* only: an update may well change a number.

Embeddings cannot tell "the load balancer cuts at 120 s" from "… at 600 s" (cosine ≈ 0.95), and a
model judge sometimes merges them; this rule runs after any judge and can only veto a merge or a
close, never cause one. It must not be so strict that it blocks real duplicates, so what counts as
a difference is narrow:

- **quantities** — a number (in digits, or a number word up to twelve and a few tens, English
  and Spanish; "one", "una", "once" only before a unit) with its unit, normalised (``2 min`` =
  ``120 s`` = ``two minutes``; ``75 s`` = ``1 min 15 s``; ``90 s`` = ``un minuto y medio``;
  ``1.5 GB`` = ``1536 MB``); bare numbers count as quantities without a unit (``10k`` is
  10000). A number written either way reads both ways: ``1,500`` and
  ``1.500`` are 1500 or 1.5 (English and Spanish marks), ``1,5`` is 1.5;
- **versions** — dotted numbers (``3.11``, ``v2.4.1``), compared as written (3.10 ≠ 3.1), one a
  more precise form of the other being no difference (18.2 and 18.2.0, 1.6 and 1.6.3), and a bare
  number the same version ("Node v20" / "Node.js 20"; "Node v20" / "Node.js 22" differ);
- **identifiers** — tokens mixing letters and digits (``OPS-123``, ``eu-west-1``, ``t3.large``,
  ``a1b2c3d``; ``SEV1s`` is ``SEV1``), ``#123``, file names with an extension (``lb.tf``; not
  ``Node.js``), names in code (``api_client``), upper-case names joined by hyphens
  (``EP-LEDGER``); ``p99`` is also written ``99th percentile``; and two hyphenated names of one
  family, one in each text ("deploy-prod" / "deploy-staging": sibling things, not one thing);
- **negation** — ``not``, ``never``, ``no longer``, ``n't``, ``without`` … in one text and not the
  other (Spanish too: ``no``, ``nunca``, ``sin``, ``ya no``).

For each kind, the two texts conflict only when *each* holds a value the other lacks: one memory
naming a value the other omits ("600 s" against "600 s, up from 120 s") is a paraphrase with more
detail, not a different fact. Except when the one value a text states is, in the other, only named
beside the value that one leads with ("120 s" against "600 s, up from 120 s"; "768 px" against
"640 px; 768 px is the tablet one"): that is a change or a correction, whose old value is cited.
How values are read is :mod:`mnemo.distill.readings`'s. ``tools/evals/guard_check.py`` prints both
error rates on the labelled pairs of ``tests/data/guard_pairs.jsonl``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mnemo.distill.readings import WRITTEN, values_of

_HYPHENATED = re.compile(r"(?<![\w.])@?[A-Za-z][\w]*(?:[-/][A-Za-z]\w*)+")
_AFFIXES = frozenset(
    "only based free side level wide time like safe aware drive frien speci term lived long short high low "
    "non pre post re multi cross self well full half end up out in on off by to of".split()
)
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
    left, right = values_of(a), values_of(b)
    any_left = any_right = False
    only: dict[str, tuple[set[str], set[str]]] = {}
    for kind in ("quantity", "version", "identifier"):
        only_left = _unmatched(left[kind], _comparable(right, kind), kind)
        only_right = _unmatched(right[kind], _comparable(left, kind), kind)
        only[kind] = (only_left, only_right)
        any_left, any_right = any_left or bool(only_left), any_right or bool(only_right)
        if only_left and only_right:
            reasons.append(f"{kind}: {_show(only_left)} vs {_show(only_right)}")
        elif kind != "identifier" and (beside := _named_beside(left[kind], right[kind])):
            reasons.append(f"{kind}: {beside}")
    if not reasons and any(only["version"]):
        # A version on one side, a bare number on the other: "Node v20" / "Node.js 22".
        left_v, right_v = (
            only["version"][i] | {q for q in only["quantity"][i] if _bare({q})} for i in (0, 1)
        )
        if left_v and right_v:
            reasons.append(f"version: {_show(left_v)} vs {_show(right_v)}")
    # Names of one family ("deploy-prod" / "deploy-staging"), where no identifier conflict says so.
    if not all(only["identifier"]) and (sibling := siblings(a, b)):
        reasons.append(f"identifier: {sibling}")
    negated = (has_negation(a), has_negation(b))
    if negated[0] != negated[1]:
        reasons.append(f"negation: only in {'the first' if negated[0] else 'the second'}")
    return GuardVerdict(bool(reasons), tuple(reasons), (any_left, any_right), negated)


def siblings(a: str, b: str) -> str:
    """Two hyphenated names, one only in each text, that share their first or last part: siblings
    of one family, not one thing named twice ("deploy-prod" / "deploy-staging", "checkout-api" /
    "checkout-worker", "acme/ui" / "acme/icons"). Parts are compared by their first five letters
    (rate-limit, rate-limiting); a word with a part common in English compounds (read-only,
    SSO-based, non-blocking) is not a name. "" when there are none."""
    left, right = _hyphenated(a), _hyphenated(b)
    for x in sorted(left.keys() - right.keys()):
        for y in sorted(right.keys() - left.keys()):
            if x[0] == y[0] or x[-1] == y[-1]:
                return f"{left[x]} vs {right[y]}"
    return ""


def hyphenated_names(text: str) -> list[str]:
    """The hyphenated names of ``text`` as written, in lower case ("deploy-prod", "acme/ui"): not
    words with a common affix ("read-only", "re-enabled")."""
    return list(_hyphenated(text).values())


def _hyphenated(text: str) -> dict[tuple[str, ...], str]:
    """Each hyphenated name: its parts (by their first five letters), and how it is written."""
    found: dict[tuple[str, ...], str] = {}
    for match in _HYPHENATED.finditer(text):
        written = match.group(0).lower().lstrip("@")
        parts = tuple(p[:5] for p in re.split(r"[-/]", written) if p)
        if (len(parts) >= 3 or min(map(len, parts)) >= 2) and not _AFFIXES.intersection(parts):
            found.setdefault(parts, written)
    return found


def _comparable(found: dict[str, list[frozenset[str]]], kind: str) -> list[frozenset[str]]:
    """What a value of ``kind`` is compared with in the other text: its values of that kind, and
    for a version its bare numbers too, and the other way round ("Node v20" / "Node.js 20")."""
    if kind == "version":
        return found[kind] + [
            frozenset(r.partition(":")[2] for r in v) for v in found["quantity"] if _bare(v)
        ]
    if kind == "quantity":
        return found[kind] + [frozenset("number:" + r for r in v) for v in found["version"]]
    return found[kind]


def _bare(readings: frozenset[str] | set[str]) -> bool:
    """Whether a value is a number written without a unit."""
    return all(r.startswith("number:") for r in readings)


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
    normalised = {r for r in readings if not r.startswith(WRITTEN)}
    if normalised & theirs:
        return True
    if _bare(normalised):
        return bool({WRITTEN + r.partition(":")[2] for r in normalised} & theirs)
    return bool({"number:" + r.removeprefix(WRITTEN) for r in readings - normalised} & theirs)


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


def has_negation(text: str) -> bool:
    return _NEGATION.search(text) is not None


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
