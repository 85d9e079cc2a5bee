"""pydantic's validation, with what it refuses said as :class:`~mnemo.errors.InputError`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from mnemo.errors import InputError
from mnemo.jsonread import JSONInputError, read_json, repaired_json

M = TypeVar("M", bound=BaseModel)


def describe_validation_error(exc: ValidationError) -> str:
    """One line naming each offending field and what is wrong with it."""
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "input"
        # A lone surrogate: on a command line, bytes the terminal's encoding did not decode.
        is_unicode = error["type"] == "string_unicode"
        message = "holds text that is not valid Unicode" if is_unicode else error["msg"]
        parts.append(f"{where}: {message}")
    return "; ".join(parts)


def validated_json(model: type[M], data: bytes | str) -> M:
    """``model`` read from the JSON ``data``, or InputError naming the fields. What pydantic's
    parser refuses as JSON is read again as outside JSON (:mod:`mnemo.jsonread`: a lone surrogate
    repaired; too deep, or not JSON, said so) before the fields are checked."""
    try:
        return model.model_validate_json(data)
    except ValidationError as exc:
        if not any(error["type"] == "json_invalid" for error in exc.errors()):
            raise InputError(describe_validation_error(exc)) from None
    try:
        value = read_json(data)
    except JSONInputError as exc:
        raise InputError(f"not a JSON object ({exc})") from None
    try:
        return model.model_validate_json(repaired_json(value))
    except ValidationError as exc:
        raise InputError(describe_validation_error(exc)) from None


def validated(model: type[M], values: Mapping[str, object]) -> M:
    """``model`` built from ``values`` (None values left to defaults), or InputError naming the fields."""
    try:
        return model.model_validate({k: v for k, v in values.items() if v is not None})
    except ValidationError as exc:
        raise InputError(describe_validation_error(exc)) from None
