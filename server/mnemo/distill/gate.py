"""What may become a memory at all: rules, no model call, applied to each draft before the judge.

Most real sessions are chores, and a small model files their chores as memories. A draft is
dropped (it stays in the episodes, and the judge log says why) when:

- its *what* is not a memory by its form (:func:`mnemo.distill.forms.junk_form`): a question, a
  request, something about the session itself, a host's wrapper text; a command to do something
  now, a work log or a transient state unless the what is worded as a rule ("Run the linter
  before every push");
- its only sources are tool output (:func:`mnemo.distill.policy.is_tool_only`): what the agent
  read lives where it read it, and a person would reject nearly all of it;
- it is not grounded in the episodes it cites (:func:`ungrounded`): a name, path, number or
  version it states that none of them holds ("I must call the StructuredOutput tool"), or, in
  English sources, too few of its words (:func:`unsaid`);
- the person's lines it cites only ask (:func:`asks`), or it copies the person's request or
  question ("Create a GitHub repo on my account");
- it is a *decision* no line of the person's chooses or sets a rule (:func:`chosen_by`);
- it is a *state* or *event* no line of the person's words, or an event the agent did
  (:func:`agents_doing`): a work log of the session.

A draft that rests on the agent's words alone (no person's line, no tool run among its sources)
is kept but waits for a person, as does a decision only the durable-line classifier reads as
chosen.

Before screening, a draft's sources gain the person's line that states what it states when the
model cited only the agent's (:func:`anchored`), and drafts that repeat one another are folded
(:mod:`mnemo.distill.repeats`). `mnemo audit` (:mod:`mnemo.health`) applies the form rules to what a store
already holds.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from mnemo.distill.durable import Durability
from mnemo.distill.extract import SYSTEM, Draft
from mnemo.distill.forms import FORM_WORDS, UNSPACED, WORDED_AS_RULE, junk_form
from mnemo.distill.guard import overlap, words
from mnemo.distill.policy import is_tool_only
from mnemo.distill.readings import facts
from mnemo.distill.refusal import refuses
from mnemo.distill.said import about_this_session, is_question, rule_words_anywhere
from mnemo.episodes import Episode, Role
from mnemo.injected import strip_injected
from mnemo.store.distill import JudgeLogRow
from mnemo.vocabulary import MemoryType


@dataclass(frozen=True, slots=True)
class Screening:
    """Why a draft is not a memory ('' when it is one); and why a memory it makes waits for a
    person rather than going active ('' when nothing in the rules says so)."""

    reason: str = ""
    waits: str = ""

    @property
    def keeps(self) -> bool:
        return not self.reason


_NAMED = re.compile(
    r"`([^`]{2,80})`|\"([^\"]{2,80})\"|(?<![\w/.~-])((?:~?/)?(?:[\w.-]+/)+[\w.-]+|[\w-]+\.[a-z]{1,6})(?![\w/])"
)


def named(text: str) -> set[str]:
    """What ``text`` names that a source must hold word for word: quoted or code spans, paths and
    file names, values (quantities, versions, identifiers)."""
    found = {m for groups in _NAMED.findall(text) for m in groups if m}
    values = facts(text)
    found |= {v.split(":", 1)[-1] for kind in ("version", "identifier") for v in values[kind]}
    names = {f.strip().lower() for f in found if len(f.strip()) >= 3}
    return {n for n in names if not any(n != other and n in other for other in names)}  # the longest form


def ungrounded(what: str, sources: Sequence[str]) -> list[str]:
    """What ``what`` names that none of ``sources`` holds (its file names by their base name too)."""
    said = " ".join(sources).lower()
    missing = []
    for name in sorted(named(what)):
        base = name.rstrip("/").rsplit("/", 1)[-1]
        if name not in said and base not in said:
            missing.append(name)
    return missing


# English words of grammar: a text with this share of them is English (the model writes its
# memories in English, so only there must their words be the sources' words).
_ENGLISH = frozenset(
    "the and to of is in it that for on with this be are as was we you i my our have has do does "
    "at by from or an if can will would should not but so".split()
)
WORDS_SAID = 1 / 3  # an English what with fewer of its words in English sources is not theirs


def unsaid(what: str, sources: Sequence[str]) -> bool:
    """Whether ``what`` says in words its sources never use, when they are in English: under
    :data:`WORDS_SAID` of its words (by their first five letters) in them — "The project has a
    comprehensive summary of the current development setup" from "help me to plan and setup a
    development framework …". A source in another language is left alone (the memory is its
    translation)."""
    said = " ".join(sources)
    if not in_english(said):
        return False
    own = words(_spaced(what))
    return len(own) >= 3 and len(own & words(_spaced(said))) < WORDS_SAID * len(own)


def in_english(text: str) -> bool:
    """Whether ``text`` is English by its words of grammar (three words at least)."""
    tokens = _letters(text)
    return len(tokens) >= 3 and sum(t in _ENGLISH for t in tokens) >= 0.12 * len(tokens)


def _letters(text: str) -> list[str]:
    """``text``'s words of letters, lower-cased (no digits, no underscores)."""
    return re.findall(r"[^\W\d_]+", text.lower())


