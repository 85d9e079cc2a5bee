"""What a draft's *what* reads as by its form alone, for no model call: a question, a request, a
session event, a step of this session's work, a host's wrapper text, a command to do something
now, a work log, a transient state, a code detail, a name or a fragment — or a memory's form
('').

The word lists were written from the fit part of the real sessions (tests/data/real_sessions),
scored once on each of its blind parts and then widened from their verdicts (docs/benchmarks/writer.md,
"The writer on real sessions", says which figure is which). :mod:`mnemo.distill.gate`
drops drafts by them, and `mnemo audit` (:mod:`mnemo.health`) flags what a store holds by them.
"""

from __future__ import annotations

import re

from mnemo.distill.said import LANGUAGE_ASKED, about_this_session, is_question, rule_words_beyond_english

# Verbs whose base form opens a command to do something now, and whose past opens a work log.
_ACTIONS = (
    "add|create|make|push|pull|commit|merge|fix|update|upgrade|install|uninstall|remove|delete|run|"
    "build|write|rewrite|implement|refactor|set up|setup|configure|enable|disable|open|close|check|"
    "verify|review|generate|convert|clean|format|lint|bump|start|stop|restart|launch|initiali[sz]e|"
    "clone|download|upload|publish|revert|reset|edit|modify|improve|optimi[sz]e|document|explain|"
    "show|list|find|search|read|look|help|try|go to|navigate to|visit|click|sign in|log in|"
    "integrate|connect|send|call|perform|execute|draft|"
    "prepare|translate|summari[sz]e|analy[sz]e|investigate|debug|resolve|handle|adjust|apply|attach|"
    "copy|import|export|load|save|sync|split|combine|port|complete|finish|test|correct|restructure|"
    "tweak|polish|scaffold|bootstrap|insert|append|include|provide|answer|describe|give|tell|query|"
    "select|choose|pick|fetch|get|print|display|rename|move|change|switch|migrate|deploy|replace|"
    "transform|extract|parse|compare|evaluate|assess|estimate|plan|design|propose|suggest|"
    "recommend|identify|determine|figure out|work out|address|tackle|go through|walk through|stage|"
    "finalize|finalise|continue|resume|proceed|retry|rerun|reinstall|rebuild|redeploy|reorganize|"
    "organize|cleanup|uncomment|comment out|wrap|unwrap|mark|tick|validate|confirm|"
    "inspect|examine|explore|audit|benchmark|measure|profile|reproduce|simulate|localize|localise|"
    "rework|redo|adapt|do|resize|crop|scale|compress|rotate|encode|decode|render|sort|filter|"
    "checkout|check out|ship"
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
    "appended|provided|answered|described|gave|told|made|done|commented out|successfully|"
    "shipped|approved|accepted|rejected|declined|verified|found|located|discovered"
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
            r"was trying|attempted|encounters|encountered|received|got|saw|noticed|mentioned|said|says|"
            r"stated|"
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
            # What the agent chose or proposed is no choice of the person's.
            r"|(?:the )?(?:code |coding |ai )?(?:assistant|agent|model|codex|claude|gemini|copilot) "
            r"(?:decided|chose|opted|proposed|suggested|recommended|planned)\b"
            # "The agent file from … is loaded and read"; not a fact ("Settings are read from ~/.config").
            r"|.*\b(?:is|are|was|were) (?:loaded|read|opened|shown|displayed|printed) "
            rf"(?:and (?:read|shown)|by {_WHO}\b)"
            r"|(?:in|during) (?:this|the) (?:session|conversation|chat)\b"
            # The conversation itself ("The session covered …"), not a thing so named ("The session cookie").
            r"|the (?:conversation|session|chat) (?:is|was|has|had|started|ended|began|covers|covered|"
            r"focuse[sd]|involve[sd]|shows|showed|includes|included)\b)",
            re.IGNORECASE,
        ),
    ),
    (
        "request",
        re.compile(
            rf"^(?:{_WHO} (?:wants?|would like|asked|asks|is asking|requested|requests|needs|needed|"
            r"wanted|intends|plans|is planning|was asked|instructed|told)\b"
            r"|to [a-z]+\b(?! (?:be|have)\b))",  # "To perform a search …" (and "To deploy, run …" too)
            re.IGNORECASE,
        ),
    ),
    # What a function or module does, which its code says: "The pipeline parses `ANSWER:`",
    # "FS.read_md returns a string".
    (
        "code detail",
        re.compile(
            r"^(?:the |a |an )?(?:[\w`()./:-]+ ){1,3}"
            r"(?:parses|exposes|returns|exports|imports|defines|emits|invokes|wraps)\b",
            re.IGNORECASE,
        ),
    ),
    ("question", re.compile(rf"^(?:whether\b|{_WHO} (?:wonders|asked whether|asked if|asked how))", re.I)),
    ("command", re.compile(rf"^(?:please )?(?:{_ACTIONS})\b", re.IGNORECASE)),
    # The same beyond English: a line that asks for work ("帮我…", "…してください", "…해줘",
    # "пожалуйста", "Сделай …") or opens with the verb of a chore ("删除分支 …", "配置…字体").
    (
        "command",
        re.compile(
            # (verbs that are nouns too — 配置 configuration, 部署 deployment — only with 一下)
            r"^(?:请|帮我|帮忙|麻烦|给我|你帮我|删除|创建|新建|添加|提交|推送|运行|执行|查看|看看|看一下|修复|"
            r"安装|卸载|生成|实现|重构|打开|关闭|写一个|写个|改成|改为)"
            r"|^(?:配置|修改|更新|检查|部署|合并|切换|增加)一?下"
            r"|(?:してください|して下さい|してほしい(?:です)?|してくれ|お願いします|お願い|しといて)[。!！]?$"
            r"|(?:해줘|해 줘|해주세요|해 주세요|해줄래|주세요|줘)[.!?]?$"
            r"|^(?:пожалуйста|сделай|создай|удали|добавь|исправь|проверь|запусти|обнови|установи|"
            r"напиши|покажи|найди|открой|помоги|переделай|настрой|измени|перенеси|почини)\b"
            r"|^(?:peux-tu|pouvez-vous|fais|ajoute|supprime|corrige|crée|mets|lance|vérifie)\b"
            r"|^(?:bitte|mach|erstelle|lösche|füge|korrigiere|ändere|prüfe|starte|schreibe)\b",
            re.IGNORECASE,
        ),
    ),
    (
        "work log",
        re.compile(
            rf"^(?:{_WHO} )?(?:(?:has|have|had) )?(?:{_PAST})\b"
            r"|\b(?:tests?|build|ci) (?:now )?(?:pass|passes|passed|is green|are green|succeed)",
            re.I,
        ),
    ),
    (
        "work log",  # the same beyond English: "Removido el import …", "Миграция … была выполнена", "已完成…"
        re.compile(
            r"^(?:hecho|listo|fait|erledigt|feito|pronto)\b"
            r"|^(?:removid|eliminad|añadid|agregad|cread|actualizad|arreglad|corregid|formatead|subid|"
            r"instalad|configurad|cambiad|movid|renombrad|borrad|adicionad|atualizad)[oa]s?\b"
            r"|^(?:ajouté|supprimé|corrigé|créé|mis à jour|modifié|installé)e?s?\b"
            r"|^(?:hinzugefügt|entfernt|behoben|aktualisiert|erstellt|gelöscht|geändert|installiert)\b"
            r"|\b(?:был[аио]?|были) (?:выполнен|создан|добавлен|исправлен|обновл[её]н|удал[её]н|сделан|"
            r"запущен|установлен|настроен)\w*"
            # (not "…にしました": chose)
            r"|(?:(?<!に)しました|完了です|済みです|終わりました|できました)[。.!！]?$"
            r"|^(?:已经?|已)(?:完成|修复|添加|创建|删除|更新|提交|推送|安装|配置|实现)|(?:完成了|搞定了|修好了)[。.!！]?$"
            r"|(?:(?<!기로 )했습니다|완료되었습니다)[.!]?$",  # not "…하기로 했습니다": decided to
            re.IGNORECASE,
        ),
    ),
    (
        "passive log",  # "A commit was made …", "The issue was resolved by …"
        re.compile(
            r"^(?:(?:an?|the|this|that)\s+)?(?:\S+\s+){0,5}"
            rf"(?:was|were|has been|have been|got|is now|are now)\s+(?:{_PAST})\b"
            r"|\b(?:tests?|build|ci|bug|issue|error|problem)s? (?:is|are) (?:now )?"
            r"(?:fixed|resolved|green|passing)\b"
            r"|\b(?:is|are|was|were) (?:now )?(?:running|working|deployed|started|installed) successfully\b"
            # "AGENTS.md is updated to focus on …"; not a habit ("Logs are written to /var/log").
            r"|^(?:(?:an?|the|this|that)\s+)?(?:\S+\s+){0,5}(?:is|are) (?:now )?(?:fully |successfully )?"
            r"(?:updated|created|implemented|completed|finished|done|committed|pushed|merged|deleted) "
            r"(?:to|with|in|and|by|successfully)\b"
            r"|^(?:(?:an?|the|this|that)\s+)?(?:\S+\s+){0,5}(?:is|are) now (?:fully |successfully )?"
            r"(?:added|generated|written) (?:to|with|in|and|by|successfully)\b"
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
            r"in the process of|"
            r"(?:is|are) (?:still )?in (?:the )?"
            r"(?:design|initial|early|planning|development|testing|prototype|setup|beginning)\s+(?:phase|stage)|"
            r"has not (?:yet )?been|not yet (?:done|implemented|finished)|"
            r"is pending|are pending|for now|should now|"
            r"still (?:not|isn't|aren't|doesn't|don't|fails?|broken)|"
            r"(?:isn't|aren't|doesn't|don't|is not|are not) (?:\w+ )?(?:right|working|fixed) "
            r"(?:yet|still)|(?:is|are) not working|(?:isn't|aren't) working|not working as expected|"
            # How the agent's work stands as it ends: "is now properly installed and ready to use".
            r"(?:is|are) now (?:properly |fully |successfully |correctly )?"
            r"(?:installed|configured|set up|ready|working|running|verified|fixed)|ready to use|"
            r"running healthily|(?:is|are) (?:healthy|verified)|(?:is|are) not (?:yet )?installed)\b",
            re.IGNORECASE,
        ),
    ),
    (
        "incident",  # an error met once: "Type error in ./src/app.ts:15:16", "uv self uninstall fails"
        re.compile(
            r"^(?:an? |the )?(?:[\w-]+ )?(?:error|exception|failure)s? (?:in|at|on|while|when)\b"
            r"|\bfail(?:s|ed)\.?$"
            r"|\b(?:encounters|encountered|hits|hit|runs into|ran into|gets|got|throws|threw|raises|raised) "
            r"(?:an? |the )?(?:[\w.-]+ ){0,3}(?:error|exception|failure)s?\b",
            re.IGNORECASE,
        ),
    ),
)
_LASTS_ANYWAY = frozenset({"command", "work log", "passive log", "transient state", "incident"})
# What makes a command a standing rule ("Run the linter before every push", "Always use pnpm"):
# words in the what itself (a model's why and how are its own words, and say "should" freely).
WORDED_AS_RULE = re.compile(
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
    "incident": "an error met once",
    "session event": "something about the session itself",
    "session step": "a step of this session's work (again, this time, as before)",
    "fragment": "a name or a fragment, not a statement",
    "code detail": "what the code does, which the code itself says",
    "wrapper text": "a host's wrapper text",
}


