"""Which current memory a newer one replaces, read from the two texts alone: no model.

Four rules, each with the evidence it rests on:

- **named**: the newer memory, or a line of the person's it cites, names what it replaces —
  "from Tuesday to Thursday", "600, not 300", "instead of graphile-worker", "300 was a typo",
  "no longer X", "en vez de X", "pasa de X a Y", "ya no X", "X → Y", "renamed X to Y", what it
  drops ("dropping Sentry"), denies ("no usa wkhtmltopdf") or said before ("I said 90 days") —
  and the older memory states that value about the same subject: at least half of its other
  words are in the newer one or in the sentence of the person's line that names the change (a
  single plain word named needs two);
- **quoted**: the newer words a change or a correction, leads with a value of a kind and names
  the older's value of that kind beside it ("64 GiB; the 32 GiB in the notes was the worker's");
- **same frame**: the two say the same thing once their values are set aside (quantities,
  versions, identifiers, names, weekdays), each states a value of one kind that the other does
  not, the newer adds only words that say a change ("now", "moves", "ahora") and leaves out at
  most a quarter of the older's (a qualifier: "online", "worker") — whole, or by their first
  clauses (before ";", ",", "since", "porque"…);
- **worded**: the newer (or the person's line it cites) says a change in any word ("is now",
  "again", "renamed", "ahora", :func:`mnemo.distill.cues.says_change`) about the older's subject
  (:func:`mnemo.distill.subjects.one_subject`), in no other environment, naming first no thing
  the older lacks, and leaves out a value or a word the older states.

Siblings never pass, by construction: a word only the newer has (staging, payments, default)
breaks the frame; two texts that differ in an identifier or a name are two things when they
share another value (two secrets rotated every 90 days) or differ in something else too, or when
it leads the statement (its subject: "API_KEY rotates …", "Redis backups …"); names of one family
(deploy-prod / deploy-staging, :func:`mnemo.distill.guard.siblings`) and a negation only one has
stop the frame; a newer that says "too", "also", "también" stands beside the older. A file path
alone is a value only when the newer words a change ("the runbook moved to docs/ops.md"): "Type
error in a.ts" and "… in b.ts" are two errors.

What follows from it among memories — which current ones a new memory closes, the newest of a
group shown first until a close is written — is :mod:`mnemo.distill.newest`'s; ``mnemo audit``
reports what is left (:mod:`mnemo.health`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from mnemo.distill.cues import says_change, words_change, words_correction
from mnemo.distill.guard import has_negation, overlap, siblings, words
from mnemo.distill.readings import WRITTEN, values_of, without_values
from mnemo.distill.replaced import denied, may_name, named_replaced
from mnemo.distill.subjects import CHANGE as _CHANGE
from mnemo.distill.subjects import FILLER as _FILLER
from mnemo.distill.subjects import one_subject, two_of_a_family

_WEEKDAYS = {
    "monday": "monday", "tuesday": "tuesday", "wednesday": "wednesday", "thursday": "thursday",
    "friday": "friday", "saturday": "saturday", "sunday": "sunday", "lunes": "monday",
    "martes": "tuesday", "miércoles": "wednesday", "miercoles": "wednesday", "jueves": "thursday",
    "viernes": "friday", "sábado": "saturday", "sabado": "saturday", "domingo": "sunday",
}  # fmt: skip
_WEEKDAY = re.compile(rf"\b({'|'.join(_WEEKDAYS)})s?\b", re.IGNORECASE)
SUBJECT_SHARE = 0.5  # of the older's other words, in the newer or the sentence naming the change
_NAMING = ("identifier", "name")  # the kinds of value that also say which thing
_KINDS = ("quantity", "version", "identifier", "weekday", "name")
_PATH = re.compile(r"/|\.[a-z][a-z0-9]{0,5}$", re.IGNORECASE)  # src/app.ts, config.toml
_CLAUSE = re.compile(
    r"\s*(?:;|,\s|—|\s-\s|\.\s|\(|"
    r"\b(?:since|because|after|when|so that|desde|porque|tras|cuando|para que)\b)\s*",
    re.IGNORECASE,
)
_BESIDE = re.compile(
    r"\b(?:too|also|as well|likewise|same as|just like|también|tambien|igual que|al igual|lo mismo que)\b",
    re.IGNORECASE,
)
_ARTICLES = frozenset({"the", "el", "la", "los", "las", "our", "we"})
_NAME = re.compile(r"(?<![\w.\-/])[A-Za-zÀ-ÿ][\w+#\-]*")
_ENVIRONMENTS = {
    "production": "prod", "prod": "prod", "producción": "prod", "produccion": "prod", "prd": "prod",
    "staging": "staging", "stage": "staging", "stg": "staging", "dev": "dev", "development": "dev",
    "desarrollo": "dev", "qa": "qa", "preprod": "preprod", "pre-prod": "preprod", "sandbox": "sandbox",
    "canary": "canary",
}  # fmt: skip
_ENVIRONMENT = re.compile(rf"(?<![\w-])({'|'.join(map(re.escape, _ENVIRONMENTS))})(?![\w-])", re.IGNORECASE)
_SHORT_NAME = re.compile(r"\b[A-Z]{2}\b")
_CODE_NAME = re.compile(r"(?<![\w/])/[\w.\-/]+|`[^`]+`")  # /health, `emails`
_SENTENCES = re.compile(r"(?<=[.!?;\n])\s+")


@dataclass(frozen=True, slots=True)
class Reading:
    """What the rules compare of one text."""

    text: str
    values: dict[str, tuple[frozenset[str], ...]]  # kind → each value's readings, in text order
    words: frozenset[str]  # its other words (guard.words), filler aside
    all_words: frozenset[str]  # every word, values' included
    negated: bool
    lead: frozenset[str]  # identifiers among its first two words: its subject
    replaced: tuple[str, ...]  # what it names as replaced (named_replaced)
    denied: tuple[str, ...]  # what it says is not so ("does not use Prisma": "use Prisma")
    words_a_change: bool  # it words a change or a correction (mnemo.distill.cues)
    first_clause: str  # what it states before its reason or aside


@lru_cache(maxsize=8192)
def read(text: str) -> Reading:
    found = values_of(text)
    values = {kind: tuple(dict.fromkeys(found[kind])) for kind in ("quantity", "version", "identifier")}
    days = (frozenset({_WEEKDAYS[d.lower()]}) for d in _WEEKDAY.findall(text))
    values["weekday"] = tuple(dict.fromkeys(days))
    rest = _WEEKDAY.sub(" ", without_values(text))
    names = [m for m in _NAME.finditer(rest) if _is_name(m.group(0)) and not _starts(rest, m.start())]
    values["name"] = tuple(dict.fromkeys(frozenset({m.group(0).lower()}) for m in names))
    for m in reversed(names):  # the names out of the words, by their places
        rest = rest[: m.start()] + " " + rest[m.end() :]
    first = [t.lower() for t in re.findall(r"[\w.\-/]+", text)]
    lead = {t for t in first if t not in _ARTICLES}.intersection([t for t in first if t not in _ARTICLES][:2])
    named = {r for kind in _NAMING for v in values[kind] for r in v}
    lead_ids = frozenset(lead & named)
    short = frozenset(w.lower() for w in _SHORT_NAME.findall(rest))  # EU, US, QA: guard.words skips them
    return Reading(
        text,
        values,
        (words(rest) | short) - _FILLER,
        words(text) | short,
        has_negation(text),
        lead_ids,
        tuple(named_replaced(text)) if may_name(text) else (),
        tuple(denied(text)),
        words_change(text) or words_correction(text),
        _CLAUSE.split(text, maxsplit=1)[0],
    )


def _is_name(token: str) -> bool:
    """A product's or a person's name: upper- and lower-case letters (Redis, MkDocs, GitHub), not
    an acronym (API, TTL, PVCs: words of the subject) nor a word in lower case."""
    return any(c.isupper() for c in token) and sum(c.islower() for c in token) >= 2 and len(token) >= 3


def _starts(text: str, at: int) -> bool:
    """Whether ``at`` starts a sentence of ``text``: its first word is capitalised as any is."""
    before = text[:at].rstrip()
    return not before or before[-1] in ".!?;:\n(\"'¿¡-—"


def replaces(newer: str, older: str, said: Sequence[str] = ()) -> str:
    """Why ``newer`` replaces ``older`` (named or same frame); '' when it does not. ``said``: the
    lines of the person's the newer one cites, where the change may be named."""
    if not said:
        return _alone(newer, older)
    if _BESIDE.search(newer):
        return ""  # "… every 90 days too", "also", "igual que": one more thing, beside the older
    return (
        _replaces(newer, older)
        or _named(newer, older, said, own=False)
        or (_worded(newer, older) if any(map(says_change, said)) else "")
    )