def _another_language(what: str, line: str) -> bool:
    """Whether ``line`` is written in another language than ``what``: one is in a script without
    spaces and the other not, or ``what`` is not and ``line`` is three words or more not in English."""
    unspaced = bool(_UNSPACED_ANY.search(what))
    if unspaced != bool(_UNSPACED_ANY.search(line)):
        return True
    return not unspaced and len(_letters(line)) >= 3 and not in_english(line)


# An event whose subject is the agent: what it did or found in the session ("Claude finds a Lua
# script in the dotfiles directory").
_AGENT_DOES = re.compile(
    r"(?:the )?(?:coding |ai )?(?:assistant|agent|model|codex|claude(?: code)?|gemini|copilot) "
    r"[a-z]+(?:s|ed)\b",
    re.IGNORECASE,
)
WORDED = 1 / 2  # a state or event with this share of its words in a person's lines is theirs


AGENTS_DOING = "a state or event no line of the person's words: what the agent did or saw here"


def agents_doing(what: str, kind: MemoryType, said: Sequence[str]) -> bool:
    """Whether a state or event is what the agent did or saw in the session — a work log: no line of
    the person's (``said``) words it or chooses what it follows from, or its subject is the agent.
    On the judged real sessions these were "Subagents installed globally", "Linear is launched via
    `npx …`", "Claude finds a Lua script …"; what a person tells ("staging is read-only until
    Friday") is theirs."""
    if kind not in (MemoryType.STATE, MemoryType.EVENT):
        return False
    if kind is MemoryType.EVENT and _AGENT_DOES.match(what):
        return True
    # A line that chooses or sets a rule about it backs what follows from the choice: "Deploys move
    # to Thursday" backs "The release checklist now says Thursday".
    return not worded_by_person(what, said) and chosen_by(said, [False] * len(said), what) != "words"


def worded_by_person(what: str, said: Sequence[str]) -> bool:
    """Whether a person's lines word ``what``: :data:`WORDED` of its words are in them (in a
    script without spaces, of its pairs of characters) or a name or value it states ("qa-eu1 goes to
    1.30 this week" words "qa-eu1 control plane version is now 1.30.2"), they assent to or refuse what was
    proposed, or they are in another language than ``what`` (it may be their translation)."""
    if not said:
        return False
    if any(answers_a_proposal(t) for t in said):
        return True
    line = " ".join(said)
    if _another_language(what, line):
        return True
    own = words(_spaced(what))
    if (own and len(own & words(_spaced(line))) >= WORDED * len(own)) or named(what) & named(line):
        return True
    pairs = set(_UNSPACED_PAIR.findall(what))
    return bool(pairs) and len(pairs & set(_UNSPACED_PAIR.findall(line))) >= WORDED * len(pairs)


# The example memories the extraction prompt shows the model, which a small model sometimes
# hands back as if the conversation had said them.
_EXAMPLES = tuple(re.findall(r'"([A-Z][^"]{15,})"', SYSTEM))


def copies_an_example(what: str, sources: Sequence[str]) -> bool:
    """Whether ``what`` is one of the prompt's examples and no source says even half of it ("write
    the answers in German" does say "Answers are written in German")."""
    return any(
        overlap(what, example) >= COPY_OVERLAP and all(overlap(example, s) < 0.5 for s in sources)
        for example in _EXAMPLES
    )