def junk_form(what: str) -> str:
    """The kind of non-memory ``what`` reads as ('' when its form is a memory's): a question, a
    request, a session event, a step of this session's work, wrapper text; a command, a work log
    or a transient state unless ``what`` itself is worded as a rule (a model's why and how are its
    own words, and say "should" freely); else a fragment of fewer than three words."""
    text = " ".join(what.split())
    if is_question(text):
        return "question"
    if _AGENT_VOICE.search(text):
        return "session event"
    if about_this_session(text):
        return "session step"
    for kind, pattern in _FORMS:
        if pattern.search(text):
            if kind in _LASTS_ANYWAY and (
                WORDED_AS_RULE.search(text) or LANGUAGE_ASKED.search(text) or rule_words_beyond_english(text)
            ):
                continue
            if kind in ("command", "request") and _CONSTRAINT.search(text):
                continue  # a requirement: "The user asked for the LMS in pure Go, with only the stdlib"
            if kind in ("command", "work log") and _is_statement(text):
                continue  # "Pull requests are squash-merged", "Added fields are validated": a statement
            return kind
    return "fragment" if _fragment(text) else ""


# A what of fewer than three words once its paths and file names are set aside ("Финансовый отчет
# 2026.xlsx", "Sheet1", "vale, push") states nothing; scripts written without spaces (Chinese,
# Japanese, Korean) are not counted so — but an option picked by its number alone ("采用方案二",
# "Go with option B") says nothing out of the conversation it was picked in, in any script.
_PATHS = re.compile(r"\S*(?:/|\.[A-Za-z]\w{0,5}\b)\S*")
UNSPACED = "\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af"  # kana, CJK ideographs, hangul: a character class's body
_UNSPACED = re.compile(f"[{UNSPACED}]")


_OPTION_ONLY = re.compile(
    r"^\W*(?:(?:we |the person )?(?:use|uses|go(?:es)? with|adopt|adopts|pick|picks|choose|chooses|chose|"
    r"picked|adopted|采用|选择|选用|选|用|使用)\s*)?"
    r"(?:the )?(?:option|plan|approach|proposal|方案|选项|案|オプション|방안|옵션)\s*"
    r"(?:[a-e1-9]|[一二三四五六七八九]|one|two|three|four)\W*$",
    re.IGNORECASE,
)


def _fragment(text: str) -> bool:
    if _OPTION_ONLY.match(text.strip()):
        return True
    return not _UNSPACED.search(text) and len(re.findall(r"\w+", _PATHS.sub(" ", text))) < 3


# The agent's own voice inside a sentence: "The notification is for the server that I restarted".
_AGENT_VOICE = re.compile(
    r"\b(?:that|which|and|so|as|when|then|because|where|but|if|what)\s+I(?:'m|'ll|'ve|'d)?\s+[a-z]"
)
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
