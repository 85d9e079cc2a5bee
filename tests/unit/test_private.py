"""Private spans: removed with a [PRIVATE] placeholder wherever text is redacted, refused where text
is written to be kept, stripped from what the hook process spools (through the hooks, the daemon
and distillation: tests/daemon/test_private.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mnemo import hook_process
from mnemo.errors import InputError
from mnemo.paths import Layout
from mnemo.private import PLACEHOLDER, has_private, refuse_private, remove_private
from mnemo.secrets import SecretRedactor, refuse_unkeepable


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("deploy <private>to ana's laptop</private> today", "deploy [PRIVATE] today"),
        ("<PRIVATE>a</Private> b <private note='x'>c</private >", "[PRIVATE] b [PRIVATE]"),
        ("a <private>b <private>c</private> d</private> e", "a [PRIVATE] e"),  # nested: one span
        ("keep this <private>and never this\nnor this", "keep this [PRIVATE]"),  # never closed
        ("cut off here</private> end", "[PRIVATE] end"),  # its opening tag was lost: fail closed
        ("a <private>b</private> c </private> d", "a [PRIVATE] d"),
        ("a <private\nsecret</private> b", "[PRIVATE] b"),  # an opening tag written wrong
        ('<private note="<">secret</private> b', "[PRIVATE] b"),
        ("a <private-key> and <privates> are other tags", "a <private-key> and <privates> are other tags"),
        ("line 1\n<private>\nline 2\n</private>\nline 3", "line 1\n[PRIVATE]\nline 3"),
        ("no tags at all", "no tags at all"),
    ],
)
def test_a_private_span_becomes_a_placeholder(text: str, expected: str) -> None:
    assert remove_private(text) == expected
    assert remove_private(expected) == expected  # twice changes nothing
    assert not has_private(expected)


def test_the_redactor_removes_private_spans_before_it_looks_for_credentials() -> None:
    text = "the note <private>password is hunter2-correct-horse</private> stays out; db is pg"
    assert SecretRedactor().redact(text) == "the note [PRIVATE] stays out; db is pg"


def test_what_is_written_to_be_kept_refuses_a_private_span() -> None:
    with pytest.raises(InputError, match=r"content: holds a <private> span"):
        refuse_private("use <private>my home address</private> for deliveries", "content")
    with pytest.raises(InputError, match=r"why: holds a <private> span"):
        refuse_unkeepable("because </private>", "why")
    refuse_unkeepable("we deploy on Thursdays", "content")  # nothing to refuse


def test_the_hook_process_spools_a_turn_without_its_private_spans(tmp_path: Path) -> None:
    """While the daemon is down the hook process writes the input to a file: private spans are
    removed there, in every string, and a span never closed takes only the rest of its string."""
    where = Layout(str(tmp_path), "", "", str(tmp_path / "run"), str(tmp_path / "logs"))
    payload = {
        "session_id": "s-1",
        "prompt": "fix the build <private>my salary is 91k</private>",
        "tool_response": {"stdout": ["ok", "<private>token-ish thing never closed"], "code": 0},
        "cwd": "/repo",
    }
    hook_process._spool(where, "UserPromptSubmit", "claude-code", json.dumps(payload).encode())
    spooled = Path(where.spool_path).read_text()
    assert "91k" not in spooled and "token-ish" not in spooled
    entry = json.loads(spooled)
    kept = json.loads(entry["input"])
    assert kept["prompt"] == f"fix the build {PLACEHOLDER}"
    assert kept["tool_response"] == {"stdout": ["ok", PLACEHOLDER], "code": 0}
    assert kept["cwd"] == "/repo" and kept["session_id"] == "s-1"
    # Not JSON (the daemon would refuse it anyway): the raw text loses the span all the same.
    hook_process._spool(where, "Stop", "", b"{broken <private>secret words</private>")
    assert "secret words" not in Path(where.spool_path).read_text()