def chosen_by(person_lines: Sequence[str], durable: Sequence[bool], what: str = "") -> str:
    """What says a person's line chooses ``what``: ``words`` (worded as a rule in any language, a
    language asked for, accepting a proposal, or refusing one: "no, keep Postgres"), else
    ``classifier`` (only the durable-line classifier reads one so), else ''. A line about this
    session's own last steps ("do the resize again but add 20% instead") chooses nothing; a line
    that sets a rule chooses only what it is about — a word, a name or (in scripts written without
    spaces) two characters in common with ``what`` — while an assent ("yes", "B") accepts whatever
    was proposed."""
    lines = [(t, d) for t, d in zip(person_lines, durable, strict=True) if not about_this_session(t)]
    if any(answers_a_proposal(t) for t, _ in lines):
        return "words"
    lines = [(t, d) for t, d in lines if not what or about_same(what, t)]
    if any(rule_words_anywhere(t) for t, _ in lines):
        return "words"
    return "classifier" if any(d for _, d in lines) else ""


def answers_a_proposal(line: str) -> bool:
    """Whether a person's line accepts ("yes", "B") or refuses ("no, keep Postgres") what was
    proposed: its words are the proposal's."""
    return _ACCEPTS.search(line.strip()) is not None or refuses(line)


_UNSPACED_PAIR = re.compile(f"(?=([{UNSPACED}]{{2}}))")
_UNSPACED_RUN = re.compile(f"([{UNSPACED}]+)")
_UNSPACED_ANY = re.compile(f"[{UNSPACED}]")


def about_same(what: str, line: str) -> bool:
    """Whether a person's line is about what ``what`` states: a word (also one written inside a
    script without spaces: "…的skills增加custom前缀"), a name, or two characters of such a script
    in common."""
    if words(_spaced(what)) & words(_spaced(line)) or named(what) & named(line):
        return True
    return bool(set(_UNSPACED_PAIR.findall(what)) & set(_UNSPACED_PAIR.findall(line)))


def screen(
    what: str,
    kind: MemoryType,
    cited: Sequence[Episode],
    durability: Durability | None = None,
) -> Screening:
    """Whether a draft may become a memory, from its text and the episodes it cites."""
    form = junk_form(what)
    if form:
        return Screening(f"reads as {FORM_WORDS[form]}")
    if is_tool_only(e.role for e in cited):
        return Screening("rests on tool output alone")
    sources = [strip_injected(e.text) for e in cited]
    missing = ungrounded(what, sources)
    if missing:
        return Screening(f"names what none of its sources holds: {', '.join(missing[:3])}")
    if copies_an_example(what, sources):
        return Screening("copies an example of the extraction prompt, not the conversation")
    said = [text for e, text in zip(cited, sources, strict=True) if e.role == Role.USER]
    # A person's "yes" or "no, keep Postgres" takes its words from the proposal it answers.
    if not any(answers_a_proposal(t) for t in said) and unsaid(what, sources):
        return Screening("its words are not in its sources: a summary no one gave")
    if said and all(asks(t) for t in said):
        return Screening("answers what the person asked: the person stated nothing")
    copied = [
        (c, t) for t in said for c in _SENTENCES.split(t) if c.strip() and overlap(what, c) >= COPY_OVERLAP
    ]
    if copied and all(junk_form(c.strip()) in ("command", "request") or asks(t) for c, t in copied):
        return Screening("restates what the person asked for, not anything that lasts")
    if {e.role for e in cited} == {Role.ASSISTANT}:
        # The agent's own account — no person's line, no tool run behind it: on the real sessions
        # the judges read, these were approvals no one gave, checks never run, plans retold.
        return Screening(waits="it rests on the agent's words alone, no person's line or tool run")
    if agents_doing(what, kind, said):
        return Screening(AGENTS_DOING)
    if kind is not MemoryType.DECISION or not said:
        return Screening()
    # Only a decision whose lines no word decides asks the classifier (an embedding of each line):
    # the writer's hot path.
    by = chosen_by(said, [False] * len(said), what)
    if not by and durability is not None:
        by = chosen_by(said, durability.durable(said, "person"), what)
    if not by:
        return Screening("a decision no line of the person's chooses: only requests to do something now")
    if by == "classifier":
        # On real person's lines the classifier is right about a third of the time (AUC 0.73 on the
        # fit sessions): what rests on its reading alone is for a person to confirm.
        return Screening(waits="a decision only the durable-line classifier reads in the person's lines")
    return Screening()