@lru_cache(maxsize=65536)
def _alone(newer: str, older: str) -> str:
    """:func:`replaces` with no line of the person's: what recall and the hooks ask of the same
    pairs at every prompt, so answered once."""
    return "" if _BESIDE.search(newer) else _replaces(newer, older)


@lru_cache(maxsize=65536)
def _replaces(newer: str, older: str) -> str:
    """:func:`replaces` on the two texts alone (recall asks it of the same pairs again and again)."""
    return (
        _named(newer, older, ())
        or _quoted(newer, older)
        or _same_frame(newer, older)
        or _same_frame(read(newer).first_clause, read(older).first_clause)
        or (_worded(newer, older) if says_change(newer) else "")
    )


def _named(newer: str, older: str, said: Sequence[str], *, own: bool = True) -> str:
    """The named rule on the newer's own text (``own``) and the sentences of ``said``."""
    new, old = read(newer), read(older)
    sentences = [newer] if own else []
    for sentence in sentences + [s for line in said for s in _SENTENCES.split(line)]:
        said_here = read(sentence)
        for replaced, is_denied in [
            *((x, False) for x in said_here.replaced),
            *((x, True) for x in said_here.denied),
        ]:
            x = read(replaced)
            x_values = {kind: v for kind, v in x.values.items() if v}
            bare = not x.words and not any(x.values[k] for k in _NAMING)
            if is_denied and (old.negated or bare):
                continue  # the older says it is not so too, or what is denied is a bare number
            if is_denied and _things(sentence) - _things(older):
                continue  # not so for things the older does not name: an exception ("/health")
            if x_values:
                if not all(_states(old, kind, value) for kind, vs in x_values.items() for value in vs):
                    continue
                kind = next((k for k in _NAMING if k in x_values), None)
                if _different_things(new, old, replaced=kind):
                    continue
            elif not x.all_words - _FILLER or not (x.all_words - _FILLER) <= old.all_words:
                continue
            subject = old.words - x.all_words
            shared = subject & (new.words | read(sentence).words)
            # A single plain word ("the job was renamed") names little: two more words must agree.
            if not x_values and len(x.all_words - _FILLER) == 1 and len(shared) < 2:
                continue
            # No other word: the older was all what is replaced.
            if not subject or len(shared) / len(subject) >= SUBJECT_SHARE:
                return f"names what it replaces: {replaced!r}, which the older states"
    return ""


