"""Timestamps as the store keeps them: UTC, millisecond precision.

Rounding at creation keeps what a call returns identical to what a later read returns.
"""

from datetime import UTC, datetime


def utc_now() -> datetime:
    now = datetime.now(UTC)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)
