"""Tokens and calls spent on language models per UTC day and per model, the daily caps, the pace.

Every call's usage is one row in the store (``model_usage``), so the meter survives restarts and
`mnemo status` shows it. Before a call, :meth:`TokenMeter.check` refuses once the day's total
(prompt + completion, all models) has reached ``llm_daily_token_cap``, or its calls
``llm_daily_call_cap``: the call that crosses the token cap is let through whole (its size is
unknown until it returns), the next one waits. Work resumes at 00:00 UTC. Then it keeps the pace
(``llm_calls_per_minute``): it waits until the call is at least 60/pace seconds after the one
before, so a backlog (a first import, a long pause) is worked through at that pace, never in a
burst. The caps and the pace hold for every backend (:mod:`mnemo.distill.backends`). The clock and
the sleep are injectable for tests.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from mnemo.clock import utc_now
from mnemo.errors import TokenCapError
from mnemo.store import ModelUsage, Store


@dataclass(frozen=True, slots=True)
class Spend:
    """One day's spend and where it stands against the cap (cap 0: none)."""

    day: date
    by_model: list[ModelUsage]
    cap: int
    call_cap: int = 0

    @property
    def tokens(self) -> int:
        return sum(u.tokens for u in self.by_model)

    @property
    def calls(self) -> int:
        return sum(u.calls for u in self.by_model)

    @property
    def is_capped(self) -> bool:
        return (self.cap > 0 and self.tokens >= self.cap) or (0 < self.call_cap <= self.calls)

    @property
    def resumes_at(self) -> datetime | None:
        """When work may resume, if the cap is reached: the next UTC midnight."""
        if not self.is_capped:
            return None
        return datetime.combine(self.day + timedelta(days=1), datetime.min.time(), tzinfo=utc_now().tzinfo)


class TokenMeter:
    def __init__(
        self,
        store: Store,
        cap: int,
        clock: Callable[[], datetime] = utc_now,
        *,
        call_cap: int = 0,
        per_minute: float = 0.0,
        sleep: Callable[[float], object] = time.sleep,
    ) -> None:
        self._store = store
        self._cap = cap
        self._call_cap = call_cap
        self._gap_s = 60.0 / per_minute if per_minute > 0 else 0.0
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._day: date | None = None
        self._spent = 0  # today's tokens: read from the store once a day, then added to locally
        self._calls = 0  # today's calls, likewise
        self._next_at = 0.0  # time.monotonic() before which the pace lets no call start

    def today(self) -> Spend:
        day = self._clock().date()
        return Spend(day, self._store.model_usage(day), self._cap, self._call_cap)

    def check(self) -> None:
        """Raise TokenCapError if today's token or call cap is spent; else wait for the pace."""
        if self._cap > 0 or self._call_cap > 0:
            with self._lock:
                spent, calls = self._spent_today()
            if (self._cap > 0 and spent >= self._cap) or (0 < self._call_cap <= calls):
                spend = self.today()
                raise TokenCapError(
                    f"today's language model budget is spent ({spend.tokens:,} tokens{self._of(self._cap)}, "
                    f"{spend.calls:,} calls{self._of(self._call_cap)}; settings llm_daily_token_cap, "
                    f"llm_daily_call_cap); model work resumes at {spend.resumes_at:%Y-%m-%d %H:%M} UTC",
                    spend.resumes_at,
                )
        if self._gap_s:
            with self._lock:  # calls on several threads take their turns in order
                wait_s = self._next_at - time.monotonic()
                self._next_at = max(self._next_at, time.monotonic()) + self._gap_s
            if wait_s > 0:
                self._sleep(wait_s)

    @staticmethod
    def _of(cap: int) -> str:
        return f" of {cap:,}" if cap > 0 else ""

    def record(self, model: str, purpose: str, prompt_tokens: int, completion_tokens: int) -> None:
        with self._lock:
            self._spent_today()  # today's totals as stored before this call's row
            self._store.add_model_usage(self._clock(), model, purpose, prompt_tokens, completion_tokens)
            self._spent += prompt_tokens + completion_tokens
            self._calls += 1

    def _spent_today(self) -> tuple[int, int]:
        day = self._clock().date()
        if day != self._day:
            self._day = day
            usage = self._store.model_usage(day)
            self._spent = sum(u.tokens for u in usage)
            self._calls = sum(u.calls for u in usage)
        return self._spent, self._calls