def _things(text: str) -> set[str]:
    """The things ``text`` names in code: its identifiers, paths ("/health") and `quoted` names."""
    named = {r for v in read(text).values["identifier"] for r in v}
    return named | {m.lower().rstrip(".") for m in _CODE_NAME.findall(text)}


def _quoted(newer: str, older: str) -> str:
    """The newer words a change or a correction, leads with a value the older lacks and names the
    older's value of that kind beside it ("64 GiB; the 32 GiB in the notes was the worker's")."""
    new, old = read(newer), read(older)
    if not new.words_a_change:
        return ""
    for kind in _KINDS:
        theirs = old.values[kind]
        dimensions = {_dimension(t) for t in theirs}
        mine = [v for v in new.values[kind] if kind != "quantity" or _dimension(v) in dimensions]
        if len(mine) < 2 or _states(old, kind, mine[0]) or not any(_states(old, kind, v) for v in mine[1:]):
            continue
        if kind not in _NAMING and _different_things(new, old, replaced=None):
            continue
        subject = old.words
        if not subject or len(subject & new.words) / len(subject) >= SUBJECT_SHARE:
            return f"leads with another {kind} and names the older's beside it"
    return ""


def _same_frame(newer: str, older: str) -> str:
    new, old = read(newer), read(older)
    if not old.words or new.negated != old.negated:
        return ""
    left_out = old.words - new.words  # a qualifier the newer leaves out ("online", "worker"): a few
    if len(left_out) > len(old.words) // 4 or (new.words - old.words) - _CHANGE or not old.words & new.words:
        return ""  # something else differs: another thing, not another value of it
    apart = [kind for kind in _KINDS if _apart(new, old, kind)]
    if not apart:
        return ""
    naming = [kind for kind in apart if kind in _NAMING]
    if naming and (len(apart) > 1 or _different_things(new, old, replaced=naming[0])):
        return ""
    moved = apart == ["identifier"] and _only_paths(new, old)
    if moved and not (new.words - old.words) & _CHANGE:
        return ""  # "Type error in a.ts" / "… in b.ts": two errors, unless the newer says it moved
    if siblings(newer, older) and not moved:
        return ""
    kinds = ", ".join(apart)
    return f"the same statement with another {kinds}"


