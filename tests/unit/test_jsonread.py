"""Reading outside JSON (mnemo.jsonread): nothing breaks the reader, and what it repairs is said."""

from __future__ import annotations

import json

import pytest

from mnemo.jsonread import CUT_NOTE, MAX_DEPTH, JSONInputError, read_json, repaired_json


def nested(depth: int, inner: str = "1") -> str:
    return "[" * depth + inner + "]" * depth


def test_lone_surrogates_become_the_replacement_character_in_keys_and_values() -> None:
    text = '{"q": "split \\ud83d emoji", "\\udfff": ["\\ud800", "\\ud83d\\ude00"]}'
    assert read_json(text) == {"q": "split \ufffd emoji", "\ufffd": ["\ufffd", "😀"]}
    assert json.loads(repaired_json(read_json(text)))["\ufffd"] == ["\ufffd", "😀"]


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 199, 989, 5_000])
def test_nesting_past_the_bound_is_refused_at_any_depth(depth: int) -> None:
    with pytest.raises(JSONInputError, match=f"nested deeper than {MAX_DEPTH} levels"):
        read_json(nested(depth))


def test_nesting_at_the_bound_is_read() -> None:
    assert read_json(nested(MAX_DEPTH - 1, "[]")) is not None  # MAX_DEPTH levels, the last empty
    with pytest.raises(JSONInputError):
        read_json(nested(MAX_DEPTH, "[]"))


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 989, 5_000])
def test_cutting_replaces_what_is_too_deep_and_keeps_the_rest(depth: int) -> None:
    text = '{"tool_response": ' + nested(depth) + ', "prompt": "kept [ ] {"}'
    value = read_json(text, cut_deeper=True)
    assert value["prompt"] == "kept [ ] {"
    inner = value["tool_response"]
    for _ in range(MAX_DEPTH - 1):
        [inner] = inner
    assert inner == CUT_NOTE


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("NaN", "NaN is not a JSON value"),
        ('{"a": -Infinity}', "-Infinity is not a JSON value"),
        ('{"limit": 1e999}', "out of range"),
        ('{"a": ', "Expecting value"),
        ("", "Expecting value"),
    ],
)
def test_what_json_does_not_have_is_refused_with_the_reason(text: str, reason: str) -> None:
    with pytest.raises(JSONInputError, match=reason):
        read_json(text)


def test_bytes_that_are_not_utf8_are_replaced_and_a_byte_order_mark_skipped() -> None:
    assert read_json(b'{"a": "caf\xe9"}') == {"a": "caf\ufffd"}
    assert read_json(b'\xef\xbb\xbf{"a": 1}') == {"a": 1}


def test_an_unterminated_string_after_deep_nesting_is_refused_in_one_pass() -> None:
    """Cutting the deep parts reads each string once: a million escaped quotes left open after
    2,000 brackets are refused, not scanned again from each quote (which never ended)."""
    with pytest.raises(JSONInputError, match="nested too deeply to read"):
        read_json("[" * 2_000 + '"' + '\\"' * 1_000_000, cut_deeper=True)
