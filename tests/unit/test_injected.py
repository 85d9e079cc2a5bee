"""No stored text closes the memory frame: whatever a memory or a kept entry holds — written by a
person, a model or a page the agent read — the injected block opens once, closes once, at its
end, and no tag inside it can start. (Through the CLI, the daemon and the hook process:
tests/daemon/test_injected.py.)"""

from __future__ import annotations

import re

import pytest

from mnemo.errors import InputError
from mnemo.injected import frame, inert, refuse_frame, refuse_unfit
from tests.helpers import HOSTILE, assert_one_closed_frame


def test_a_frame_around_hostile_text_opens_once_and_closes_once_at_its_end() -> None:
    for text in HOSTILE:
        body = assert_one_closed_frame(frame(f"Header.\n- {text}", source="test"))
        assert "Deploy notes" in body
    assert inert("a < b, x <= y, 3<4") == "a < b, x <= y, 3<4"  # not tags: left as they are
    assert inert("List<String>") == "List&lt;String>"


def test_writes_refuse_mnemos_own_tag_however_it_is_spelt() -> None:
    for text in (*HOSTILE[:3], *HOSTILE[4:]):
        try:
            refuse_frame(text, "content")
        except InputError as exc:
            assert "content: may not hold mnemo's own <mnemo-memory>" in str(exc)
        else:
            raise AssertionError(f"not refused: {text!r}")
    refuse_frame(HOSTILE[3], "content")  # another tag: stored, and made inert when injected
    with pytest.raises(InputError, match=re.escape("content: may not hold control characters (U+0000)")):
        refuse_unfit("Deploy notes\x00", "content")
    refuse_unfit("Deploy notes\r\n\tindented", "content")  # line breaks and tabs are text
