"""Tokens spent on language models per UTC day and per model, and the daily cap.

Every call's usage is one row in the store (``model_usage``), so the meter survives restarts and
`mnemo status` shows it. Before a call, :meth:`TokenMeter.check` refuses once the day's total
(prompt + completion, all models) has reached ``llm_daily_token_cap``: the call that crosses the
cap is let through whole (its size is unknown until it returns), the next one waits. Work resumes
at 00:00 UTC. The clock is injectable for tests.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from mnemo.clock import utc_now
from mnemo.errors import TokenCapError
from mnemo.store import ModelUsage, Store


@dataclass(frozen=True, slots=True)
class Spend:
    """One day's spend and where it stands against the cap (cap 0: none)."""

    day: date
    by_model: list[ModelUsage]
    cap: int

    @property
    def tokens(self) -> int:
        return sum(u.tokens for u in self.by_model)

    @property
    def is_capped(self) -> bool:
        return self.cap > 0 and self.tokens >= self.cap

    @property
    def resumes_at(self) -> datetime | None:
        """When work may resume, if the cap is reached: the next UTC midnight."""
        if not self.is_capped:
            return None
        return datetime.combine(self.day + timedelta(days=1), time(0), tzinfo=utc_now().tzinfo)


class TokenMeter:
    def __init__(self, store: Store, cap: int, clock: Callable[[], datetime] = utc_now) -> None:
        self._store = store
        self._cap = cap
        self._clock = clock
        self._lock = threading.Lock()
        self._day: date | None = None
        self._spent = 0  # today's tokens: read from the store once a day, then added to locally

    def today(self) -> Spend:
        day = self._clock().date()
        return Spend(day, self._store.model_usage(day), self._cap)

    def check(self) -> None:
        """Raise TokenCapError if today's cap is spent."""
        if self._cap <= 0:
            return
        with self._lock:
            spent = self._spent_today()
        if spent >= self._cap:
            spend = self.today()
            raise TokenCapError(
                f"today's language model budget is spent ({spend.tokens:,} of {self._cap:,} tokens, "
                f"setting llm_daily_token_cap); model work resumes at {spend.resumes_at:%Y-%m-%d %H:%M} UTC"
            )

    def record(self, model: str, purpose: str, prompt_tokens: int, completion_tokens: int) -> None:
        with self._lock:
            self._spent_today()  # today's total as stored before this call's row
            self._store.add_model_usage(self._clock(), model, purpose, prompt_tokens, completion_tokens)
            self._spent += prompt_tokens + completion_tokens

    def _spent_today(self) -> int:
        day = self._clock().date()
        if day != self._day:
            self._day = day
            self._spent = sum(u.tokens for u in self._store.model_usage(day))
        return self._spent
