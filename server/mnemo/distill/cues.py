"""The wording of a correction and of a change, in English and Spanish.

A note that says another was wrong ("wrong", "en realidad", "RS256, not HS256", "no … sino",
"the old note", "was a typo") or that something changed ("now", "moved", "ya no", "renamed") is
never the same memory as the note it corrects or changes, however alike the two read: the judge
(:mod:`mnemo.distill.judge`) bars *same* on it (:func:`words_correction`, :func:`words_change`).
The relation asked in steps (:mod:`mnemo.distill.relation`) weighs the narrower cues it was fitted
with (:func:`cue_correction`, :func:`cue_change`): change those only with a refit of the weights.
"""

from __future__ import annotations

import re

_CORRECTION = re.compile(
    r"\b(wrong|incorrect|never|actually|in fact|mistaken|mistake|not true|contrary|erroneous|"
    r"equivocad[oa]s?|incorrect[oa]s?|nunca|en realidad|no es cierto|falso|err[oó]ne[oa]|se equivoca\w*)\b",
    re.IGNORECASE,
)
# A correction by its shape: "RS256, not HS256", "not from main but from release", "no va a X
# sino a Y", "the old note", "has always been".
_CORRECTION_SHAPE = re.compile(
    r"\bnot\b[^.;:]*\bbut\b|\bno\b[^.;:]*\bsino\b|,\s*not\b|\bnot\s+\S+\s+as\b"
    r"|\b(?:old|earlier|previous|anterior)\s+(?:note|memory|nota|memoria)\b|\bhas always\b|\bsiempre ha\b"
    r"|\bnever (?:had|was|were|did)\b",
    re.IGNORECASE,
)
_CHANGE = re.compile(
    r"\b(now|move|moves|moved|switched|since|from now on|no longer|replaced|bumped|raised|lowered|upgraded|"
    r"migrated|changed|anymore|ahora|pasamos|pasa|pasan|ya no|desde|cambi\w+|sub\w+ a|migr\w+|reemplaz\w+)\b",
    re.IGNORECASE,
)
# What the rail adds to the correction cue: a typo, a misquote, and their Spanish.
_CORRECTION_MORE = re.compile(
    r"\b(typo|misquoted|misremembered|misread|correction|corrected|errata|errat\w+|corrig\w+|"
    r"mal anotad[oa]|mal citad[oa]|se entendi[oó] mal|estaba mal|estaban mal|aclar\w+ que)\b",
    re.IGNORECASE,
)
# The rail's change: narrower than the cue ("since" and "instead" also word a reason or a
# paraphrase — "in-memory fakes instead of mocks"): what says a state ended or moved.
_CHANGE_STRONG = re.compile(
    r"\b(no longer|anymore|any more|ya no|renamed|renombr\w+|reverted|rolled back|went back|volvimos|"
    r"(?:moved|moves|switched|migrated|changed|bumped|raised|lowered) (?:to|from|back)|replaced (?:by|with)|"
    r"(?:is|are|was|were) now|now (?:is|are|uses|use|runs|run|goes|go|lives|points|asks|wants|needs|requires|"
    r"prefers)|"
    r"ahora (?:es|son|usa|usan|va|van|vive|corre|apunta)|pasa(?:mos|n)? a|cambi\w+ (?:a|de)|"
    r"sub\w+ a|baj\w+ a)\b",
    re.IGNORECASE,
)

# Any word that says something changed, was corrected or came back, wherever it stands ("is now
# 60 seconds", "again", "actually", "re-enabled", "otra vez"): what the worded rule of
# mnemo.distill.frames asks of the newer statement, with its subject read apart.
_SAYS_CHANGE = re.compile(
    r"\b(now|again|re-?enabled|no longer|anymore|any more|renamed|moved|switched|migrated|replaced|"
    r"retired|revert\w*|rolled back|went back|going back|back (?:to|on|at)|re-?added|restored|bumped|raised|"
    r"lowered|reduced|increased|mixed (?:it|them|that) up|confused|"
    r"extended|shortened|dropped|actually|typo|corrected|correction|(?:was|were|is) wrong|"
    r"(?:doesn't|does not|never) exist(?:ed)?|"
    r"ahora|otra vez|de nuevo|vuelve|vuelven|volvemos|volvimos|volvió|ya no|renombr\w+|en realidad|"
    r"corrij\w+|corrig\w+|correcci[oó]n|equivoqu\w+|confund\w+|estaba mal|no existe|nunca existió|"
    r"se mueve|movemos|movimos|ampliamos|"
    r"subimos|bajamos|reducimos|aumentamos|pasa(?:n|mos)? al?|cambi(?:a|an|amos|ó|ado|ada)|"
    r"migramos|migró|reemplaz(?:a|an|amos|ó|ado|ada))\b",
    re.IGNORECASE,
)


def cue_correction(text: str) -> bool:
    """The correction cue the step weights were fitted with."""
    return _CORRECTION.search(text) is not None or _CORRECTION_SHAPE.search(text) is not None


def cue_change(text: str) -> bool:
    """The change cue the step weights were fitted with."""
    return _CHANGE.search(text) is not None


def words_correction(text: str) -> bool:
    """Whether ``text`` words a correction: by a word or by its shape."""
    return cue_correction(text) or _CORRECTION_MORE.search(text) is not None


def words_change(text: str) -> bool:
    """Whether ``text`` words that a state ended or moved ("no longer", "renamed", "is now", "ya
    no", "pasamos a")."""
    return _CHANGE_STRONG.search(text) is not None


def says_change(text: str) -> bool:
    """Whether ``text`` says in any word that something changed, was corrected or came back."""
    return _SAYS_CHANGE.search(text) is not None
