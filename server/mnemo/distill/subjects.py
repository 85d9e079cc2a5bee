"""What a statement is about, read from its words: the words that say nothing of a subject (who
speaks, how often, that something changed), and whether two statements are about one subject
when the newer says it changed in other words — the *worded* rule of :mod:`mnemo.distill.frames`.

"Product catalog responses are cached in Redis for 5 minutes" and "Catalog cache TTL is now 60
seconds" share no value, yet the newer says a change ("now") about the older's subject: most of
the older's words (values aside) are in the newer, and the first words of one (its subject) are
in the other. Siblings that read alike are told apart by what stands before a shared word in
both subjects ("Checkout API timeout" / "Payments API timeout", "EU region" / "US region") and by
words of one family, one in each ("connect" / "read" timeout, "access" / "refresh" token,
"Android" / "iOS", "minimum" / "target" SDK): two things, never one replacing the other.
"""

from __future__ import annotations

import re
from functools import lru_cache

from mnemo.distill.guard import hyphenated_names, words
from mnemo.distill.readings import without_values
from mnemo.index.text import fold

# Words that say who speaks or how often, and verbs that carry no subject: set aside with the
# values when two statements are compared ("We deploy on Tuesdays" / "Deploys are on Thursdays").
FILLER = words(
    "we our ours us team they their currently always usually every each all also still just "
    "use uses used using run runs running has have had set sets get gets lives goes going happen happens "
    "should must will would can now today "
    "nosotros nuestro nuestra nuestros equipo siempre cada todos todas también usamos usa usan "
    "está están hay ser es son debe deben van"
)
# Words that say a change and nothing of its subject: the newer may add them to the older's frame.
CHANGE = words(
    "now move moves moved moving switch switches switched change changes changed changing instead from "
    "longer anymore raise raised raises bump bumped lower lowered increase increased decrease decreased "
    "update updated upgrade upgraded migrate migrated replace replaced replacing rename renamed actually "
    "correct corrected correction typo wrong revert reverted back again new went starting going forward "
    "previous previously old rather than "
    "ahora pasa pasan pasamos cambia cambian cambiamos cambio cambió mueve movemos movido nuevo nueva "
    "sube subimos subió baja bajamos bajó vuelve volvemos volvió desde antes era sino lugar vez "
    "reemplaza reemplazamos renombrado corrige corregido errata migramos"
)
_FUNCTION = frozenset(
    "the and for with are was were been its this that from not into onto per via after before "
    "los las del con por para que una uno son el la en de al lo se".split()
)
SHARE = 0.3  # of the older's words (values aside) that the newer has too: one subject
_LEAD = 2  # the first words of a statement that say its subject
_NO_SUBJECT = frozenset(fold(w) for w in FILLER | CHANGE | _FUNCTION)
_TOKEN = re.compile(r"\w+")
_SHORT = re.compile(r"[A-Z][A-Z0-9]")  # EU, US, P1, QA, DB: words guard.words skips


# Short forms a team writes for the same word ("the prod DB" / "the production database").
_SHORT_FORMS = {
    "db": "database", "bd": "datos", "prod": "production", "repo": "repository", "repos": "repository",
    "config": "configuration", "env": "environment", "auth": "authentication", "k8s": "kubernetes",
    "app": "application", "apps": "application", "docs": "documentation", "msg": "message",
    # The Spanish of the words of one family (below): one word in either language.
    "conexión": "connect", "conexion": "connect", "lectura": "read", "escritura": "write",
    "mínimo": "minimum", "minimo": "minimum", "máximo": "maximum", "maximo": "maximum",
    "cliente": "client", "clientes": "client", "servidor": "server", "servidores": "server",
    "entrada": "inbound", "salida": "outbound", "primaria": "primary", "réplica": "replica",
    "replica": "replica", "público": "public", "publico": "public", "pública": "public",
    "publica": "public", "privado": "private", "privada": "private", "interno": "internal",
    "interna": "internal", "externo": "external", "externa": "external", "subida": "upload",
    "descarga": "download", "unitarios": "unit", "integración": "integration",
    "integracion": "integration", "memoria": "memory", "disco": "disk", "acceso": "access",
    "refresco": "refresh", "gratis": "free", "gratuito": "free", "origen": "source",
    "destino": "destination", "escritorio": "desktop",
    "ue": "eu",
}  # fmt: skip


