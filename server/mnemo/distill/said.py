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


RULE_WORDS = _LASTING  # the words alone, without a value: what makes a command or a log a rule
# The same kinds of words beyond English and Spanish — French, German, Portuguese, Italian,
# Russian, Japanese, Korean, Chinese — and the words that adopt one of the options proposed
# ("采用方案二", "B로 하자", "それにします"). Kept apart from _LASTING, which the durable-line
# classifier was fitted with as one of its signals.
_LASTING_MORE = re.compile(
    r"\b(?:toujours|jamais|désormais|dorénavant|à partir de maintenant|on utilise|nous utilisons|"
    r"je préfère|règle|par défaut|ne plus|parce que|au lieu de|il faut|"
    r"immer|niemals|ab jetzt|ab sofort|künftig|wir verwenden|wir nutzen|ich bevorzuge|lieber|regel|"
    r"standardmäßig|nicht mehr|weil|stattdessen|statt|müssen|sollen|"
    r"sempre|a partir de agora|daqui em diante|usamos|prefiro|preferimos|regra|por padrão|não mais|"
    r"em vez de|d'ora in poi|usiamo|preferisco|regola|invece di|"
    r"всегда|никогда|впредь|отныне|с этого момента|теперь|по умолчанию|правило|предпочитаю|"
    r"вместо|больше не|нельзя|обязательно|мы используем|используем|решили|выбираю)\b"
    r"|常に|必ず|いつも|今後|これからは|以降は|絶対に|禁止|ルール|方針|にします|に決め|を採用|で行きます|でいきます"
    r"|항상|절대|앞으로|반드시|규칙|금지|으?로 하자|으?로 할게|으?로 하겠|으?로 결정"
    r"|总是|始终|一律|以后|今后|从现在起|必须|不要|禁止|规则|统一|默认|采用|改用|决定用|就用",
    re.IGNORECASE,
)
# A language asked for: how the person wants things written ("schreibe alles auf Deutsch",
# "answer in Spanish", "한글로"), a standing preference in any of the words it is said with.
LANGUAGE_ASKED = re.compile(
    r"\b(?:in|auf|en|em|na) (?:english|englisch|inglés|anglais|inglês|inglese|deutsch|german|alemán|"
    r"allemand|alemão|français|french|francés|francês|español|spanish|espagnol|espanhol|spagnolo|"
    r"português|portuguese|portugués|italiano|italian|japanese|korean|chinese)\b"
    r"|日本語で|英語で|한글로|한국어로|영어로|用中文|用英文",
    re.IGNORECASE,
)
# A person picking one of the options an agent proposed: "B", "A + C", "option 2".
_PICKS = re.compile(r"^\s*(?:option\s*)?[a-e1-9](?:\s*[,+&/]\s*[a-e1-9])*\s*[.)!]?\s*$", re.IGNORECASE)


def states_lasting(text: str, *, bare_numbers: bool = False) -> bool:
    """Words that state something lasting, a version, or a quantity with its unit (or any number,
    with ``bare_numbers``)."""
    found = facts(text)
    quantities = [q for q in found["quantity"] if bare_numbers or not q.startswith("number:")]
    return bool(_LASTING.search(text) or found["version"] or quantities)


def is_question(text: str) -> bool:
    """Whether a line ends by asking (its last sentence is a question), in any language."""
    return strip_injected(text).rstrip().endswith(("?", "？"))


def states_lasting_anywhere(text: str, *, bare_numbers: bool = False) -> bool:
    """:func:`states_lasting`, or the same kinds of words in the other languages people write to
    agents in, or a language asked for."""
    return states_lasting(text, bare_numbers=bare_numbers) or rule_words_anywhere(text)


def rule_words_anywhere(text: str) -> bool:
    """Words that make a line a rule (:data:`RULE_WORDS`), in any of the languages people write to
    agents in, or a language asked for — without a value."""
    return any(p.search(text) for p in (RULE_WORDS, _LASTING_MORE, LANGUAGE_ASKED))


# Words that tie a line to this session's own last steps ("do the resize again", "the quality you
# were using", "this time at 90%"): work on what was just done, not a rule for later sessions —
# unless it says it stands ("never do that again").
_THIS_SESSION = re.compile(
    r"\b(?:again|this time|one more time|once more|as before|like before|same as before|"
    r"you (?:were|are|have been) using|you used|you just|you did|you made|you wrote|you tried|"
    r"the previous (?:one|step|run|version|attempt)|the last (?:one|step|run|attempt)|"
    r"otra vez|de nuevo|esta vez|como antes|encore une fois|à nouveau|cette fois|comme avant|"
    r"nochmal|noch einmal|diesmal|wie vorher|de novo|novamente|desta vez)\b",
    re.IGNORECASE,
)
_STANDS = re.compile(
    r"\b(?:always|never|from now on|every time|each time|whenever|by default|going forward|"
    r"siempre|nunca|a partir de ahora|toujours|jamais|désormais|immer|niemals|ab jetzt|sempre|nunca mais)\b",
    re.IGNORECASE,
)


def rule_words_beyond_english(text: str) -> bool:
    """Words of a rule in the languages beyond English and Spanish (:data:`_LASTING_MORE`):
    "以后", "今後", "앞으로", "всегда", "désormais" …"""
    return _LASTING_MORE.search(text) is not None


def about_this_session(text: str) -> bool:
    """Whether a line is about this session's own last steps ("again", "this time", "the setting
    you were using") and does not say it stands from now on."""
    return _THIS_SESSION.search(text) is not None and _STANDS.search(text) is None


def picks_option(text: str) -> bool:
    """Whether a line only picks one or more of the options proposed ("B", "A + C", "option 2")."""
    return _PICKS.match(text) is not None
