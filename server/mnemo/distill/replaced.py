"""What a person names as replaced when they say a change or a correction, in English and
Spanish: "from Tuesday to Thursday", "600, not 300", "instead of X", "X was a typo", "no longer
X", "en vez de X", "pasa de X a Y", "X → Y", "renamed X to Y", what they drop ("dropping Sentry"),
deny ("no usa wkhtmltopdf") or said before ("I said 90 days"). Copied from their words, never
guessed: whether the older memory states it is :mod:`mnemo.distill.frames`'s to say.
"""

from __future__ import annotations

import re

# What a change names, up to the next mark: a point inside a value is not one (99.9, /v1.2, a.b.io).
_X = r"((?:[^,.;:()\n]|\.(?=\w)){1,40}?)"
_STOP_X = (
    r"(?=\s+(?:to|a|al|and|y|but|sino|because|porque|for|para|since|as)\b|\s*(?:[,;:()\n]|\.(?!\w))|\s*$)"
)
_MOVED_FROM = "up|down|raised|lowered|bumped|increased|decreased|moved|changed|switched|migrated"
_PASA_DE = (
    "pasa|pasan|pasamos|pasó|cambia|cambian|cambiamos|cambió|sube|subimos|subió|baja|bajamos|bajó|"
    "mueve|movemos|movió|migra|migramos|migró|renombr\\w+"
)
_INSTEAD = (
    "instead of|rather than|in place of|replacing|replaces|no longer|en vez de|en lugar de|"
    "reemplazando a|reemplaza a|sustituye a|ya no"
)
_FORMERLY = "used to be|previously|formerly|antes era|solía ser|was previously"
_DROPPED = (
    "drop|dropping|dropped|remove|removing|removed|ripped out|rip out|retire|retiring|retired|stop using|"
    "stopped using|get rid of|got rid of|deprecate|deprecated|sunset|apagamos|quitamos|quitar|eliminamos|"
    "dejamos de usar|sacamos"
)
_SAID_BEFORE = r"(?:i|we)\s+(?:said|wrote|put|told you)|(?:dije|puse|escribí)"
_WAS_WRONG = (
    "was a typo|is a typo|was wrong|is wrong|estaba mal|era un error|es un error|era una errata|es incorrecto"
)
_RENAMED = "was renamed|is renamed|has been renamed|is now called|ahora se llama|se renombró"
_UP_TO_3 = r"([\w.\-/]+(?:\s+[\w.\-/]+){0,2})"
# A word every pattern of _REPLACED needs: the cheap test before them.
_MARK = re.compile(
    r"→|->|=>|\b(?:from|de|instead|rather|place|replac\w*|reemplaz\w*|sustituye|longer|ya|used|previously|formerly|"
    r"antes|solía|not|no|typo|wrong|mal|error|errata|incorrecto|renamed|renombr\w*|called|llama|"
    r"drop\w*|remov\w*|ripped|rip|retir\w*|stop\w*|rid|deprecat\w*|sunset|apagamos|quit\w*|elimin\w*|"
    r"dejamos|sacamos|said|wrote|put|told|dije|puse|escribí|rename|migration|switch|move)\b",
    re.IGNORECASE,
)
# What a statement says is not so, which the older may state: "does not block merges", "no usa
# wkhtmltopdf". Not a bare value ("the limit is not 3 for webhooks" is another limit).
_DENIED = re.compile(
    rf"\b(?:not|no|never|nunca|doesn't|don't|isn't|aren't)\s+(?!longer\b|more\b|es\b){_X}{_STOP_X}",
    re.IGNORECASE,
)
# How a person names what a change replaces; group 1 is it.
_REPLACED = [
    re.compile(rf"\bfrom\s+{_X}\s+(?:to|→|->)\s", re.IGNORECASE),
    re.compile(rf"\b(?:{_MOVED_FROM})\s+from\s+{_X}{_STOP_X}", re.IGNORECASE),
    re.compile(rf"\b(?:{_PASA_DE})\b[^.;\n]{{0,40}}?\bde\s+{_X}\s+a\s", re.IGNORECASE),
    re.compile(rf"{_UP_TO_3}\s*(?:→|->|=>)\s*\S"),
    re.compile(rf"\b(?:{_INSTEAD})\s+{_X}{_STOP_X}", re.IGNORECASE),
    re.compile(rf"\b(?:{_FORMERLY})\s+{_X}{_STOP_X}", re.IGNORECASE),
    re.compile(rf"\b(?:{_DROPPED})\s+(?:the\s+|el\s+|la\s+|los\s+|las\s+)?{_X}{_STOP_X}", re.IGNORECASE),
    re.compile(rf"\b(?:{_SAID_BEFORE})\s+{_X}{_STOP_X}", re.IGNORECASE),
    re.compile(r"\b([\w.\-/]+)\s+to\s+[\w.\-/]+\s+(?:rename|migration|switch|move)\b", re.IGNORECASE),
    re.compile(rf"[\w.%]+\s*,\s*(?:not|no)\s+{_X}{_STOP_X}", re.IGNORECASE),
    re.compile(rf"\b(?:not|no)\s+{_X},?\s+(?:but|sino)\s", re.IGNORECASE),
    re.compile(rf"{_UP_TO_3}\s+(?:{_WAS_WRONG})", re.IGNORECASE),
    re.compile(r"\brenamed\s+(?:from\s+)?([\w.\-/]+)\s+to\s", re.IGNORECASE),
    re.compile(rf"([\w.\-/]+)\s+(?:{_RENAMED})\b", re.IGNORECASE),
]


def named_replaced(text: str) -> list[str]:
    """What ``text`` names as replaced by a change ("from Tuesday to Thursday" → "Tuesday")."""
    found = []
    for pattern in _REPLACED:
        found += [" ".join(m.group(1).split()) for m in pattern.finditer(text)]
    return [x for x in dict.fromkeys(found) if x]


def denied(text: str) -> list[str]:
    """What ``text`` says is not so ("does not block merges" → "block merges")."""
    return [" ".join(m.group(1).split()) for m in _DENIED.finditer(text)]


def may_name(text: str) -> bool:
    """Whether ``text`` holds a word :func:`named_replaced` needs (the cheap test before it)."""
    return _MARK.search(text) is not None
