"""Which language a memory asks the agent to use, and which language a text is written in.

A memory such as "reply to the person in Korean" or "specs are written in English, not Portuguese"
is used by a turn whose answer is in that language, whatever words it shares with the memory
(:mod:`mnemo.usage.signal`). :func:`asked_language` finds such a memory: a word of speaking or
writing (reply, answer, write, explain, docs, comments, language… in English, Spanish, French or
German) and a language named after "in" ("en", "em", "auf"), or the only language it names.
:func:`written_in` tells a text's language by its script (Korean, Japanese, Chinese, Russian) or,
for Latin-script text, by the commonest short words of English, Spanish, French, German,
Portuguese and Italian; None when it cannot tell (too little text).
"""

from __future__ import annotations

import re
from functools import cache

_NAMES = {
    "en": r"english|ingl[ée]s|anglais|englisch|ingl[êe]s",
    "es": r"spanish|espa[ñn]ol|castellano|espagnol|spanisch",
    "fr": r"french|fran[çc]ais|franc[ée]s|franz[öo]sisch",
    "de": r"german|deutsch|alem[áa]n|allemand",
    "pt": r"portuguese|portugu[êe]s|portugais",
    "it": r"italian|italiano|italien",
    "ko": r"korean|coreano|cor[ée]en|한국어",
    "ja": r"japanese|japon[ée]s|japonais|日本語",
    "zh": r"chinese|chino|chinois|中文|汉语",
    "ru": r"russian|ruso|russe|русск\w*",
}
_SPEECH = re.compile(
    r"\b(?:repl\w*|answer\w*|respon\w*|writ\w*|wrote|expla\w*|expli\w*|speak\w*|talk\w*|chat\w*|communicat\w*|"
    r"messages?|docs?|documents?|documentation|comments?|convers\w*|language|idioma|lengua|langue|sprache|"
    r"contest\w*|escrib\w*|habl\w*|r[ée]pon\w*|[ée]cri\w*|antwort\w*|schreib\w*)\b",
    re.IGNORECASE,
)
_ANY = "|".join(f"(?P<{code}>{pattern})" for code, pattern in _NAMES.items())
_AFTER_IN = re.compile(rf"(?<!\w)(?:in|en|em|auf|na)\s+(?:{_ANY})(?!\w)", re.IGNORECASE)
_NAMED = {code: re.compile(rf"(?<!\w)(?:{pattern})(?!\w)", re.IGNORECASE) for code, pattern in _NAMES.items()}
_COMMON = {
    "en": "the and is are to of this that with for it you in".split(),
    "es": "el la los las que de y es en para con por una un del".split(),
    "fr": "le la les des et est une un pour avec dans que pas du sur".split(),
    "de": "der die das und ist nicht mit für ein eine den auf zu sich auch".split(),
    "pt": "o a os as que de e é para com não uma um do da em".split(),
    "it": "il la che di e è per con non una un del della sono".split(),
}
_SCRIPTS = (  # (language, characters, share of the letters it needs)
    ("ko", re.compile(r"[\uac00-\ud7af]"), 0.2),
    ("ja", re.compile(r"[\u3040-\u30ff]"), 0.05),
    ("zh", re.compile(r"[\u4e00-\u9fff]"), 0.2),
    ("ru", re.compile(r"[\u0400-\u04ff]"), 0.3),
)
_LETTER = re.compile(r"[^\W\d_]")
_WORD = re.compile(r"[a-zà-ÿ]+")
MIN_COMMON_WORDS = 3
MAX_CHARS = 4_000


@cache
def asked_language(memory_text: str) -> str | None:
    """The language (ISO 639-1) a memory asks the agent to speak or write in, or None."""
    if not _SPEECH.search(memory_text):
        return None
    match = _AFTER_IN.search(memory_text)
    if match:
        return next(code for code in _NAMES if match.group(code))
    named = [code for code, pattern in _NAMED.items() if pattern.search(memory_text)]
    return named[0] if len(named) == 1 else None


def written_in(text: str) -> str | None:
    """The language (ISO 639-1) a text is mostly written in, or None when it cannot tell."""
    text = text[:MAX_CHARS]
    letters = len(_LETTER.findall(text))
    if not letters:
        return None
    for code, characters, share in _SCRIPTS:
        if len(characters.findall(text)) > share * letters:
            return code
    words = _WORD.findall(text.lower())
    counts = {code: sum(1 for w in words if w in _common(code)) for code in _COMMON}
    best = max(counts, key=lambda code: counts[code])
    return best if counts[best] >= MIN_COMMON_WORDS else None


@cache
def _common(code: str) -> frozenset[str]:
    return frozenset(_COMMON[code])
