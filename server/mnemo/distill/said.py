"""What a person's line says by its form, for no model call: whether it asks, and whether it uses
words that state something lasting or states a value.

The cue words are the oldest of the small model's rails (:func:`mnemo.distill.extract.states_something`);
today they are one of the signals the durable-line classifier weighs beside the line's embedding
(:mod:`mnemo.distill.durable`), and the rule itself where no classifier was fitted for the
embedder.
"""

from __future__ import annotations

import re

from mnemo.distill.readings import facts
from mnemo.injected import strip_injected

# Words a person uses to state something that lasts: a rule, a preference, a reason, a name, a
# change.
_LASTING = re.compile(
    r"\b(?:always|never|from now on|rule|prefer|prefers|we use|we don't|don't|do not|must|should|only|every|"
    r"default|policy|anymore|no longer|because|since|so that|instead|call it|called|is now|keep in mind|"
    r"heads up|agreed|decided|moves? to|moved to|switch(?:es|ed)? to|now on|"
    r"a partir de ahora|siempre|nunca|regla|prefiero|preferimos|usamos|hay que|tiene que|deben|cada|"
    r"por defecto|porque|para que|ya no|nos quedamos|me gusta|solo|pasa(?:mos|n)? a|cambia\w*)\b",
    re.IGNORECASE,
)


def states_lasting(text: str, *, bare_numbers: bool = False) -> bool:
    """Words that state something lasting, a version, or a quantity with its unit (or any number,
    with ``bare_numbers``)."""
    found = facts(text)
    quantities = [q for q in found["quantity"] if bare_numbers or not q.startswith("number:")]
    return bool(_LASTING.search(text) or found["version"] or quantities)


def is_question(text: str) -> bool:
    """Whether a line ends by asking (its last sentence is a question), in any language."""
    return strip_injected(text).rstrip().endswith(("?", "？"))
