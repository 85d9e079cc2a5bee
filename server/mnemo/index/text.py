"""Text as the lexical index sees it: folded tokens, stopwords, language, stems.

One function, :func:`terms`, turns a text into index terms; documents and questions both go
through it, so what a question asks for is spelled the way the index stored it. Tokens are
lower-cased and accent-folded ("Qué" → "que"); identifiers keep their whole form and their parts
("lb.tf" → "lb.tf", "lb", "tf"); words are stemmed with the Snowball stemmer of the text's
language (English or Spanish, told apart by their stopwords), so "deploys"/"deployed" and
"desplegamos"/"desplegar" meet.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Callable
from enum import StrEnum
from functools import lru_cache

import snowballstemmer

_TOKEN_RE = re.compile(r"\w+(?:[.\-/]\w+)*", re.UNICODE)
_PART_RE = re.compile(r"[^\W_]+", re.UNICODE)
_MAX_TERM_CHARS = 64

# Words that say nothing about which memory is meant, accent-folded (English and Spanish).
_ENGLISH_STOPWORDS = frozenset(
    """a about after all also am an and any are as at be been before being but by can could did
    do does doing done for from had has have having he her here hers him his how i if in into is
    it its just me more most my no not now of on once only or other our ours out over own same
    she should so some such than that the their theirs them then there these they this those
    through to too under until up very was we were what when where which while who whom why will
    with would you your yours""".split()
)
_SPANISH_STOPWORDS = frozenset(
    """a al algo algun alguna alguno ante antes como con contra cual cuales cuando de del desde
    donde durante e el ella ellas ellos en entre era eramos eran es esa ese eso esta estaba estan
    estas este esto estos fue fueron ha habia han hasta hay la las le les lo los mas me mi mis
    mucho muy nada ni no nos nosotros o os otra otro para pero poco por porque que quien quienes
    se sea ser si sin sobre su sus tambien te tenia tiene tu tus un una uno unos y ya yo""".split()
)
STOPWORDS = _ENGLISH_STOPWORDS | _SPANISH_STOPWORDS


class Language(StrEnum):
    ENGLISH = "en"
    SPANISH = "es"


def fold(text: str) -> str:
    """Lower-case and strip accents ("¿Por qué?" → "¿por que?"); ñ folds to n."""
    lowered = text.lower()
    if lowered.isascii():  # nothing to strip (most stored text): skip the per-character pass
        return lowered
    decomposed = unicodedata.normalize("NFKD", lowered)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def tokens(text: str) -> list[str]:
    """Folded word tokens; dotted/dashed identifiers also yield their parts (lb.tf → lb, tf)."""
    found: list[str] = []
    for match in _TOKEN_RE.finditer(fold(text)):
        token = match.group()[:_MAX_TERM_CHARS]
        found.append(token)
        parts = _PART_RE.findall(token)
        if len(parts) > 1 or (parts and parts[0] != token):
            found.extend(parts)
    return found


def detect_language(words: list[str]) -> Language:
    """Spanish when its stopwords outnumber English ones; English otherwise (the stored default)."""
    spanish = sum(1 for w in words if w in _SPANISH_STOPWORDS and w not in _ENGLISH_STOPWORDS)
    english = sum(1 for w in words if w in _ENGLISH_STOPWORDS and w not in _SPANISH_STOPWORDS)
    return Language.SPANISH if spanish > english else Language.ENGLISH


def _stemmer(language: Language) -> Callable[[str], str]:
    algorithm = snowballstemmer.stemmer("english" if language is Language.ENGLISH else "spanish")
    # A snowball stemmer works on state kept in the instance: two threads stemming at once (the
    # daemon indexes in worker threads while recalls analyse questions) would each get a mangled
    # word, and the cache would keep it. Cached words take no lock.
    stemming = threading.Lock()

    @lru_cache(maxsize=65_536)
    def stemmed(word: str) -> str:
        with stemming:
            return str(algorithm.stemWord(word))

    def stem(word: str) -> str:
        # Identifiers, numbers and short words are kept as written: "v2", "lb.tf", "120", "db".
        # Not cached: a store's identifiers (a ticket each) would fill the cache, and every entry
        # made while the index is built pins a page of heap for good.
        if len(word) <= 3 or not word.isalpha():
            return word
        return stemmed(word)

    return stem


_STEMMERS = {language: _stemmer(language) for language in Language}


def stem(word: str, language: Language) -> str:
    return _STEMMERS[language](word)


def terms(text: str, language: Language | None = None) -> list[str]:
    """Index terms of ``text``: folded, stopwords dropped, stemmed in its language (with repeats)."""
    words = tokens(text)
    stem_in = _STEMMERS[language or detect_language(words)]
    return [stem_in(w) for w in words if w not in STOPWORDS]


def query_terms(text: str) -> tuple[list[str], Language]:
    """Distinct terms of a question, and its language.

    A Spanish question also searches the English stems of its words, since memories are stored
    in English and identifiers are shared. A question made only of stopwords searches its words.
    """
    words = tokens(text)
    language = detect_language(words)
    kept = [w for w in words if w not in STOPWORDS] or words
    found = dict.fromkeys(stem(w, language) for w in kept)
    if language is Language.SPANISH:
        found.update(dict.fromkeys(stem(w, Language.ENGLISH) for w in kept))
    return list(found), language
