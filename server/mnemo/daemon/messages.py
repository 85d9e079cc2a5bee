"""Requests in and answers out, as the API's models: one body parser (with its size cap and its
errors), one query-number reader and one serialiser, for the API's routes and the review page's.
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import Response

from mnemo.errors import InputError, describe_validation_error

M = TypeVar("M", bound=BaseModel)
MAX_BODY_BYTES = 64 * 1024 * 1024


async def parse(request: Request, model: type[M]) -> M:
    """The request's JSON body as ``model`` (an empty body: ``{}``); InputError when it is not."""
    body = await request.body()
    if len(body) > MAX_BODY_BYTES:
        raise InputError(f"request body of {len(body):,} bytes is over the {MAX_BODY_BYTES:,} byte limit")
    try:
        return model.model_validate_json(body or b"{}")
    except ValidationError as exc:
        raise InputError(describe_validation_error(exc)) from None


def whole_number(request: Request, name: str, default: int, highest: int) -> int:
    """Query parameter ``name`` as a whole number from 1 to ``highest`` (``default`` when absent)."""
    try:
        value = int(request.query_params.get(name, str(default)))
    except ValueError:
        raise InputError(f"{name}: must be a whole number") from None
    if not 1 <= value <= highest:
        raise InputError(f"{name}: must be between 1 and {highest:,}")
    return value


def answer(model: BaseModel) -> Response:
    """``model`` as a JSON answer."""
    # Serialised by pydantic-core straight to bytes: a third of the time of model_dump + json.dumps
    # (0.06 against 0.17 ms for a recall answer of 10 memories).
    return Response(model.model_dump_json(), media_type="application/json")
