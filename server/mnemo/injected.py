"""The frame of the memory blocks mnemo adds to an agent's context, and their removal.

Hooks inject memory as data inside ``<mnemo-memory …>…</mnemo-memory>``. The same text then comes
back in the transcript (a prompt that carried the block, an answer quoting it); before anything
is distilled, the blocks are cut out, so memory never feeds on itself (DESIGN §4: a peer ended up
with 668 copies of one hallucination this way). This module is the one owner of the frame.
"""

from __future__ import annotations

import re

TAG = "mnemo-memory"
# A block, or an unterminated one running to the end of the text (a truncated transcript).
_BLOCK = re.compile(rf"<{TAG}\b[^>]*>.*?(?:</{TAG}\s*>|\Z)", re.DOTALL | re.IGNORECASE)


def strip_injected(text: str) -> str:
    """``text`` without mnemo's injected blocks."""
    return _BLOCK.sub("", text)


def frame(body: str, *, source: str) -> str:
    """``body`` inside mnemo's frame; ``source`` says which hook added it (for the reader)."""
    return f'<{TAG} source="{source}">\n{body.strip()}\n</{TAG}>'
