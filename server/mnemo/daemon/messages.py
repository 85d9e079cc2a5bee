"""Requests in and answers out, as the API's models: one body parser (with its size cap and its
errors), one query-number reader and one serialiser, for the API's routes and the review page's.
"""

from __future__ import annotations

import re
from typing import TypeVar

from pydantic import BaseModel
from starlette.requests import Request
from starlette.responses import Response

from mnemo.api import MAX_BODY_BYTES
from mnemo.errors import InputError, TooLargeError
from mnemo.validation import validated_json

M = TypeVar("M", bound=BaseModel)


async def read_body(request: Request, max_bytes: int) -> bytes:
    """The request's body; TooLargeError past ``max_bytes``, known from its Content-Length before
    any of it is read, else as soon as it streams past."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise TooLargeError(_too_large(int(declared), max_bytes))
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise TooLargeError(_too_large(size, max_bytes, is_partial=True))
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(size: int, max_bytes: int, *, is_partial: bool = False) -> str:
    more = " and more" if is_partial else ""
    return f"a request body of {size:,} bytes{more} is over the {max_bytes:,} byte limit; nothing was stored"


async def parse(request: Request, model: type[M]) -> M:
    """The request's JSON body as ``model`` (an empty body: ``{}``); InputError when it is not."""
    return validated_json(model, await read_body(request, MAX_BODY_BYTES) or b"{}")


def whole_number(request: Request, name: str, default: int, highest: int) -> int:
    """Query parameter ``name`` as a whole number from 1 to ``highest`` (``default`` when absent)."""
    try:
        value = int(request.query_params.get(name, str(default)))
    except ValueError:
        raise InputError(f"{name}: must be a whole number") from None
    if not 1 <= value <= highest:
        raise InputError(f"{name}: must be between 1 and {highest:,}")
    return value


def matching(request: Request, name: str, pattern: str, shape: str) -> str | None:
    """Query parameter ``name`` when it matches ``pattern`` (None when absent or empty)."""
    value = request.query_params.get(name) or None
    if value is not None and not re.fullmatch(pattern, value):  # "$" alone passes a final newline
        raise InputError(f"{name}: must be {shape}, not {value[:130]!r}")
    return value


def answer(model: BaseModel) -> Response:
    """``model`` as a JSON answer."""
    # Serialised by pydantic-core straight to bytes, without model_dump's Python objects between.
    return Response(model.model_dump_json(), media_type="application/json")
