"""What may become a memory at all: rules, no model call, applied to each draft before the judge
and by `mnemo audit` to what a store already holds.

Most real sessions are chores, and a small model files their chores as memories. A draft is
dropped (it stays in the episodes) when:

- its *what* is not a memory by its form (:func:`junk_form`): a question; a request ("The user
  wants to …", "To perform a search …"); something about the session itself ("The user opened
  the file …", "In this session …"); a host's wrapper text; a command to do something now
  ("Create a GitHub repository", "Push the changes") or a work log ("Added the remote",
  "Tests pass now") or a transient state ("The project is in the design phase") — these three
  unless the draft also states what makes them last (a rule's "always", "before", "instead of", a
  value, a version; :func:`mnemo.distill.said.states_lasting`);
- it is not grounded in the episodes it cites (:func:`ungrounded`): a name, path, number or
  version it states that none of them holds ("I must call the StructuredOutput tool");
- its only sources are tool output (:func:`mnemo.distill.policy.is_tool_only`): what the agent
  read lives where it read it, and a person would reject nearly all of it.

A *decision* must rest on a person's line that chooses or sets a rule; one that rests only on
commands to do something now is dropped (:func:`chooses`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from mnemo.distill.durable import Durability
from mnemo.distill.extract import Draft
from mnemo.distill.guard import compare, overlap, words
from mnemo.distill.policy import is_tool_only
from mnemo.distill.readings import facts
from mnemo.distill.said import RULE_WORDS, is_question
from mnemo.episodes import Episode, Role
from mnemo.injected import strip_injected
from mnemo.store.distill import JudgeLogRow
from mnemo.vocabulary import MemoryType

# Verbs whose base form opens a command to do something now, and whose past opens a work log.
_ACTIONS = (
    "add|create|make|push|pull|commit|merge|fix|update|upgrade|install|uninstall|remove|delete|run|"
    "build|write|rewrite|implement|refactor|set up|setup|configure|enable|disable|open|close|check|"
    "verify|review|generate|convert|clean|format|lint|bump|start|stop|restart|launch|initiali[sz]e|"
    "clone|download|upload|publish|revert|reset|edit|modify|improve|optimi[sz]e|document|explain|"
    "show|list|find|search|read|look|help|try|integrate|connect|send|call|perform|execute|draft|"
    "prepare|translate|summari[sz]e|analy[sz]e|investigate|debug|resolve|handle|adjust|apply|attach|"
    "copy|import|export|load|save|sync|split|combine|port|complete|finish|test|correct|restructure|"
    "tweak|polish|scaffold|bootstrap|insert|append|include|provide|answer|describe|give|tell|query|"
    "select|choose|pick|fetch|get|print|display|rename|move|change|switch|migrate|deploy|replace|"
    "transform|extract|parse|compare|evaluate|assess|estimate|plan|design|propose|suggest|"
    "recommend|identify|determine|figure out|work out|address|tackle|go through|walk through|stage|"
    "finalize|finalise|continue|resume|proceed|retry|rerun|reinstall|rebuild|redeploy|reorganize|"
    "organize|cleanup|uncomment|comment out|wrap|unwrap|mark|tick|validate|confirm|"
    "inspect|examine|explore|audit|benchmark|measure|profile|reproduce|simulate|localize|localise|"
    "rework|redo|adapt"
)
_PAST = (
    "added|created|made|pushed|pulled|committed|merged|fixed|updated|upgraded|installed|uninstalled|"
    "removed|deleted|ran|built|wrote|rewrote|implemented|refactored|set up|configured|enabled|"
    "disabled|opened|closed|checked|verified|reviewed|generated|converted|cleaned|formatted|linted|"
    "bumped|started|stopped|restarted|launched|initiali[sz]ed|cloned|downloaded|uploaded|published|"
    "reverted|edited|modified|improved|optimi[sz]ed|documented|explained|integrated|connected|sent|"
    "called|performed|executed|drafted|prepared|translated|summari[sz]ed|analy[sz]ed|investigated|"
    "debugged|resolved|handled|adjusted|applied|attached|copied|imported|exported|loaded|saved|"
    "synced|completed|finished|tested|corrected|restructured|tweaked|polished|scaffolded|inserted|"
    "appended|provided|answered|described|gave|told|made|done|commented out|successfully"
)
_WHO = r"(?:the )?(?:user|person|developer|assistant|agent|ai|model|team|i|we|codex|claude|gemini|copilot)"
_FORMS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "wrapper text",
        re.compile(
            r"user (?:selected|opened) (?:the )?(?:lines?|file)|"
            r"may or may not be related to the current task|structuredoutput|"
            r"<ide_|<bash-|<command-|<system-reminder|environment_context|"
            r"my request for codex|you \*\*must\*\* consider the user input",
            re.IGNORECASE,
        ),
    ),
    (
        "session event",
        re.compile(
            rf"^(?:{_WHO} (?:has |have |had )?(?:opened|selected|ran|executed|pasted|shared|uploaded|sent|"
            r"typed|clicked|started|ended|switched to|is working on|was working on|is currently|is trying|"
            r"was trying|attempted|encountered|received|got|saw|noticed|mentioned|said|says|stated|"
            r"confirmed|acknowledged|greeted|thanked|notes|noted|reports|reported|shows|showed)\b"
            r"|i(?:'m|'ll|'ve|'d)?\s"  # the agent in its own voice: "I do not have access to…"
            rf"|{_WHO} (?:decided|chose|wanted|tried|started|began|proceeded|went on|needs?|needed) to "
            r"(?:investigate|look|check|debug|try|review|fix|test|run|find|search|read|explore|understand|"
            r"examine|inspect|analy[sz]e|verify|figure|see|know|learn)\b"
            # A request told as a decision ("The person decided to comment out the blocks"); not a
            # change of what is used ("… decided to migrate to Postgres").
            r"|(?:the )?(?:user|person|team|developer|we) (?:decided|chose|agreed|opted) to "
            r"(?!switch|move|migrate|rename|replace|adopt|drop|stop|standardi|keep|use|stick|go with)"
            rf"(?:{_ACTIONS})\b"
            rf"|{_WHO} (?:does not|doesn't|did not|didn't|do not|don't) (?:need|want) to\b"
            r"|.*\b(?:is|are|was|were) (?:loaded|read|opened|shown|displayed|printed) (?:and|by|in|from)\b"
            r"|(?:in|during) (?:this|the) (?:session|conversation|chat)\b"
            r"|the (?:conversation|session|chat)\b)",
            re.IGNORECASE,
        ),
    ),
    (
        "request",
        re.compile(
            rf"^(?:{_WHO} (?:wants?|would like|asked|asks|is asking|requested|requests|needs|needed|"
            r"wanted|intends|plans|is planning|was asked|instructed|told)\b"
            r"|to [a-z]+\b(?! (?:be|have)\b))",
            re.IGNORECASE,
        ),
    ),
    ("question", re.compile(rf"^(?:whether\b|{_WHO} (?:wonders|asked whether|asked if|asked how))", re.I)),
    ("command", re.compile(rf"^(?:please )?(?:{_ACTIONS})\b", re.IGNORECASE)),
    (
        "work log",
        re.compile(
            rf"^(?:{_WHO} )?(?:{_PAST})\b"
            r"|\b(?:tests?|build|ci) (?:now )?(?:pass|passes|passed|is green|are green|succeed)",
            re.I,
        ),
    ),
    (
        "passive log",  # "A commit was made …", "The issue was resolved by …"
        re.compile(
            r"^(?:(?:an?|the|this|that)\s+)?(?:\S+\s+){0,5}"
            rf"(?:was|were|has been|have been|got|is now|are now)\s+(?:{_PAST})\b"
            r"|\b(?:tests?|build|ci|bug|issue|error|problem)s? (?:is|are) (?:now )?"
            r"(?:fixed|resolved|green|passing)\b"
            r"|^(?:(?:an?|the|this|that)\s+)?(?:\S+\s+){0,4}(?:is|are) (?:now )?(?:updated|created|added|"
            r"generated|written|implemented|completed|finished|done|committed|pushed|merged|deleted) "
            r"(?:to|with|in|and|by|successfully)\b"
            r"|^(?:an?|the)\s+(?:[\w-]+\s+)?(?:failure|error|issue|problem|bug|exception|crash|warning)s?\s+"
            r"(?:occurred|occurs|happened|appeared|was raised|was thrown|showed up)\b"
            r"|\b(?:fails|failed|crashes|crashed|errors out|errored out) (?:with|because|due to|when|on)\b",
            re.I,
        ),
    ),
    (
        "transient state",
        re.compile(
            r"\b(?:currently|at the moment|right now|in progress|work in progress|is being|are being|"
            r"(?:is|are) (?:still )?in (?:the )?"
            r"(?:design|initial|early|planning|development|testing|prototype|setup|beginning)\s+(?:phase|stage)|"
            r"has not (?:yet )?been|not yet (?:done|implemented|finished)|"
            r"is pending|are pending|for now|should now|"
            r"still (?:not|isn't|aren't|doesn't|don't|fails?|broken)|"
            r"(?:isn't|aren't|doesn't|don't|is not|are not) (?:\w+ )?(?:right|working|fixed) "
            r"(?:yet|still))\b",
            re.IGNORECASE,
        ),
    ),
)
_LASTS_ANYWAY = frozenset({"command", "work log", "passive log", "transient state"})
# What makes a command a standing rule ("Run the linter before every push", "Always use pnpm"):
# words in the what itself (a model's why and how are its own words, and say "should" freely).
_RULE = re.compile(
    r"\b(?:always|never|from now on|every time|each time|whenever|before (?:every|each|any|pushing|merging|"
    r"committing|deploying|releasing)|by default|instead of|rather than|"
    r"for (?:all|every|each)|only (?:use|run|deploy|push|merge|with)|must|do not|don't|no longer|"
    r"every \w+|each \w+|daily|nightly|weekly|hourly|monthly)\b",
    re.IGNORECASE,
)
FORM_WORDS = {
    "question": "a question",
    "request": "a request",
    "command": "a command to do something now",
    "work log": "a work log",
    "passive log": "a work log",
    "transient state": "a transient state",
    "session event": "something about the session itself",
    "wrapper text": "a host's wrapper text",
}


@dataclass(frozen=True, slots=True)
class Screening:
    """Why a draft is not a memory ('' when it is one)."""

    reason: str = ""

    @property
    def keeps(self) -> bool:
        return not self.reason


def junk_form(what: str, why: str = "", how: str = "") -> str:
    """The kind of non-memory ``what`` reads as ('' when its form is a memory's): a question, a
    request, a session event, wrapper text; a command, a work log or a transient state unless
    what, why or how states what makes it last."""
    text = " ".join(what.split())
    if is_question(text):
        return "question"
    for kind, pattern in _FORMS:
        if pattern.search(text):
            if kind in _LASTS_ANYWAY and _RULE.search(text):
                continue
            if kind in ("command", "request") and _CONSTRAINT.search(text):
                continue  # a requirement: "The user asked for the LMS in pure Go, with only the stdlib"
            if kind in ("command", "work log") and _is_statement(text):
                continue  # "Pull requests are squash-merged", "Added fields are validated": a statement
            return kind
    return ""


# A finite verb after the first word: the clause states something ("Build times are slow",
# "Commit messages use the imperative") rather than orders it ("Create a repository") — unless the
# word after the verb opens its object ("Remove the button and have it …", "Add a message that is …").
_STATES = re.compile(
    r"^\S+\s.*?\b(?:is|are|was|were|been|will|would|can|could|should|must|may|might|"
    r"uses|use|lives|live|stays|stay|requires|require|contains|contain|depends|depend|"
    r"means|mean|points|point|goes|needs|need|sits|sit|belongs|belong|comes|"
    r"runs on|run on|isn't|aren't|wasn't|doesn't|don't|won't|can't)\b",
    re.IGNORECASE,
)
_OBJECT = re.compile(
    r"^\S+\s+(?:the|a|an|all|this|these|that|those|it|them|its|my|our|your|their|some|any|each|every|"
    r"up|out|down|new|more|one|two|to|in|on|for|with|from|and)\b",
    re.IGNORECASE,
)


def _is_statement(text: str) -> bool:
    """Whether a what that opens with a verb states something rather than orders or logs it."""
    return not _OBJECT.match(text) and _STATES.search(_CLAUSE.split(text, 1)[0]) is not None


# What makes a request a standing requirement rather than work to do now.
_CONSTRAINT = re.compile(
    r"\b(?:only|without|never|always|must|instead of|rather than|exclusively|pure|no longer|from now on|"
    r"by default)\b",
    re.IGNORECASE,
)
_CLAUSE = re.compile(r"[,;:(—]|\b(?:so that|because|which|that|when|if|to)\b")


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


def chooses(person_lines: Sequence[str], durable: Sequence[bool]) -> bool:
    """Whether a person's line chooses or sets a rule: durable by the classifier, or worded as a
    rule, or accepts what was proposed (a short yes, an option picked) — not only commands."""
    for text, is_durable in zip(person_lines, durable, strict=True):
        if is_durable or RULE_WORDS.search(text) or _ACCEPTS.search(text.strip()):
            return True
    return False


def screen(
    what: str,
    why: str,
    how: str,
    kind: MemoryType,
    cited: Sequence[Episode],
    durability: Durability | None = None,
) -> Screening:
    """Whether a draft may become a memory, from its text and the episodes it cites."""
    form = junk_form(what, why, how)
    if form:
        return Screening(f"reads as {FORM_WORDS[form]}")
    if is_tool_only(e.role for e in cited):
        return Screening("rests on tool output alone")
    missing = ungrounded(what, [strip_injected(e.text) for e in cited])
    if missing:
        return Screening(f"names what none of its sources holds: {', '.join(missing[:3])}")
    said = [strip_injected(e.text) for e in cited if e.role == Role.USER]
    if said and all(asks(t) for t in said):
        return Screening("answers what the person asked: the person stated nothing")
    copied = [
        (c, t) for t in said for c in _SENTENCES.split(t) if c.strip() and overlap(what, c) >= COPY_OVERLAP
    ]
    if copied and all(junk_form(c.strip()) in ("command", "request") or asks(t) for c, t in copied):
        return Screening("restates what the person asked for, not anything that lasts")
    durable = durability.durable(said, "person") if durability is not None and said else [False] * len(said)
    if kind is MemoryType.DECISION and said and not chooses(said, durable):
        return Screening("a decision no line of the person's chooses: only requests to do something now")
    return Screening()


COPY_OVERLAP = 0.8  # a what with this share of a person's sentence's words copies it
_SENTENCES = re.compile(r"[.!?;\n。！？]+\s*")


def asks(text: str) -> bool:
    """Whether a person's line asks: a sentence of it is a question (in any language), and none
    states a rule."""
    line = " ".join(text.split())
    if not line or _RULE.search(line):
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


_ACCEPTS = re.compile(
    r"^(?:yes|yeah|yep|ok(?:ay)?|sure|sounds good|agreed|go (?:with|for)|let'?s (?:go|do|use)|"
    r"option [a-e1-9]\b|[a-e1-9][.)]?$|oui|d'accord|sí|si|vale|ja|genau|はい|네|好的?|可以)",
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


def fold_repeats(drafts: Sequence[Draft]) -> tuple[list[Draft], dict[int, int]]:
    """``drafts`` with each one that repeats an earlier one (the same words, or most of them and no
    value apart) folded into it: its sources added to the earlier's; and {repeat's index: the
    earlier's}. A batch read in stretches, or looked at twice, proposes the same thing twice."""
    kept = list(drafts)
    repeated: dict[int, int] = {}
    for later, draft in enumerate(drafts):
        for earlier in range(later):
            if earlier in repeated or not _repeats(kept[earlier].memory.what, draft.memory.what):
                continue
            first = kept[earlier]
            sources = list(dict.fromkeys([*first.memory.sources, *draft.memory.sources]))
            kept[earlier] = replace(first, memory=first.memory.model_copy(update={"sources": sources[:64]}))
            repeated[later] = earlier
            break
    return kept, repeated


def _repeats(a: str, b: str) -> bool:
    if _normal(a) == _normal(b):
        return True
    return overlap(a, b) >= REPEAT_OVERLAP and len(words(a) ^ words(b)) <= 2 and not compare(a, b).blocks


REPEAT_OVERLAP = 0.9


def _normal(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


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
