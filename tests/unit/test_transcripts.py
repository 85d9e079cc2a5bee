"""Reading the hosts' transcripts into the turns the hooks record (formats as Claude Code 2.1.197
and Codex 0.171 write them; the end-to-end check against real transcripts is in test_hosts)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mnemo import transcripts
from mnemo.importing.transcripts import transcript_episodes
from mnemo.typed import is_template, typed


def _write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    return path


def _user(text: str | list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"type": "user", "sessionId": "s-1", "cwd": "/srv/app", "timestamp": "2026-03-02T09:00:00Z",
            "message": {"role": "user", "content": text}, **extra}  # fmt: skip


def _assistant(message_id: str, block: dict[str, Any], fresh: int = 10) -> dict[str, Any]:
    usage = {"input_tokens": fresh, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 100}
    message = {"id": message_id, "role": "assistant", "content": [block], "usage": usage}
    return {"type": "assistant", "sessionId": "s-1", "timestamp": "2026-03-02T09:00:05Z", "message": message}


def test_claude_code_turns_skip_what_no_prompt_hook_saw(tmp_path: Path) -> None:
    path = _write(tmp_path / "s-1.jsonl", [
        _user("<command-name>/model</command-name>"),
        _user("<local-command-stdout>Set model to sonnet</local-command-stdout>"),
        _user("which day do we deploy?"),
        _user("[Request interrupted by user]"),
        _user("which day do we deploy?"),
        _assistant("m1", {"type": "text", "text": "Let me look."}),
        _assistant("m1", {"type": "tool_use", "id": "toolu_1", "name": "Bash",
                          "input": {"command": "cat DEPLOY"}}),
        _user([{"type": "tool_result", "tool_use_id": "toolu_1", "content": "thursday"}]),
        _assistant("m2", {"type": "tool_use", "id": "toolu_2", "name": "mcp__plugin_mnemo_mnemo__recall",
                          "input": {"query": "deploy"}}),
        _user([{"type": "tool_result", "tool_use_id": "toolu_2",
                "content": [{"type": "text", "text": "{}"}]}]),
        _assistant("m3", {"type": "text", "text": "Thursdays."}),
        _user("<task-notification><status>completed</status></task-notification>"),
        _user("context", isMeta=True),
    ])  # fmt: skip
    transcript = transcripts.read("claude-code", path)
    assert (transcript.session, transcript.cwd) == ("s-1", "/srv/app")
    assert [(t.number, t.prompt, t.answer) for t in transcript.turns] == [
        (1, "which day do we deploy?", ""),
        (2, "which day do we deploy?", "Thursdays."),
    ]
    assert transcript.tokens_read == 110 * 3  # three model calls (m1's usage counts once)
    episodes = transcript_episodes(transcript, "ana", 10_000)
    assert [e.id for e in episodes] == [
        "claude-code:s-1:1:prompt",
        "claude-code:s-1:2:prompt",
        "claude-code:s-1:2:tool:toolu_1",  # mnemo's own recall is not recorded
        "claude-code:s-1:2:answer",
    ]
    assert episodes[2].text == 'Bash {"command": "cat DEPLOY"}\nthursday'
    assert episodes[0].namespace == "workspace:/srv/app"


def test_codex_turns_from_a_rollout(tmp_path: Path) -> None:
    def line(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        return {"timestamp": "2026-03-02T09:00:00.000Z", "type": kind, "payload": payload}

    path = _write(tmp_path / "rollout-2026-03-02T09-00-00-t-1.jsonl", [
        line("session_meta", {"id": "t-1", "cwd": "/srv/app"}),
        line("response_item", {"type": "message", "role": "user",
                               "content": [{"type": "input_text", "text": "<environment_context>…"}]}),
        line("event_msg", {"type": "item_completed", "item": {"type": "UserMessage",
                           "content": [{"type": "text", "text": "which day do we deploy?"}]}}),
        line("response_item", {"type": "function_call", "name": "recall", "namespace": "mcp__mnemo",
                               "arguments": "{\"query\": \"deploy\"}", "call_id": "call_1"}),
        line("response_item", {"type": "function_call_output", "call_id": "call_1", "output": "{}"}),
        line("response_item", {"type": "function_call", "name": "exec_command",
                               "arguments": "{\"cmd\": \"cat DEPLOY\"}", "call_id": "call_2"}),
        line("response_item", {"type": "function_call_output", "call_id": "call_2", "output": "thursday"}),
        line("event_msg", {"type": "token_count", "info": {"total_token_usage": {"input_tokens": 3000}}}),
        line("response_item", {"type": "message", "role": "assistant",
                               "content": [{"type": "output_text", "text": "Thursdays."}]}),
        line("event_msg", {"type": "user_message", "message": "and why?"}),  # the older event
        line("event_msg", {"type": "token_count", "info": {"total_token_usage": {"input_tokens": 4500}}}),
    ])  # fmt: skip
    transcript = transcripts.read("codex", path)
    assert (transcript.session, transcript.tokens_read) == ("t-1", 4500)
    episodes = transcript_episodes(transcript, "ana", 10_000)
    assert [e.id for e in episodes] == [
        "codex:t-1:1:prompt",
        "codex:t-1:1:tool:call_2",
        "codex:t-1:1:answer",
        "codex:t-1:2:prompt",
    ]
    assert episodes[1].text == 'exec_command {"cmd": "cat DEPLOY"}\nthursday'


def test_a_line_cut_short_by_a_crash_loses_only_itself(tmp_path: Path) -> None:
    path = tmp_path / "s-1.jsonl"
    path.write_text(json.dumps(_user("which day do we deploy?")) + "\n" + '{"type": "assistant", "mess')
    assert [t.prompt for t in transcripts.read("claude-code", path).turns] == ["which day do we deploy?"]


def test_a_claude_code_prompt_is_what_the_person_typed_not_the_ide_context_nor_a_shell_run(
    tmp_path: Path,
) -> None:
    ide = "<ide_selection>The user selected the lines 1 to 5 from /srv/app/notes.md:\nfoo\n\nThis may or may not be related to the current task.</ide_selection>"  # noqa: E501
    path = _write(tmp_path / "s-1.jsonl", [
        _user("<bash-input>git log -1</bash-input>"),
        _user("<bash-stdout>abc123 fix the build</bash-stdout><bash-stderr></bash-stderr>"),
        _user([{"type": "text", "text": ide}, {"type": "text", "text": "Keep the changelog in English."}]),
        _user("<ide_opened_file>The user opened the file /srv/app/x.py in the IDE.</ide_opened_file>"),
        _assistant("m1", {"type": "text", "text": "Noted."}),
        _user("<user-memory-input>Commit messages use the imperative.</user-memory-input>"),
        _user("<command-message>review</command-message>\n<command-name>/review</command-name>\n"
              "<command-args>the auth flow</command-args>"),
        _assistant("m2", {"type": "text", "text": "API Error: 529 Overloaded"}),
        _user("(no content)"),
        _user("This session is being continued from a previous conversation that ran out of context."),
    ])  # fmt: skip
    transcript = transcripts.read("claude-code", path)
    assert [t.prompt for t in transcript.turns] == [
        "Keep the changelog in English.",
        "Commit messages use the imperative.",
        "/review the auth flow",
    ]
    [shell] = transcript.turns[0].tools  # run before the first prompt: a tool's run of that turn
    assert (shell.name, shell.input, shell.output) == (
        transcripts.PERSON_SHELL,
        "git log -1",
        "abc123 fix the build",
    )
    assert transcript.turns[2].answer == "API Error: 529 Overloaded"  # the writer knows the turn failed
    episodes = transcript_episodes(transcript, "ana", 10_000)
    assert [e.role.value for e in episodes if e.turn == 1] == ["user", "tool", "assistant"]


def test_a_codex_prompt_is_the_request_not_the_ide_context_nor_a_templates_text(tmp_path: Path) -> None:
    def line(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        return {"timestamp": "2026-03-02T09:00:00.000Z", "type": kind, "payload": payload}

    ide = "# Context from my IDE setup:\n\n## Active file: go.mod\n\n## Open tabs:\n- go.mod: go.mod\n\n"
    ide += "## My request for Codex:\n"
    template = "## User Input\n\n```text\n{}\n```\n\nYou **MUST** consider the user input before proceeding.\n\n## Outline\n1. Run the script."  # noqa: E501
    path = _write(tmp_path / "rollout-t-1.jsonl", [
        line("session_meta", {"id": "t-1", "cwd": "/srv/app"}),
        line("event_msg", {"type": "user_message", "message": "<environment_context>\n<cwd>/srv/app</cwd>"}),
        line("event_msg", {"type": "user_message", "message": ide + "We target Go 1.22."}),
        line("event_msg", {"type": "user_message", "message": template.format("Add a login page")}),
        line("event_msg", {"type": "user_message", "message": template.format("")}),
    ])  # fmt: skip
    read = transcripts.read("codex", path)
    assert [t.prompt for t in read.turns] == ["We target Go 1.22.", "Add a login page", ""]
    episodes = transcript_episodes(read, "ana", 10_000)  # the template's turn has no prompt episode
    assert [e.id for e in episodes] == ["codex:t-1:1:prompt", "codex:t-1:2:prompt"]


def test_a_rollout_without_an_envelope_is_read(tmp_path: Path) -> None:
    """Codex's first rollouts (2025): a first line with the session's id and time, then the items
    themselves; the person's prompts are the user messages that are not the host's own."""

    def message(role: str, text: str) -> dict[str, Any]:
        kind = "input_text" if role == "user" else "output_text"
        return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}

    path = _write(tmp_path / "rollout-old.jsonl", [
        {"id": "t-0", "timestamp": "2025-09-24T00:55:32.770Z", "instructions": "# Guidelines"},
        {"record_type": "state"},
        message("user", "<user_instructions>\n# Guidelines\n</user_instructions>"),
        message("user", "<environment_context>\n  <cwd>E:\\work\\app</cwd>\n</environment_context>"),
        message("user", "Wir deployen immer donnerstags."),
        {"type": "function_call", "name": "shell", "arguments": "{\"command\": [\"dir\"]}", "call_id": "c1"},
        {"type": "function_call_output", "call_id": "c1", "output": "README.md"},
        message("assistant", "Verstanden."),
    ])  # fmt: skip
    transcript = transcripts.read("codex", path)
    assert (transcript.session, transcript.cwd) == ("t-0", "E:\\work\\app")
    [turn] = transcript.turns
    assert (turn.prompt, turn.answer, [t.output for t in turn.tools]) == (
        "Wir deployen immer donnerstags.",
        "Verstanden.",
        ["README.md"],
    )
    assert turn.time is not None and turn.time.year == 2025


def test_a_command_file_expanded_into_the_prompt_is_not_the_persons_words() -> None:
    front = "---\ndescription: Create the feature spec.\n---\n\nThe user input can be given directly.\n\n"
    steps = "\n\n1. Run the script `create-new-feature.sh`.\n2. Write the spec."
    assert typed(front + "User input:\n\nA parking-lot monitor with plate cameras" + steps) == (
        "A parking-lot monitor with plate cameras"
    )
    assert typed(front + "User input:\n\n$ARGUMENTS" + steps) == ""
    assert typed(front + "Summarise the repository." + steps) == ""
    assert typed("---\nnot front matter") == "---\nnot front matter"


def test_a_plan_accepted_in_codexs_plan_mode_is_the_acceptance_not_the_agents_plan() -> None:
    plan = "PLEASE IMPLEMENT THIS PLAN:\n# Multi-file pipeline\n\n- The voter groups answers within 1 %"
    assert typed(plan) == "PLEASE IMPLEMENT THIS PLAN"
    assert typed("please implement this plan: but keep the old parser") == (
        "please implement this plan: but keep the old parser"  # typed by the person, not the host's
    )


def test_the_prompt_codex_writes_for_init_is_a_command_run_not_the_persons_words() -> None:
    init = (
        "Generate a file named AGENTS.md that serves as a contributor guide for this repository.\n"
        "Your goal is to produce a clear, concise, and well-structured document with descriptive headings."
    )
    assert typed(init) == "" and is_template(init)  # a turn the person ran, with no words of theirs
    asked = "Generate a file named AGENTS.md for the API folder, in Spanish"
    assert typed(asked) == asked and not is_template(asked)  # typed by the person


def test_codex_rollouts_are_found_by_their_first_line_whatever_their_name(tmp_path: Path) -> None:
    meta = {"timestamp": "2026-03-02T09:00:00.000Z", "type": "session_meta",
            "payload": {"id": "t-1", "cwd": "/srv/app", "instructions": "x" * 200_000}}  # fmt: skip
    (tmp_path / "export" / "2025").mkdir(parents=True)
    renamed = _write(tmp_path / "export" / "t-1.jsonl", [meta])
    old = _write(tmp_path / "export" / "2025" / "first.jsonl", [
        {"id": "t-0", "timestamp": "2025-09-24T00:55:32.770Z", "instructions": None},
    ])  # fmt: skip
    named = _write(tmp_path / "rollout-2026-03-02T09-00-00-t-2.jsonl", [{**meta, "payload": {"id": "t-2"}}])
    _write(tmp_path / "export" / "claude.jsonl", [{"type": "user", "sessionId": "s-1", "message": {}}])
    (tmp_path / "export" / "cut.jsonl").write_text("{not json\n")
    (tmp_path / "export" / "empty.jsonl").write_text("")
    assert set(transcripts.find("codex", tmp_path)) == {renamed, old, named}
    assert transcripts.read("codex", renamed).session == "t-1"
    assert len(transcripts.find("claude-code", tmp_path)) == 6
