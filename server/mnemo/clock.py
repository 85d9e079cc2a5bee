"""Timestamps as the store keeps them: aware UTC, millisecond precision.

Rounding on the way in keeps what a call returns identical to what a later read returns.
"""

from datetime import UTC, datetime


def as_stored(value: datetime) -> datetime:
    """``value`` as aware UTC at millisecond precision; a naive value is taken as UTC. ValueError
    (which a validator reports as the field's error) when UTC falls outside years 1–9999."""
    try:
        value = value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
    except OverflowError:
        raise ValueError("the time in UTC falls outside the years 1 to 9999") from None
    return value.replace(microsecond=value.microsecond // 1000 * 1000)


def utc_now() -> datetime:
    return as_stored(datetime.now(UTC))