COPY_OVERLAP = 0.8  # a what with this share of a person's sentence's words copies it
_SENTENCES = re.compile(r"[.!?;\n。！？]+\s*")


def asks(text: str) -> bool:
    """Whether a person's line asks: a sentence of it is a question (in any language), and none
    states a rule."""
    line = " ".join(text.split())
    if not line or WORDED_AS_RULE.search(line):
        return False
    if is_question(line) or re.search(r"[?？]", line):
        return True
    return _ASKS.match(line) is not None


_ASKS = re.compile(
    r"^(?:how|what|why|where|can|could|should|would|is|are|do|does|did|"
    r"cómo|qué|por qué|cuál|dónde|puedo|puedes|debería|"
    r"comment|pourquoi|quel|quelle|est-ce que|peux-tu|wie|was|warum|welche|kann|qual|onde)\b"
    r"|.*(?:吗|呢|か|の|니까|나요|까요)\s*$",
    re.IGNORECASE,
)


def _spaced(text: str) -> str:
    """``text`` with its runs of a script written without spaces set apart from the words around."""
    return _UNSPACED_RUN.sub(r" \1 ", text)


# A word of assent opening the line; in the scripts written without spaces it must stand on its
# own ("可以帮我…" asks, "네트워크" is a word, "好像" means "seems").
_ACCEPTS = re.compile(
    r"^(?:(?:yes|yeah|yep|ok(?:ay)?|sure|sounds good|agreed|go (?:with|for)|let'?s (?:go|do|use)|"
    r"option [a-e1-9]|oui|d'accord|sí|si|vale|ja|genau|да|давай|хорошо|согласна?|ладно)(?!\w)"
    r"|[a-e1-9][.)]?$|(?:はい|いいです|네|좋아요?|好的?|可以|行|同意|就这样)(?=[\s,.!，。！、]|$))",
    re.IGNORECASE,
)


def anchored(draft: Draft, conversation: Sequence[Episode]) -> Draft:
    """``draft`` with the person's line that states what it states added to its sources, when no
    person's line it cites does (a value of the draft's, or half its words): a small model cites
    the tool run that shows a change ("mv … billing-nightly") rather than the person's line that
    asked for it, or the person's "thanks" after the line that set the rule. A draft citing only
    tool runs is anchored to the line that led to them; another, to the line of the stretch that
    states the most of it."""
    what = draft.memory.what
    cited = set(draft.memory.sources)
    if not cited:
        return draft
    said = [e for e in conversation if e.id in cited]
    if not said or any(e.role == Role.USER and _states_same(what, e.text) for e in said):
        return draft
    if all(e.role == Role.TOOL for e in said):
        first = min(i for i, e in enumerate(conversation) if e.id in cited)
        led = next((e for e in reversed(conversation[:first]) if e.role == Role.USER), None)
        candidates = [] if led is None else [led]
    else:
        candidates = [e for e in conversation if e.role == Role.USER and e.id not in cited]
    found = [e for e in candidates if _states_same(what, e.text)]
    if not found:
        return draft
    best = max(found, key=lambda e: overlap(what, strip_injected(e.text)))
    sources = [best.id, *draft.memory.sources][:64]
    return replace(draft, memory=draft.memory.model_copy(update={"sources": sources}), human_backed=True)


def _states_same(what: str, text: str) -> bool:
    line = strip_injected(text)
    return bool(named(what) & named(line)) or overlap(what, line) >= 0.5


def dropped_row(
    batch: str,
    seq: int,
    session: str,
    namespace: str,
    memory_id: str,
    draft: Draft,
    reason: str,
    at: datetime,
) -> JudgeLogRow:
    """The judge log's row for a draft that is no memory: the draft as proposed, and why."""
    detail = json.dumps({"memory": draft.memory.model_dump()}, ensure_ascii=False)
    return JudgeLogRow(batch, seq, at, session, namespace, memory_id, "dropped", "", [], reason, detail)