def _worded(newer: str, older: str) -> str:
    """The newer, said to be a change, is about the older's subject (:mod:`mnemo.distill.subjects`)
    in no other environment, not beside it, and leaves out something the older states: a
    value, or a word ("Tests run with pytest" / "Tests now run with pytest -n 4" adds, replaces
    nothing)."""
    if _other_environments(older, newer):
        return ""
    new, old = read(newer), read(older)
    for x in map(read, new.replaced):  # it names what it replaces: a thing the older does not name
        if any(not _states(old, kind, value) for kind in _NAMING for value in x.values[kind]):
            return ""
    left_out = any(not _states(new, kind, value) for kind in _KINDS for value in old.values[kind])
    if not left_out and not old.words - new.all_words - _CHANGE:
        return ""
    if any(not _states(old, kind, v) for kind in _NAMING for v in new.values[kind] if v & new.lead):
        return ""  # it is about a thing it names first, which the older does not name
    subject = one_subject(older, newer)
    return f"says a change of the older's subject ({subject})" if subject else ""


def _apart(new: Reading, old: Reading, kind: str) -> bool:
    """Each states a value of ``kind`` (a quantity: of one dimension) the other does not."""
    if kind != "quantity":
        return bool(_only(new, old, kind)) and bool(_only(old, new, kind))
    mine, theirs = _only(new, old, kind), _only(old, new, kind)
    return bool({_dimension(v) for v in mine} & {_dimension(v) for v in theirs})


def _only(one: Reading, other: Reading, kind: str) -> list[frozenset[str]]:
    return [v for v in one.values[kind] if not _states(other, kind, v)]


def _states(reading: Reading, kind: str, value: frozenset[str]) -> bool:
    """Whether ``reading`` states ``value``: a bare number is the number a quantity was written
    with ("from 90 to 30" / "90 days"), and the other way round."""
    if kind == "version":  # 18.2 and 18.2.0, 7.4 and 7.4.33: one line, one more precise
        return any(a == b or a.startswith(b + ".") or b.startswith(a + ".") for v in reading.values[kind]
                   for a in value for b in v)  # fmt: skip
    if kind != "quantity":
        return any(value & v for v in reading.values[kind])
    theirs = {r for v in reading.values["quantity"] for r in v}
    mine = {r for r in value if not r.startswith(WRITTEN)}
    if mine & theirs:
        return True
    as_number = {"number:" + r.removeprefix(WRITTEN) for r in value if r.startswith(WRITTEN)}
    if all(r.startswith("number:") for r in mine):
        as_number |= mine
        theirs |= {"number:" + r.removeprefix(WRITTEN) for r in theirs if r.startswith(WRITTEN)}
    return bool(as_number & theirs)