def _word(token: str) -> str:
    """How a word is compared: accents folded ("imágenes" / "imagen"), a short form written out,
    a plural's "s" dropped ("logs" / "log"), its first five letters."""
    folded = fold(token)
    folded = _SHORT_FORMS.get(folded, _SHORT_FORMS.get(token.lower(), folded))
    if len(folded) > 3 and folded.endswith("s") and not folded.endswith(("ss", "us", "is")):
        folded = folded[:-1]
    return folded[:5]


def _tokens(text: str) -> list[str]:
    """The words of ``text`` worth comparing, in order: three letters or more, or a short name."""
    return [t for t in _TOKEN.findall(text) if len(t) >= 3 or _SHORT.fullmatch(t)]


@lru_cache(maxsize=8192)
def said_words(text: str) -> frozenset[str]:
    """Every word of ``text`` as :func:`_word` reads it, values' too."""
    return frozenset(map(_word, _tokens(text)))


def _subject_words(text: str) -> list[str]:
    """The words of ``text`` in order, values, function words and words of no subject left out."""
    return [
        _word(token)
        for token in _tokens(without_values(text))
        if fold(token) not in _NO_SUBJECT and fold(token)[:5] not in _NO_SUBJECT
    ]


# Words of one family: one in each statement says two things ("connect" / "read" timeout). What
# a statement is about, never a value it takes: "daily" / "weekly" is a schedule that changed.
_FAMILIES = tuple(
    frozenset(map(_word, family.split()))
    for family in (
        "connect read write idle handshake",
        "min minimum max maximum target",
        "client server",
        "frontend backend",
        "android ios desktop",
        "inbound outbound ingress egress",
        "primary replica secondary leader follower",
        "public private internal external",
        "upload download",
        "input output",
        "soft hard",
        "unit integration e2e smoke",
        "cpu memory disk",
        "sev1 sev2 sev3 sev4",
        "access refresh",
        "free pro enterprise premium",
        "source destination",
        "eu us usa emea apac latam",
    )
)


def one_subject(older: str, newer: str) -> str:
    """Why ``newer`` is about ``older``'s subject (the words they share), '' when it is not: at
    least ``SHARE`` of the older's words are the newer's too, the first words of one are in the
    other, no word of one family stands in each, nor another word before a shared one in their
    subjects."""
    old, new = _subject_words(older), _subject_words(newer)
    if not old or not new or _names_another(older, newer):
        return ""
    shared = set(old) & set(new)
    if len(shared) / len(set(old)) < SHARE:
        return ""
    if not (set(old[:_LEAD]) & said_words(newer) or set(new[:_LEAD]) & said_words(older)):
        return ""
    if two_of_a_family(older, newer) or _qualified(old, new, older, newer):
        return ""
    return ", ".join(sorted(w for w in old if w in shared)[:4])


def _names_another(older: str, newer: str) -> bool:
    """The newer's subject is a hyphenated name ("The billing-nightly job …") with a part the
    older never says: it is about a thing the older does not name."""
    first = next((t.lower() for t in newer.split() if t.lower() not in _FUNCTION), "").strip(".,;:")
    return first in hyphenated_names(newer) and not said_words(first) <= said_words(older)


def two_of_a_family(older: str, newer: str) -> str:
    """Words of one family, one only in each statement ("connect" / "read"); '' when none."""
    theirs, mine = said_words(older), said_words(newer)
    for family in _FAMILIES:
        left, right = (theirs & family) - mine, (mine & family) - theirs
        if left and right:
            return f"{min(left)} / {min(right)}"
    return ""


def _qualified(old: list[str], new: list[str], older: str, newer: str) -> bool:
    """A word shared in the first three of each, each with another word before it that the other
    statement lacks: "Checkout API timeout" / "Payments API timeout"."""
    theirs, mine = said_words(older), said_words(newer)
    for i, head in enumerate(old[:3]):
        for j, other in enumerate(new[:3]):
            before = (old[i - 1], new[j - 1]) if i and j and head == other else None
            if before and before[0] != before[1] and before[0] not in mine and before[1] not in theirs:
                return True
    return False
