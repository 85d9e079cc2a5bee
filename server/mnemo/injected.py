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
itself (a peer ended up with 668 copies of one hallucination this way).
"""

from __future__ import annotations

import re
import unicodedata

from mnemo.errors import InputError

TAG = "mnemo-memory"
# A block, or an unterminated one running to the end of the text (a truncated transcript).
_BLOCK = re.compile(rf"<{TAG}\b[^>]*>.*?(?:</{TAG}\s*>|\Z)", re.DOTALL | re.IGNORECASE)
_LESS = "<\uff1c\ufe64"  # "<" and its full-width and small forms (NFKC makes them "<")
# What a reader could take for "<" in mnemo's own tag: angle quotes and brackets, look-alikes.
_LOOKALIKES = "\u2039\u00ab\u2329\u3008\u300a\u27e8\u276e\u02c2\u1438"
_CANDIDATE = re.compile(f"[{_LESS}{_LOOKALIKES}]")
_DASHES = "-_\u2010\u2011\u2012\u2013\u2014\u2015\u2212\ufe63\uff0d\uff3f"
_BLANK_LETTERS = "\u115f\u1160\u3164\uffa0\u2800"  # letters and signs that print as nothing
# Control characters, but for tabs and line breaks: they have no place in what a model reads.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_CONTROL_BUT_LINES = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_LOOKAHEAD = 80  # characters read past a "<": enough for invisible padding and the tag's name


def strip_injected(text: str) -> str:
    """``text`` without mnemo's injected blocks."""
    return _BLOCK.sub("", text)


def frame(body: str, *, source: str) -> str:
    """``body`` inside mnemo's frame, every tag in it made inert; ``source`` says which hook added
    it (for the reader)."""
    return f'<{TAG} source="{source}">\n{inert(body.strip())}\n</{TAG}>'


def inert(text: str) -> str:
    """``text`` with each ``<`` that could start a tag written ``&lt;`` (and control characters
    but tabs and line breaks as U+FFFD): inside a block it can neither close the frame nor open
    anything. A tag starts at "<" before "/", or right before "!", "?" or a letter, whatever
    invisible characters (marks, format and control characters) stand between; mnemo's own tag
    also after spaces and behind a look-alike of "<"."""
    pieces, kept_to = [], 0
    for candidate in _CANDIDATE.finditer(text):
        at = candidate.start()
        if _starts_tag(text, at):  # read before the control characters are replaced: they are skipped
            pieces += [text[kept_to:at], "&lt;"]
            kept_to = at + 1
    return _CONTROL.sub("\ufffd", "".join([*pieces, text[kept_to:]]))


def refuse_frame(text: str, field: str) -> None:
    """Refuse (InputError) a text that holds mnemo's own tag, opening or closing: stored, it would
    try to end the data block early. (Injected, it would be made inert anyway; a write is told.)"""
    if any(_is_own_tag(text, c.end()) for c in _CANDIDATE.finditer(text)):
        raise InputError(f"{field}: may not hold mnemo's own <{TAG}> or </{TAG}> tag")


def refuse_unfit(text: str, field: str) -> None:
    """Refuse (InputError) what has no place in a memory block: mnemo's own tag, and control
    characters other than tabs and line breaks."""
    refuse_frame(text, field)
    control = _CONTROL_BUT_LINES.search(text)
    if control:
        raise InputError(f"{field}: may not hold control characters (U+{ord(control.group()):04X})")


def _is_invisible(char: str) -> bool:
    return unicodedata.category(char)[0] in "MC" or char in _BLANK_LETTERS


def _starts_tag(text: str, at: int) -> bool:
    """Whether the "<" (or look-alike) at ``at`` could be read as the start of a tag."""
    if _is_own_tag(text, at + 1):
        return True
    if text[at] not in _LESS:
        return False
    after, spaced = at + 1, False
    while after < len(text) and (_is_invisible(text[after]) or text[after].isspace()):
        spaced = spaced or text[after].isspace()
        after += 1
    following = unicodedata.normalize("NFKC", text[after : after + 1])
    return following == "/" or (not spaced and following != "" and (following in "!?" or following.isalpha()))


def _is_own_tag(text: str, start: int) -> bool:
    """Whether what follows ``start``, read as a person would (invisible characters, spaces and
    dashes skipped, look-alike letters folded), is "mnemo-memory" or "/mnemo-memory"."""
    window = text[start : start + _LOOKAHEAD]
    seen = "".join(c for c in window if not (_is_invisible(c) or c.isspace() or c in _DASHES))
    return unicodedata.normalize("NFKC", seen).casefold().lstrip("/").startswith("mnemomemory")
