"""What may become a memory at all (mnemo.distill.gate): the forms that are no memory, a what
grounded in what it cites, a decision that rests on a person's choice, a draft that only answers
what the person asked, and a batch's repeated drafts folded into one — in the writer, through the
real store and the scripted model server."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from mnemo.distill.decide import DecisionModel
from mnemo.distill.extract import Draft, ExtractedMemory
from mnemo.distill.forms import junk_form
from mnemo.distill.gate import (
    AGENTS_DOING,
    Screening,
    anchored,
    asks,
    chosen_by,
    copies_an_example,
    screen,
    ungrounded,
    unsaid,
)
from mnemo.distill.llm import LLM
from mnemo.distill.meter import TokenMeter
from mnemo.distill.policy import Approval
from mnemo.distill.repeats import fold_repeats, settled_restatements
from mnemo.distill.writer import Distiller
from mnemo.episodes import Episode, EpisodeIn, EpisodeIntake, Role
from mnemo.index.live import RecallEngine
from mnemo.secrets import SecretRedactor
from mnemo.store import ClickHouseStore
from mnemo.vocabulary import MemoryStatus, MemoryType
from tests.helpers import UNRELATED, Home, make_memory, record_turns, yes_with
from tests.llm_server import LLMServer

INTAKE = EpisodeIntake(max_chars=100_000, default_namespace="workspace:shop", redactor=SecretRedactor())


def _said(text: str, role: Role = Role.USER, episode_id: str = "e1") -> Episode:
    return INTAKE.accept(EpisodeIn(id=episode_id, text=text, role=role))


@pytest.mark.parametrize(
    ("what", "kind"),
    [
        ("Create a GitHub repository for the project", "command"),
        ("Push the changes to the remote repository", "command"),
        ("Add Teams keybinding", "command"),
        ("Update Ruby version to 3.4.5", "command"),
        ("Added the remote origin to the local repository", "work log"),
        ("All tests pass now", "work log"),
        ("Should I switch to a monorepo?", "question"),
        ("The user wants to create a repository on GitHub", "request"),
        ("To perform a search for opportunities using the provided query parameters", "request"),
        ("The user opened the file Untitled-2 in the IDE", "wrapper text"),
        ("The user ran the test suite in the terminal", "session event"),
        ("The project is in the design phase", "transient state"),
        ("I must call the StructuredOutput tool", "wrapper text"),
        ("Ship code from the feature branch to `main` with a safe merge", "command"),
    ],
)
def test_a_what_that_is_no_memory_by_its_form_is_named_so(what: str, kind: str) -> None:
    assert junk_form(what) == kind


@pytest.mark.parametrize(
    "what",
    [
        "Run the linter before every push",
        "Always use pnpm instead of npm",
        "Persistence sits behind a repository interface so the storage can be swapped",
        "Teams is installed as a PWA",
        "The keybindings live in .config/hypr/bindings.conf",
        "The person prefers answers in French",
        "Deploys go out on Thursdays because QA tests on Wednesday",
        "The API and the web app share one backend",
    ],
)
def test_a_memory_by_its_form_is_not_named_junk(what: str) -> None:
    assert junk_form(what) == ""


def test_a_what_must_name_only_what_its_sources_hold() -> None:
    sources = ["the keybindings file is .config/hypr/bindings.conf, Teams is a PWA"]
    assert ungrounded("Keybindings live in .config/hypr/bindings.conf", sources) == []
    assert ungrounded("Keybindings live in bindings.conf", sources) == []  # the base name is held
    assert ungrounded("Keybindings live in ~/.config/sway/config.toml", sources) == [
        "~/.config/sway/config.toml"
    ]
    assert ungrounded("Node is pinned at v20.11", ["we pin node 18"]) == ["20.11"]  # the version read


def test_a_draft_is_screened_by_what_it_cites() -> None:
    fact, decision = MemoryType.FACT, MemoryType.DECISION
    tool = _said("cat README\nThe service listens on 8080", Role.TOOL)
    assert screen("The service listens on 8080", fact, [tool]).reason == "rests on tool output alone"
    asked = _said("should I switch to a monorepo? they share the same backend?")
    answered = screen("The apps share one backend", fact, [asked, _said("Yes.", Role.ASSISTANT, "e2")])
    assert answered.reason == "answers what the person asked: the person stated nothing"
    stated = _said("they share the same backend, so keep them in one repo")
    assert screen("The apps share one backend", fact, [stated]).keeps
    command = _said("convert this query to rails console code for the users")
    verdict = screen("Rails console code queries the users table", decision, [command])
    assert verdict.reason.startswith("restates what the person asked for") or "chooses" in verdict.reason
    chosen = _said("let's go with option B, the queue stays in Postgres")
    assert screen("The queue stays in Postgres", decision, [chosen]).keeps


def test_what_rests_on_the_agents_words_alone_waits_for_a_person() -> None:
    fact = MemoryType.FACT
    claim = _said("The scorer votes within 1 percent and retries twice.", Role.ASSISTANT, "e2")
    alone = screen("The scorer votes within 1 percent", fact, [claim])
    assert alone.keeps and alone.waits == "it rests on the agent's words alone, no person's line or tool run"
    run = _said(
        "grep -n TOLERANCE scorer.py\n12: TOLERANCE = 0.01  # votes within 1 percent", Role.TOOL, "e3"
    )
    assert screen("The scorer votes within 1 percent", fact, [run, claim]) == Screening()  # a run shows it
    person = _said("the scorer votes within 1 percent, keep it that way")
    assert screen("The scorer votes within 1 percent", fact, [person, claim]) == Screening()  # the person's


def test_an_english_what_in_words_its_english_sources_never_use_is_dropped() -> None:
    state = MemoryType.STATE
    asked = _said("user story 1 please, following the mockups in the design folder")
    verdict = screen("The project keeps a comprehensive summary of its setup", state, [asked])
    assert verdict.reason == "its words are not in its sources: a summary no one gave"
    told = _said("the apps share one backend, and staging deploys from the release branch")
    assert screen("Staging deploys from the release branch", state, [told]).keeps
    spanish = _said("la app y la web comparten el mismo backend, no lo cambies")
    assert screen("The app and the website share one backend", MemoryType.FACT, [spanish]).keeps  # translated
    assert not unsaid("Use pnpm", ["we always use pnpm here"])  # too short to judge by its words
    refusal = _said("no, keep Postgres, our backups are built around it")
    assert screen(
        "Order events stay in Postgres", MemoryType.DECISION, [refusal]
    ).keeps  # the proposal's words


def test_a_state_or_event_no_line_of_the_persons_words_is_the_agents_work_log() -> None:
    state, event = MemoryType.STATE, MemoryType.EVENT
    run = _said("Bash mkdir -p ~/.claude/agents && cp agents/*.md ~/.claude/agents/", Role.TOOL, "e2")
    where = _said("globally")  # the person's answer to "where?", not the state the agent then made
    verdict = screen("Subagents installed globally", state, [where, run])
    assert verdict.reason == AGENTS_DOING
    told = _said("The run-book is done. The agents live in ~/.claude/agents on every machine.")
    assert screen("The agents live in ~/.claude/agents on every machine", state, [told, run]).keeps
    launched = _said("Linear answers over `npx -y mcp-remote https://mcp.linear.app/sse`", Role.ASSISTANT)
    assert screen("Linear is launched via `npx -y mcp-remote`", event, [launched, run]).reason == AGENTS_DOING
    # The person's line in another language: the memory may be its translation, left alone.
    spanish = _said("la base de datos de staging es de solo lectura hasta el viernes")
    assert screen("The staging database is read-only until Friday", state, [spanish]).keeps
    chinese = _said("chat页聊天框默认底部居中")
    assert screen("聊天框默认底部居中", state, [chinese]).keeps
    assert screen("注册页已部署到生产环境", state, [chinese]).reason == AGENTS_DOING
    # An event whose subject is the agent is its own doing, even in the person's words.
    lua = _said("no no, in dotfiles, there is a lua script. Nothing related to a plugin")
    assert screen("Claude finds a Lua script in the dotfiles directory", event, [lua]).reason == AGENTS_DOING
    assert screen("A Lua script in the dotfiles binds the app keys", MemoryType.FACT, [lua, run]).keeps
    moved = _said("we moved the shop to Postgres 16 last Friday")
    assert screen("The shop moved to Postgres 16 last Friday", event, [moved]).keeps


def _draft(what: str, *sources: str) -> Draft:
    return Draft(ExtractedMemory(type=MemoryType.DECISION, what=what, sources=list(sources)), True, False)


def test_a_batchs_repeated_drafts_fold_into_the_first_with_their_sources() -> None:
    drafts = [
        _draft("Persistence sits behind a Strategy pattern", "e1"),
        _draft("The cache lives in Redis", "e2"),
        _draft("Persistence sits behind a Strategy pattern.", "e3"),
        _draft("The cache TTL is 300 s", "e4"),
        _draft("The cache TTL is 600 s", "e5"),  # another value: not a repeat
    ]
    kept, repeated = fold_repeats(drafts)
    assert repeated == {2: 0}
    assert kept[0].memory.sources == ["e1", "e3"]


def test_a_draft_restating_what_a_later_word_settled_from_the_same_episodes_is_not_added_again() -> None:
    at = datetime(2026, 3, 2, tzinfo=UTC)
    earlier = [
        make_memory("mem_tue", "The shop is deployed on Tuesdays", at, sources=["e1"],
                    status=MemoryStatus.CLOSED, status_reason="replaced by mem_thu"),
        make_memory("mem_ttl", "The cache TTL is 300 s", at, sources=["e2"], status=MemoryStatus.FORGOTTEN),
        make_memory("mem_red", "The cache lives in Redis", at, sources=["e3"]),  # still current
    ]  # fmt: skip
    drafts = [
        _draft("We deploy the shop on Tuesdays", "e1"),  # another wording of the closed one
        _draft("Releases are tagged by the CI", "e1"),  # something else said in the same line
        _draft("The cache TTL is 600 s", "e2"),  # another value: a new statement
        _draft("The cache lives in Redis", "e3"),  # the current one: the judge merges it
        _draft("The shop is deployed on Tuesdays", "e9"),  # said elsewhere: the judge's to weigh
    ]
    found = settled_restatements(drafts, earlier)
    assert list(found) == [0] and "mem_tue is closed (replaced by mem_thu)" in found[0]


def test_the_writer_drops_what_is_no_memory_and_logs_why(
    home: Home, llm_server: LLMServer, store: ClickHouseStore
) -> None:
    """The 3-turn chore of a real session (create a repo, add the remote, push) proposed as four
    decisions, and one lasting fact beside them, proposed twice: one memory is written; the judge
    log says why each other draft was dropped."""
    turns = [
        (Role.USER, "create a github repo on my account for this project and add the remote"),
        (Role.ASSISTANT, "Created ana/shop and added it as origin."),
        (Role.USER, "push it. btw the web app and the API share the same backend, keep that in mind"),
        (Role.ASSISTANT, "Pushed main to origin."),
    ]
    record_turns(store, "chore", turns, datetime(2026, 3, 2, tzinfo=UTC))
    drafts = [
        {"type": "decision", "what": "Create a GitHub repository for the project", "sources": ["chore-0"]},
        {"type": "decision", "what": "Add the remote origin to the local repository", "sources": ["chore-0"]},
        {"type": "decision", "what": "Push the changes to the remote repository", "sources": ["chore-2"]},
        {"type": "fact", "what": "The web app and the API share the same backend", "sources": ["chore-2"]},
        {"type": "fact", "what": "The web app and the API share the same backend.", "sources": ["chore-2"]},
    ]
    llm_server.answer(contains="Transcript:", text=json.dumps({"memories": drafts}))
    for question in ("help a later conversation", "still be true in a month", "back the NEW memory's why"):
        llm_server.answer(contains=question, choices=yes_with(0.95))
    llm_server.answer(contains="How does the NEW memory relate", choices=UNRELATED)
    settings = home.with_env(MNEMO_LLM_URL=llm_server.url, MNEMO_LLM_MODEL="scripted-1").settings
    llm = LLM(settings, TokenMeter(store, 0))
    [result] = Distiller(store, RecallEngine(None), llm, DecisionModel(llm, settings)).distil_session("chore")
    assert result.dropped == 4 and len(result.added) == 1
    [kept] = [m for m in store.memories_page("", 10)]
    assert kept.what == "The web app and the API share the same backend"
    reasons = sorted(r.reason for r in store.judge_log(20, session="chore") if r.action == "dropped")
    assert reasons == [
        "reads as a command to do something now",
        "reads as a command to do something now",
        "reads as a command to do something now",
        "repeats draft 3 of the batch",
    ]


def test_a_draft_citing_only_the_tool_run_a_persons_line_asked_for_is_anchored_to_that_line() -> None:
    asked = _said("rename the billing job to billing-nightly", episode_id="p")
    run = _said("mv jobs/billing jobs/billing-nightly\n", Role.TOOL, "t")
    unrelated = _said("fix the flaky test", episode_id="q")
    other_run = _said("pytest -x\n1 passed", Role.TOOL, "u")
    conversation = [asked, run, unrelated, other_run]
    renamed = anchored(_draft("The billing job is called billing-nightly", "t"), conversation)
    assert renamed.memory.sources == ["p", "t"] and renamed.human_backed
    port = anchored(_draft("The service listens on port 8080", "u"), conversation)
    assert port.memory.sources == ["u"]  # the line that led to it says nothing of the kind


@pytest.mark.parametrize(
    ("line", "is_asking"),
    [
        ("Are pipx and uvx similar tools?", True),
        ("How do I install the server with uvx? I'm a newbie, explain your response.", True),
        ("how do i reach buffers past 9 on nvim", True),
        ("Tienes acceso a C:\\Proyectos\\Jarvis ?", True),
        ("request_status.luaのようにClassを使うにはどうすればいいの？", True),
        ("When I read init.lua with luafile %, we get errors", False),
        ("Should we always squash-merge? yes, always squash-merge from now on", False),
        ("We deploy on Thursdays", False),
    ],
)
def test_a_persons_line_that_asks_is_told_in_any_language(line: str, is_asking: bool) -> None:
    assert asks(line) is is_asking


def test_an_announcement_a_running_server_and_a_step_to_click_read_as_logs_and_commands() -> None:
    assert junk_form("Your Charges Finder is now fully updated with OAuth and ready to use") == "passive log"
    assert junk_form("The new server (b6fdbf0) is running successfully on port 5173.") == "passive log"
    assert junk_form("Go to https://app.example.com/settings/developer") == "command"
    for fact in (
        "Logs are written to /var/log/app",
        "The dev server runs on port 5173",
        "Visit counts live in Redis",
    ):
        assert junk_form(fact) == "", fact
    assert junk_form("The notification is for the old dev server that I restarted.") == "session event"
    assert junk_form("Phase I of the migration moves reads to the replica") == ""


def test_facts_that_name_a_session_a_chat_or_a_purpose_are_not_junk() -> None:
    for fact in ("The session cookie expires after 30 minutes", "The chat widget uses WebSockets",
                 "Settings are read from ~/.config/app"):  # fmt: skip
        assert junk_form(fact) == "", fact
    assert junk_form("The session covered the login bug") == "session event"
    assert junk_form("To perform a search on the platform using the given parameters") == "request"
    # A procedure worded from its purpose reads as a request too: the model's plans are worded so
    # ("To improve the robustness, we need to …"), far more often than its procedures.
    assert junk_form("To deploy, run make release") == "request"


def test_only_a_whole_word_of_assent_accepts_what_was_proposed() -> None:
    lines = ["simplify the build script", "sidebar: make it blue", "okapi"]
    assert not chosen_by(lines, [False] * 3)
    assert all(chosen_by([line], [False]) for line in ("ok, go", "sí, vale", "B", "let's use pnpm"))


def test_an_error_met_once_and_work_in_the_process_of_being_done_are_no_memories() -> None:
    assert junk_form("Type error in ./src/scripts/create-admin.ts:15:16") == "incident"
    assert junk_form("uv self uninstall command fails") == "incident"
    assert junk_form("The app is in the process of being developed.") == "transient state"
    assert junk_form("The migration failed because the lock was held; always take the lock first") == ""
    assert junk_form("Errors are reported to Sentry") == ""


def test_the_prompts_own_example_handed_back_is_dropped_unless_the_conversation_says_it() -> None:
    example = "The queue stays in Postgres because the backups are built around it"
    assert copies_an_example(example, ["make the sidebar icons larger"])
    assert not copies_an_example("Answers are written in German", ["Please write all the answers in German"])
    assert not copies_an_example("The sidebar icons are 24 px", ["make the sidebar icons 24 px"])


def test_a_decision_only_the_classifier_reads_as_chosen_waits_for_a_person() -> None:
    lines = ["Resize tracking.png to 243x168 and export it to webp"]
    assert chosen_by(lines, [True]) == "classifier" and chosen_by(lines, [False]) == ""
    assert chosen_by(["We deploy on Thursdays from now on"], [False]) == "words"
    memory = make_memory("m-1", "Images are exported to webp", datetime(2026, 12, 1, tzinfo=UTC))
    status, why = Approval("auto").status(
        memory, tool_only=False, unsure="a decision only the classifier reads"
    )
    assert (
        status is MemoryStatus.CANDIDATE and why == "waits for a person: a decision only the classifier reads"
    )
    assert Approval("auto").status(
        memory.model_copy(update={"has_human_backing": True}), tool_only=False
    ) == (
        MemoryStatus.ACTIVE,
        "",
    )


def test_a_step_of_this_sessions_work_is_no_memory_unless_it_says_it_stands() -> None:
    assert junk_form("Do the resize again but add 20% instead of 10%.") == "session step"
    assert junk_form("Now don't resize, export with the quality you were using") == "session step"
    assert junk_form("Esta vez exporta al 90 %") == "session step"
    assert junk_form("Never run the seed script again: it duplicates the rows") == ""
    # A line about the session's last steps chooses nothing, whatever rule words it uses.
    assert chosen_by(["do the resize again but add 20% instead of 10%"], [True]) == ""
    assert chosen_by(["from now on resize to 20% more, as before"], [False]) == "words"


def test_a_rule_or_a_language_asked_for_chooses_in_any_language() -> None:
    assert chosen_by(["schreibe alles auf deutsch"], [False]) == "words"
    assert chosen_by(["désormais on utilise pnpm"], [False]) == "words"
    assert chosen_by(["以后都用中文回答"], [False]) == "words"
    assert junk_form("Write everything in German") == ""  # how the person wants things written
    assert junk_form("Translate the README to German") == "command"  # a one-off
    german = _said("schreibe alles auf deutsch")
    assert screen("Schreibe alles auf Deutsch", MemoryType.DECISION, [german]).keeps


def test_a_fragment_a_log_with_its_auxiliary_and_something_not_working_are_no_memories() -> None:
    assert junk_form("Финансовый отчет 2026.xlsx") == "fragment"  # a file's name, no statement
    assert junk_form("vale, push") == "fragment"
    assert junk_form("采用方案二") == "fragment"  # "adopt option two": nothing out of its conversation
    assert junk_form("Go with option B.") == "fragment"
    assert junk_form("采用方案二：缓存放在 Redis") == ""  # it says what was adopted
    assert junk_form("缓存统一放在Redis") == ""  # a script written without spaces is not counted by words
    assert junk_form("The team has implemented the changes to the ISE service") == "work log"
    assert junk_form("OCR functionality is not working as expected") == "transient state"
    assert junk_form("The person decided to checkout the branch 001-user-geocode manually") == "session event"
    assert junk_form("Teams is installed as a PWA") == ""


def test_a_rule_chooses_only_what_it_is_about_and_an_assent_whatever_was_proposed() -> None:
    rule = "以后所有的claude skill 保存在我本地个人目录,而非项目目录"  # from now on: skills live in ~
    assert chosen_by([rule], [False], "Claude skills are saved in the personal directory") == "words"
    assert chosen_by([rule], [False], "删除分支 hotfix/fix-app-bottom-nav") == ""  # delete a branch
    assert chosen_by([rule], [False], "技能保存在个人目录") == "words"  # two characters in common
    assert chosen_by(["ok, go"], [False], "Memcached caches the orders page") == "words"


def test_adopting_an_option_and_russian_rules_choose_and_what_only_opens_like_an_assent_does_not() -> None:
    adopt = "采用如下方案,我指定创建的skills增加custom前缀,自动创建的不管"  # adopt: my skills get custom-
    assert chosen_by([adopt], [False], "Skills the person asks for get a custom prefix") == "words"
    assert chosen_by(["キャッシュはRedisにします"], [False], "The cache is Redis") == "words"
    assert chosen_by(["캐시는 Redis로 하자"], [False], "The cache is Redis") == "words"
    assert chosen_by(["всегда пиши отчёт в Excel"], [False], "Reports are written in Excel") == "words"
    assert chosen_by(["да, делай"], [False], "Memcached caches the orders page") == "words"
    # An assent in a script written without spaces stands alone; these only begin like one.
    for line in ("可以帮我看一下日志", "네트워크 설정 확인해줘", "好像有问题"):
        assert chosen_by([line], [False], "Memcached caches the orders page") == "", line
    assert chosen_by(["好的，就这样"], [False], "Memcached caches the orders page") == "words"
