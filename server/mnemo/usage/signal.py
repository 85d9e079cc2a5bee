"""Whether a turn acted on a memory, read from what the agent did — no model call.

After a turn, the agent's acts are at hand: the commands it ran, the text it edited in or wrote,
the answer it gave. A memory it used leaves its distinctive content there — its values,
identifiers, names and terms — while an unused one, even on the same subject, mostly does not.

- **The memory's terms** (:func:`memory_terms`): what it says (its content, *how* and *where*).
  *Marks* are what a memory fixes: numbers, identifiers (``pg-stg-2``, ``max_age``, ``src/app.ts``,
  camelCase), code spans, quoted strings and names written with a capital inside a sentence.
  *Words* are its other words of four letters or more, stopwords dropped, stemmed.
- **The turn's evidence** (:class:`TurnActs`): the answer, and each tool call's act — a command's
  text, an edit's new text, a written file, a patch's added lines, the path it touched
  (:func:`act_of`); what the agent merely read (a file's path) counts as looking, not acting.
- **A language asked for** ("reply in Korean"): used when the answer is in that language, not
  when it is in another (:mod:`mnemo.usage.language`), whatever words they share.
- **Explain, don't edit** ("show me the code, I'll write it"): used by a turn that edited no file
  (:mod:`mnemo.usage.manner`).
- **The score** (:func:`content_score`): the share of the memory's weight found in the evidence, marks
  weighing more than words; a term the person's prompt already held weighs less (an answer may
  echo the prompt without the memory). Found in the agent's acts, a mark counts whole; found
  only in the answer it counts too (an answer that states the memory uses it).

The score is in [0, 1]; the usage audit (:mod:`mnemo.usage.audit`) turns it into a verdict with
``USED_AT`` and ``UNUSED_BELOW``. The weights and thresholds were fitted on real sessions and scored
once on sets labelled or written by helpers who saw neither (docs/benchmarks/usage.md, "Used or not,
without a model").
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from mnemo.index.text import STOPWORDS, Language, detect_language, stem, tokens
from mnemo.usage.language import asked_language, written_in
from mnemo.usage.manner import asks_no_edits

USED_AT = 0.2  # a score at or above: used
UNUSED_BELOW = 0.05  # below: clearly unused (between: unclear)
# A turn that went against a memory read by its kind (another language, an edit): not a use, and
# not a reason to stop injecting it either — between the two thresholds, unclear.
AGAINST = (USED_AT + UNUSED_BELOW) / 2
MARK_WEIGHT = 3.0
WORD_WEIGHT = 1.0
IN_PROMPT = 0.35  # a term the prompt already held weighs this share
SMOOTHING = 2.0  # weight added to a memory's total: one found word of a short memory is not use
MAX_EVIDENCE_CHARS = 60_000
MAX_ACT_CHARS = 8_000

_QUOTED = re.compile(r"[\"'“‘«`]([^\"'”’»`\n]{2,80})[\"'”’»`]")
_CAMEL = re.compile(r"\b(?:[a-z]+[A-Z]\w*|[A-Z][a-z0-9]+[A-Z]\w*)\b")
_CAPITALISED = re.compile(r"(?<![.!?:]\s)(?<!^)\b[A-Z][\w.+-]{2,}", re.MULTILINE)
_READ_ONLY = frozenset({"read", "grep", "glob", "ls", "webfetch", "websearch", "todowrite", "update_plan"})
_EDITS = frozenset({"edit", "multiedit", "write", "notebookedit", "apply_patch"})
_PATCH_PATH = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$", re.MULTILINE)


class Act(NamedTuple):
    """One tool call of a turn: what it did, as text, and its kind — "edit" (an edit, a written
    file, a patch), "look" (read, searched, listed, planned) or "run" (a command, anything else)."""

    text: str
    kind: str


@dataclass(frozen=True, slots=True)
class TurnActs:
    """What an agent did in one turn, after memories were added to its context."""

    prompt: str
    answer: str
    acts: Sequence[str] = field(default_factory=tuple)  # what its edits and commands did (act_of)
    edited: bool = False  # whether it edited or wrote a file


@dataclass(frozen=True, slots=True)
class Terms:
    marks: frozenset[str]  # folded, whole
    words: frozenset[str]  # stemmed


def turn_of(prompt: str, answer: str, acts: Iterable[Act], redact: Callable[[str], str] = str) -> TurnActs:
    """A turn's :class:`TurnActs` from its prompt, answer and tool calls (each text redacted)."""
    done = list(acts)
    return TurnActs(
        redact(prompt),
        redact(answer),
        tuple(redact(a.text) for a in done if a.kind != "look"),  # what it read is not what it did
        any(a.kind == "edit" for a in done),
    )


