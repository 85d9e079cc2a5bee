"""The frame of the memory blocks mnemo adds to an agent's context: made, kept shut, and removed.

Hooks inject memory as data inside ``<mnemo-memory …>…</mnemo-memory>``. Everything inside comes
from the store — remembered, distilled, kept or imported text, written by a person, a model or
whatever page the agent read — so no stored text may close that frame (and let what follows read
as the context's own text) or open a frame, or a tag, of anything else. :func:`frame` is the one
way a block is made, and it makes every ``<`` that could start a tag inert (``&lt;``), whoever
wrote the text and whenever it was stored; the writes a person or an agent makes refuse mnemo's
own tags outright (:func:`refuse_frame`), so the attempt is said at once.

The same text then comes back in the transcript (a prompt that carried the block, an answer
quoting it); before anything is distilled, the blocks are cut out, so memory never feeds on
itself (DESIGN §4: a peer ended up with 668 copies of one hallucination this way).
"""

from __future__ import annotations

import re

from mnemo.errors import InputError

TAG = "mnemo-memory"
# A block, or an unterminated one running to the end of the text (a truncated transcript).
_BLOCK = re.compile(rf"<{TAG}\b[^>]*>.*?(?:</{TAG}\s*>|\Z)", re.DOTALL | re.IGNORECASE)
# Invisible format characters a reader skips (soft hyphen, zero-width and direction marks, BOM).
_FORMAT = "\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff"
_BRACKET = "[<\uff1c\ufe64]"  # "<", and its full-width and small forms
# mnemo's own tag, however spaced, cased or hyphenated.
_OWN = f"[\\s{_FORMAT}]*/?[\\s{_FORMAT}]*mnemo[\\s{_FORMAT}\\-_\u2010-\u2015]*memory"
_OWN_TAG = re.compile(_BRACKET + _OWN, re.IGNORECASE)
# What a reader could take for the start of any tag: mnemo's own, or a bracket right before "/",
# "!", "?" or a letter ("a < b" stays as it is).
_TAG_START = re.compile(f"{_BRACKET}(?=[{_FORMAT}]*(?:[/!?]|[^\\W\\d_])|{_OWN})", re.IGNORECASE)


def strip_injected(text: str) -> str:
    """``text`` without mnemo's injected blocks."""
    return _BLOCK.sub("", text)


def frame(body: str, *, source: str) -> str:
    """``body`` inside mnemo's frame, every tag in it made inert; ``source`` says which hook added
    it (for the reader)."""
    return f'<{TAG} source="{source}">\n{inert(body.strip())}\n</{TAG}>'


def inert(text: str) -> str:
    """``text`` with each ``<`` that could start a tag written ``&lt;``: inside a block it can
    neither close the frame nor open anything."""
    return _TAG_START.sub("&lt;", text)


def refuse_frame(text: str, field: str) -> None:
    """Refuse (InputError) a text that holds mnemo's own tag, opening or closing: stored, it would
    try to end the data block early. (Injected, it would be made inert anyway; a write is told.)"""
    if _OWN_TAG.search(text):
        raise InputError(f"{field}: may not hold mnemo's own <{TAG}> or </{TAG}> tag")
