"""Memories about how the agent should work, which a turn follows or not by the kind of its acts.

"When I ask a question, explain — don't edit the files", "show the code in the answer, I'll write
it myself": such a memory shares few words with the turns that follow it; what tells is whether the
turn edited files. :func:`asks_no_edits` finds one: a word of explaining or showing (explain,
explanation, show, answer; explica, muestra) and one of not editing (no/not/never/without/rather
than/instead of … edit, change, modify, touch, fix, apply; write the code themselves; sin editar,
no edites, no modifiques, no toques, solo explica) in one sentence of the memory.
"""

from __future__ import annotations

import re
from functools import cache

_EXPLAIN = re.compile(
    r"\b(?:expla\w*|expl[ií]\w*|show\w*|answer\w*|muestr\w*|ense[ñn]\w*|describ\w*)\b", re.IGNORECASE
)
_NO_EDITS = re.compile(
    r"\b(?:not?|n't|never|without|rather than|instead of|nunca|sin)\s+(?:\w+\s+){0,4}?"
    r"(?:edit\w*|chang\w*|modif\w*|touch\w*|fix\w*|apply\w*|editar|tocar|cambiar)\b|"
    r"\bwrit\w*\s+(?:the\s+)?(?:code\s+)?(?:changes\s+)?(?:themselves|himself|herself|myself)\b|"
    r"\bno\s+(?:edites|modifiques|toques|cambies)\b|\bsolo\s+expli\w*|\bexplain\w*\s+(?:\w+\s+){0,3}?only\b|"
    r"\bonly\s+(?:an?\s+)?expla\w*",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"(?<=[.!?;])\s+")


@cache
def asks_no_edits(memory_text: str) -> bool:
    """Whether a memory asks the agent to explain or show rather than edit files."""
    return any(_EXPLAIN.search(s) and _NO_EDITS.search(s) for s in _SENTENCE.split(memory_text))