def act_of(name: str, tool_input: object) -> Act:
    """A tool call's act: commands give their text; edits their new text and path (the old text
    is what was there); writes their path and content; a patch its paths and added lines; anything
    else its input."""
    base = name.rsplit("__", 1)[-1].lower()
    kind = "look" if base in _READ_ONLY else "edit" if base in _EDITS else "run"
    if isinstance(tool_input, str):
        patch = "*** Begin Patch" in tool_input
        text = _patch_text(tool_input) if patch else tool_input
        return Act(text[:MAX_ACT_CHARS], "edit" if patch else kind)
    if not isinstance(tool_input, dict):
        return Act(_dump(tool_input)[:MAX_ACT_CHARS], kind)
    parts: list[str] = []
    for key in ("command", "cmd", "file_path", "path", "pattern", "new_string", "content", "input"):
        value = tool_input.get(key)
        if isinstance(value, list):
            value = " ".join(str(v) for v in value)
        if isinstance(value, str) and value:
            if "*** Begin Patch" in value:
                value, kind = _patch_text(value), "edit"
            parts.append(value)
    for edit in tool_input.get("edits") or []:  # MultiEdit
        if isinstance(edit, dict) and isinstance(edit.get("new_string"), str):
            parts.append(edit["new_string"])
    text = "\n".join(parts) if parts else _dump(tool_input)
    return Act(text[:MAX_ACT_CHARS], kind)


def memory_terms(text: str) -> Terms:
    """The marks and words of a memory's text."""
    marks = set(_marks(text))
    words = tokens(text)
    language = detect_language(words)
    plain = {
        stem(w, language)
        for w in words
        if w not in STOPWORDS and w not in marks and len(w) >= 4 and w.isalpha()
    }
    return Terms(frozenset(marks), frozenset(plain))


def score(memory_text: str, turn: TurnActs) -> float:
    """Whether the turn acted on the memory, in [0, 1]: for a memory that asks for a language, 1
    when the answer is in it and ``AGAINST`` when it is in another; for one that asks the agent to
    explain rather than edit, 1 when the turn edited no file and ``AGAINST`` when it did;
    otherwise :func:`content_score`."""
    asked = asked_language(memory_text)
    spoken = written_in(turn.answer) if asked is not None else None
    if spoken is not None:
        return 1.0 if spoken == asked else AGAINST
    if asks_no_edits(memory_text):
        return AGAINST if turn.edited else 1.0
    return content_score(memory_text, turn)


def content_score(memory_text: str, turn: TurnActs) -> float:
    """How much of the memory's distinctive content the turn's answer and acts hold, in [0, 1]."""
    terms = memory_terms(memory_text)
    if not terms.marks and not terms.words:
        return 0.0
    evidence = "\n".join([*turn.acts, turn.answer])[:MAX_EVIDENCE_CHARS]
    found_marks, found_words = _present(evidence)
    prompt_marks, prompt_words = _present(turn.prompt)
    total = found = 0.0
    for mark in terms.marks:
        weight = MARK_WEIGHT * (IN_PROMPT if mark in prompt_marks else 1.0)
        total += weight
        found += weight if mark in found_marks else 0.0
    for word in terms.words:
        weight = WORD_WEIGHT * (IN_PROMPT if word in prompt_words else 1.0)
        total += weight
        found += weight if word in found_words else 0.0
    return found / (total + SMOOTHING)


def _present(text: str) -> tuple[set[str], set[str]]:
    """Every folded token of ``text`` (marks are matched whole against these), and its words'
    stems in both languages (an answer may be in the other one)."""
    words = tokens(text)
    stems = {stem(w, language) for w in words if w.isalpha() for language in Language}
    return set(words), stems


def _marks(text: str) -> Iterable[str]:
    """What a text fixes, folded: numbers, identifiers, code spans, quoted strings, names."""
    for token in tokens(text):
        coded = any(c.isdigit() for c in token) or any(c in token for c in "._/-")
        if coded and len(token) >= 2 and token not in STOPWORDS:
            yield token
    for pattern in (_QUOTED, _CAMEL, _CAPITALISED):
        for match in pattern.finditer(text):
            for token in tokens(match.group(1) if pattern is _QUOTED else match.group()):
                if token not in STOPWORDS and len(token) >= 3:
                    yield token


def _patch_text(patch: str) -> str:
    """A patch's paths and added lines: what it puts in the files."""
    paths = _PATCH_PATH.findall(patch)
    added = [line[1:] for line in patch.splitlines() if line.startswith("+") and not line.startswith("+++")]
    return "\n".join([*paths, *added])


def _dump(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