def _dimension(value: frozenset[str]) -> str:
    return min(r for r in value if not r.startswith(WRITTEN)).partition(":")[0]


def _different_things(new: Reading, old: Reading, *, replaced: str | None) -> bool:
    """Whether the two name different things: of identifiers or of names, each names one the
    other lacks, and that kind is not what is replaced, or it is but they share another value or
    such a name leads either one ("API_KEY rotates …" / "DB_PASSWORD rotates …")."""
    for kind in _NAMING:
        if not (_only(new, old, kind) and _only(old, new, kind)):
            continue
        if any(_states(old, kind, v) for v in new.values[kind]):
            continue  # one in common: one subject, another of its values
        if replaced != kind:
            return True
        shared = any(not _only(new, old, k) and new.values[k] for k in ("quantity", "version", "weekday"))
        if shared or any(v & new.lead or v & old.lead for v in (*new.values[kind], *old.values[kind])):
            return True
    return False


def _only_paths(new: Reading, old: Reading) -> bool:
    differing = [*_only(new, old, "identifier"), *_only(old, new, "identifier")]
    return all(_PATH.search(next(iter(v))) for v in differing)


def two_things(older: str, newer: str) -> str:
    """Why two statements are about two things, never one memory ('' when nothing says so): each
    names an identifier or a name the other lacks, with none in common; they name different
    environments (staging / production, prod / dev); the newer says it stands beside ("too",
    "also", "también"); or each has a word of one family the other lacks (Android / iOS,
    connect / read: :func:`mnemo.distill.subjects.two_of_a_family`). Siblings that share a value
    or a sentence: "Postgres's password rotates every 90 days" / "Redis's password rotates every
    90 days too"."""
    old, new = read(older), read(newer)
    if _different_things(new, old, replaced=None):
        return "they name different things"
    if environments := _other_environments(older, newer):
        return environments
    if _BESIDE.search(newer):
        return "the newer stands beside the older"
    return _one_family(older, newer)


def stand_apart(older: str, newer: str) -> str:
    """Why ``newer`` can never close ``older`` though a model reads a change ('' when nothing says
    so): it says no change in any word, and the two name different environments or words of one
    family ("Los clientes de la UE se sirven desde Madrid" / "Los de LATAM, desde São Paulo")."""
    if says_change(newer):
        return ""
    return _other_environments(older, newer) or _one_family(older, newer)


def _other_environments(older: str, newer: str) -> str:
    """The environments each names when they name different ones (staging / prod); '' if not."""
    theirs, mine = _environments(older), _environments(newer)
    if theirs and mine and not theirs & mine:
        return f"different environments: {', '.join(sorted(theirs))} / {', '.join(sorted(mine))}"
    return ""


def _one_family(older: str, newer: str) -> str:
    family = two_of_a_family(older, newer)
    return f"words of one family: {family}" if family else ""


def _environments(text: str) -> set[str]:
    return {_ENVIRONMENTS[m.lower()] for m in _ENVIRONMENT.findall(text)}


PAIR_OVERLAP = 0.3  # of the shorter text's words: under it no rule relates two statements


def candidate_pairs(texts: Sequence[str], most: int = 200) -> set[tuple[int, int]]:
    """The pairs (i < j) of ``texts`` the rules could relate, found without reading them whole
    (:func:`read` costs most): those that share at least ``PAIR_OVERLAP`` of the shorter one's
    words (a word ``most`` texts or more share says nothing of a pair)."""
    said = [words(text) for text in texts]
    postings: dict[str, list[int]] = {}
    for i, found in enumerate(said):
        for word in found:
            postings.setdefault(word, []).append(i)
    shared = {(i, j) for at in postings.values() if len(at) < most for i in at for j in at if i < j}
    return {(i, j) for i, j in shared if overlap(said[i], said[j]) >= PAIR_OVERLAP}
