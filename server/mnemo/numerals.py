"""Numbers written as words, in English and Spanish ("three retries", "dos semanas"), as digits.

Shared by what reads quantities in a memory's text: the guard's readings
(:mod:`mnemo.distill.readings`) and the values a memory names in code (:mod:`mnemo.code.named`).
"one", "uno" and "una" are left alone — alone they are a pronoun or an article — and so is "once"
(Spanish eleven, English "once a day").
"""

from __future__ import annotations

import re

WORDS = {
    w: str(n)
    for n, words in enumerate(
        [
            "zero cero", "", "two dos", "three tres", "four cuatro", "five cinco", "six seis",
            "seven siete", "eight ocho", "nine nueve", "ten diez", "eleven", "twelve doce",
        ]
    )
    for w in words.split()
} | {"fifteen": "15", "twenty": "20", "thirty": "30", "sixty": "60", "hundred": "100", "quince": "15",
     "veinte": "20", "treinta": "30", "sesenta": "60", "cien": "100"}  # fmt: skip
_WORD_NUMBER = re.compile(r"\b(" + "|".join(WORDS) + r")\b", re.IGNORECASE)


def as_digits(text: str) -> str:
    """``text`` with its numbers written as words written as digits ("three times": "3 times")."""
    return _WORD_NUMBER.sub(lambda m: WORDS[m.group(1).lower()], text)
