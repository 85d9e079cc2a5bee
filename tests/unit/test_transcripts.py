"""Reading the hosts' transcripts into the turns the hooks record (formats as Claude Code 2.1.197
and Codex 0.171 write them; the end-to-end check against real transcripts is in test_hosts)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mnemo import transcripts
from mnemo.importing.transcripts import transcript_episodes


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
