"""What the arena's mnemo-off row reads of a request (tools/arena/arena_score.person_text): the text of
the person's messages, not the host's tagged context and not the request's structure. Codex's
Responses API items carry ids (``msg_01a24897…``) whose digits held the answer "24" of three blind
questions, which the row then counted as carried without mnemo."""

from __future__ import annotations

import pytest

from tools.arena.arena_score import person_text

pytestmark = pytest.mark.unit
QUESTION = "What is the max size of the general node group in prod-eu1?"
CONTEXT = "<environment_context>\n  <cwd>/p24</cwd>\n</environment_context>"


def test_a_codex_request_gives_the_question_not_the_item_ids() -> None:
    body = {
        "instructions": "You are Codex. Sizes like 24 appear here.",
        "input": [
            {"type": "message", "id": "msg_01a24897-ca51-7340-a175-4cb6e26ff539", "role": "developer",
             "content": [{"type": "input_text", "text": "sandbox: 24 files"}]},
            {"type": "message", "id": "msg_01a24897-cf74-78e0-a3b6-85fd79e2a47f", "role": "user",
             "content": [{"type": "input_text", "text": CONTEXT}]},
            {"type": "message", "id": "msg_01a24897-cf8f-7062-ad2f-b2cf150a0851", "role": "user",
             "content": [{"type": "input_text", "text": QUESTION}]},
        ],
    }  # fmt: skip
    said = person_text(body)
    assert said.strip() == QUESTION
    assert "24" not in said


def test_a_claude_code_request_gives_the_prompt_without_its_reminders() -> None:
    body = {
        "system": [{"type": "text", "text": "You are Claude Code."}],
        "messages": [
            {"role": "user", "content": [
                {"type": "text", "text": "<system-reminder>\nmax 40\n</system-reminder>"},
                {"type": "text", "text": QUESTION, "cache_control": {"type": "ephemeral"}},
            ]},
            {"role": "assistant", "content": "24"},
            {"role": "user", "content": "and the version?"},
        ],
    }  # fmt: skip
    said = person_text(body)
    assert QUESTION in said and "and the version?" in said
    assert "40" not in said and "24" not in said and "ephemeral" not in said
