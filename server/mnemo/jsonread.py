"""JSON that comes from outside mnemo (a host, a hook, a client), read so that no input can break
the reader: nesting is bounded, lone surrogates are repaired, and what is not JSON says why.

What other parsers refuse and this one repairs or refuses with a reason:

- **Lone surrogates** (``"\\ud800"``: JavaScript hosts emit them for an emoji split in two) are
  valid JSON to Python but not to pydantic's parser, and cannot be encoded as UTF-8 to a store or
  a socket. They become U+FFFD, in keys and values alike.
- **Nesting.** Python's parser raises RecursionError near 1,000 levels and pydantic's refuses 200;
  either would escape a caller that catches ValueError. Deeper than ``max_depth`` is refused — or,
  with ``cut_deeper``, each container that deep is replaced by the string :data:`CUT_NOTE`, so the
  rest of the document is kept (a hook's turn is recorded even when a tool answered absurdly).
- **Not JSON**: ``NaN``, ``Infinity`` and numbers beyond a float's range (Python reads them;
  JSON has none, and they could not be written back), bytes that are not UTF-8 (replaced by
  U+FFFD, as a text reader would), a leading byte-order mark (skipped).

Standard library only: the MCP relay (:mod:`mnemo.mcpserver.relay`) reads every line with it before the
SDK has loaded.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

MAX_DEPTH = 64
CUT_NOTE = "[… nested too deeply: cut by mnemo]"
_SURROGATE = re.compile("[\ud800-\udfff]")
# A JSON string, or a bracket: what decides nesting (a bracket inside a string does not count).
# The closing quote is optional, so an unterminated string is one token to the end: never scanned
# again from each of its escaped quotes (quadratic). Compiled on first use (re caches it).
_TOKEN = r'"[^"\\]*(?:\\.[^"\\]*)*"?|[\[\]{}]'


class JSONInputError(ValueError):
    """The input is not JSON this reader accepts; the message is the reason, for the sender."""


class TooDeepError(JSONInputError):
    """JSON, but nested deeper than the bound (``read_json(…, cut_deeper=True)`` reads it cut)."""


def read_json(
    data: bytes | str, *, max_depth: int = MAX_DEPTH, cut_deeper: bool = False, keep_surrogates: bool = False
) -> Any:
    """``data`` as a Python value: lone surrogates repaired (unless ``keep_surrogates``: to see
    what the sender wrote), nesting bounded by ``max_depth`` (deeper containers cut when
    ``cut_deeper``, else refused). Raises JSONInputError."""
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    text = text.removeprefix("\ufeff")
    try:
        value = _loads(text)
    except RecursionError:
        if not cut_deeper:
            raise TooDeepError(f"nested deeper than {max_depth} levels") from None
        try:
            value = _loads(_cut(text, max_depth))
        except RecursionError:
            raise JSONInputError("nested too deeply to read") from None
    except ValueError as exc:  # JSONDecodeError, or a JSONInputError from the hooks below
        raise JSONInputError(str(exc)) from None
    return _settled(value, max_depth, cut_deeper, _keep if keep_surrogates else _text)


def repaired_json(value: Any) -> str:
    """``value`` (as :func:`read_json` returns it) written back as compact JSON."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _loads(text: str) -> Any:
    return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float)


def _refuse_constant(name: str) -> Any:
    raise JSONInputError(f"{name} is not a JSON value")


def _finite_float(literal: str) -> float:
    number = float(literal)
    if math.isinf(number):
        raise JSONInputError(f"the number {literal[:40]} is out of range")
    return number


def _cut(text: str, max_depth: int) -> str:
    """``text`` with every container nested deeper than ``max_depth`` replaced by CUT_NOTE
    (for a text Python's parser cannot read at all; malformed text stays malformed)."""
    pieces: list[str] = []
    depth, kept_to, cut_from = 0, 0, -1
    for token in re.finditer(_TOKEN, text, re.DOTALL):
        char = token.group()
        if char in "[{":
            depth += 1
            if depth == max_depth + 1:
                cut_from = token.start()
        elif char in "]}":
            if depth == max_depth + 1 and cut_from >= 0:
                pieces += [text[kept_to:cut_from], json.dumps(CUT_NOTE)]
                kept_to, cut_from = token.end(), -1
            depth -= 1
    pieces.append(text[kept_to:])
    return "".join(pieces)


def _settled(value: Any, max_depth: int, cut_deeper: bool, text: Callable[[str], str]) -> Any:
    """``value`` with each string through ``text`` and nesting checked, walked without recursion."""
    if not isinstance(value, dict | list):
        return text(value) if isinstance(value, str) else value
    root: list[Any] = [value]
    stack: list[tuple[list[Any] | dict[str, Any], Any, int]] = [(root, 0, 0)]
    while stack:
        parent, key, depth = stack.pop()
        node = parent[key]
        if depth >= max_depth:  # node is a container at level depth + 1
            if not cut_deeper:
                raise TooDeepError(f"nested deeper than {max_depth} levels")
            parent[key] = CUT_NOTE
            continue
        if isinstance(node, list):
            for i, item in enumerate(node):
                if isinstance(item, str):
                    node[i] = text(item)
                elif isinstance(item, dict | list):
                    stack.append((node, i, depth + 1))
        elif isinstance(node, dict):
            if any(_SURROGATE.search(k) for k in node):
                node = parent[key] = {text(k): v for k, v in node.items()}
            for name, item in node.items():
                if isinstance(item, str):
                    node[name] = text(item)
                elif isinstance(item, dict | list):
                    stack.append((node, name, depth + 1))
    return root[0]


def _text(text: str) -> str:
    return _SURROGATE.sub("\ufffd", text) if _SURROGATE.search(text) else text


def _keep(text: str) -> str:
    return text
