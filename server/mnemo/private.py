"""Private spans: what a person wraps in ``<private>…</private>`` is never stored nor sent to a model.

Anywhere in a prompt, a tool's output or an answer, the span — tags and all — is replaced by
``[PRIVATE]`` at the redaction stage, before credentials are looked for
(:class:`mnemo.secrets.SecretRedactor`): before an episode is stored, journaled or spooled, and
before any text is shown to a model. What is written to be kept (remember, keep, a review edit, an
imported memory) is refused when it holds a span, as a credential is.

The rules, chosen to fail closed (losing a little text beats keeping what was meant to stay
private):

- the tags are matched in any case, and the opening one may carry attributes
  (``<PRIVATE reason="…">``); ``<private-key>`` or ``<privateer>`` are other tags;
- spans nest: ``<private>a <private>b</private> c</private>`` is one span;
- an opening tag never closed hides everything after it (a cut transcript, a forgotten tag);
- a closing tag with nothing open hides everything before it, back to the end of the last span
  (its opening tag was cut off, or written wrong: ``<private note="<">``).

Standard library only: the hook process strips spans from what it spools while the daemon is down.
"""

from __future__ import annotations

import re

from mnemo.errors import InputError

PLACEHOLDER = "[PRIVATE]"
_TAG = re.compile(r"<(?:(/)private\s*|private(?:\s[^<>]*)?)>", re.IGNORECASE)


def has_private(text: str) -> bool:
    """Whether ``text`` holds a private tag, opening or closing."""
    return "<" in text and _TAG.search(text) is not None


def remove_private(text: str) -> str:
    """``text`` with each private span replaced by ``[PRIVATE]`` (see the rules above)."""
    if not has_private(text):
        return text
    pieces: list[str] = []
    depth, kept_from = 0, 0
    for tag in _TAG.finditer(text):
        is_closing = bool(tag.group(1))
        if not is_closing:
            if depth == 0:
                pieces += [text[kept_from : tag.start()], PLACEHOLDER]
            depth += 1
        elif depth == 0:  # nothing open: what came before it was meant to be private too
            if not pieces or pieces[-1] != PLACEHOLDER:  # one placeholder for what is hidden
                pieces.append(PLACEHOLDER)
            kept_from = tag.end()
        else:
            depth -= 1
            if depth == 0:
                kept_from = tag.end()
    if depth == 0:
        pieces.append(text[kept_from:])
    return "".join(pieces)


def refuse_private(text: str, field: str) -> None:
    """Refuse (``InputError``) a text meant to be kept that holds a private span."""
    if has_private(text):
        raise InputError(
            f"{field}: holds a <private> span; mnemo never keeps what is marked private: "
            "remove the span (or the tags, if it need not be private)"
        )
