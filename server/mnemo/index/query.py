"""Question analysis by rules, English and Spanish: the W asked, dates, history intent, terms.

No model is called. The result is a plain value that the index's scoring reads; the entities a
question names are found by the index's automaton (:mod:`mnemo.index.entities`), not here.
Dates are resolved against the question's time, as whole days in UTC: "yesterday", "last
Tuesday", "el martes pasado", "hace 3 días", "last week", "2026-11-24", "24 May 2023",
"el 24 de mayo".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from enum import StrEnum

from mnemo.index.text import Language, fold, query_terms


class Asked(StrEnum):
    """Which of the six W a question asks about."""

    WHY = "why"
    HOW = "how"
    WHO = "who"
    WHEN = "when"
    WHERE = "where"
    WHAT = "what"


@dataclass(frozen=True, slots=True)
class DateRange:
    """A half-open UTC interval [start, end)."""

    start: datetime
    end: datetime

    def contains(self, moment: datetime) -> bool:
        return self.start <= moment < self.end


@dataclass(frozen=True, slots=True)
class Analysis:
    text: str
    language: Language
    terms: tuple[str, ...]
    asked: Asked | None
    dates: DateRange | None
    is_history: bool


# First match wins, so the more specific phrases come first ("how come" is a why).
_ASKED_PATTERNS: tuple[tuple[Asked, re.Pattern[str]], ...] = tuple(
    (asked, re.compile(pattern))
    for asked, pattern in (
        (Asked.WHY, r"\b(why|how come|what for|reason|por que|porque|para que|motivo|razon)\b"),
        (Asked.WHEN, r"\b(when|what (day|date|time|year|month)|cuando|que (dia|fecha|hora|ano|mes))\b"),
        (Asked.WHERE, r"\b(where|which (file|repo|host|server|directory)|donde|en que (archivo|repo))\b"),
        (Asked.WHO, r"\b(who|whom|whose|quien|quienes)\b"),
        (Asked.HOW, r"\b(how|como|de que manera)\b"),
        (Asked.WHAT, r"\b(what|which|que|cual|cuales)\b"),
    )
)

_HISTORY_RE = re.compile(
    r"\b(used to|did \w+ use to|previous(ly)?|formerly|earlier|originally|at first|no longer|anymore|"
    r"history|old|changed|solia(mos|n)?|usaba(mos|n)?|anterior(es|mente)?|previamente|"
    r"ya no|al principio|originalmente|historial|cambio|cambiamos)\b"
    # "before" and "antes" ask for the past when they end the question or point back ("before
    # that", "antes de eso"); "before deploying", "antes de un release" only say when.
    r"|\b(before|antes)(?=\s*(?:[?.!,;)]|$|that\b|then\b|this\b|de eso\b|de esto\b|de ese\b|de este\b))"
)

_WEEKDAYS = {
    **{name: i for i, name in enumerate(("monday", "tuesday", "wednesday", "thursday", "friday"))},
    "saturday": 5,
    "sunday": 6,
    **{name: i for i, name in enumerate(("lunes", "martes", "miercoles", "jueves", "viernes"))},
    "sabado": 5,
    "domingo": 6,
}
_MONTHS = {
    name: i + 1
    for names in (
        ("january", "february", "march", "april", "may", "june", "july", "august", "september",
         "october", "november", "december"),
        ("enero", "febrero", "marzo", "abril", "mayo", "junio", "julio", "agosto", "septiembre",
         "octubre", "noviembre", "diciembre"),
    )
    for i, name in enumerate(names)
}  # fmt: skip
_MONTHS.update({name[:3]: number for name, number in list(_MONTHS.items()) if len(name) > 3})
_MONTHS["sept"] = _MONTHS["setiembre"] = 9

_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
_MONTH = r"(?P<month>" + "|".join(sorted(_MONTHS, key=len, reverse=True)) + r")"
_YEAR = r"(?P<year>\d{4})"
_NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "un": 1, "una": 1, "uno": 1, "dos": 2, "tres": 3, "cuatro": 4, "cinco": 5, "seis": 6, "siete": 7,
}  # fmt: skip
_COUNT = r"(\d{1,3}|" + "|".join(_NUMBER_WORDS) + r")"

# Each rule: a pattern over the folded question, and how its match becomes a range of days.
_ISO_RE = re.compile(r"\b(?P<year>\d{4})-(?P<month>\d{2})-(?P<day>\d{2})\b")
_DAY_MONTH_RE = re.compile(rf"\b{_DAY}(?: de)? {_MONTH}\.?(?:,? (?:de |del )?{_YEAR})?\b")
_MONTH_DAY_RE = re.compile(rf"\b{_MONTH}\.? {_DAY}(?:,? {_YEAR})?\b")
_AGO_RE = re.compile(rf"\b(?:{_COUNT} (days?|weeks?) ago|hace {_COUNT} (dias?|semanas?))\b")
_LAST_WEEKDAY_RE = re.compile(
    r"\b(?:last (?P<en>"
    + "|".join(list(_WEEKDAYS)[:7])
    + r")|(?:el )?(?P<es>"
    + "|".join(list(_WEEKDAYS)[7:])
    + r") pasado)\b"
)
_ON_WEEKDAY_RE = re.compile(r"\b(?:on|this|el) (?P<day>" + "|".join(_WEEKDAYS) + r")\b")
_SIMPLE_RELATIVE: tuple[tuple[re.Pattern[str], int, int], ...] = (
    # (pattern, first day offset, number of days) relative to the question's day.
    (re.compile(r"\b(day before yesterday|anteayer|antier)\b"), -2, 1),
    (re.compile(r"\b(yesterday|ayer)\b"), -1, 1),
    (re.compile(r"\b(today|this morning|tonight|hoy|esta manana|esta tarde)\b"), 0, 1),
)
_LAST_WEEK_RE = re.compile(r"\b(last week|la semana pasada)\b")
_THIS_WEEK_RE = re.compile(r"\b(this week|esta semana)\b")
_LAST_MONTH_RE = re.compile(r"\b(last month|el mes pasado)\b")


def _whole_days(first: date, days: int) -> DateRange:
    start = datetime.combine(first, time(), tzinfo=UTC)
    return DateRange(start, start + timedelta(days=days))


def _valid_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def _absolute_date(folded: str, today: date) -> DateRange | None:
    for pattern in (_ISO_RE, _DAY_MONTH_RE, _MONTH_DAY_RE):
        match = pattern.search(folded)
        if match is None:
            continue
        month = match.group("month")
        month_number = int(month) if month.isdigit() else _MONTHS[month]
        year = int(match.group("year")) if match.group("year") else today.year
        found = _valid_date(year, month_number, int(match.group("day")))
        if found is not None and match.group("year") is None and found > today:
            found = _valid_date(year - 1, month_number, found.day)  # "on 24 May" is the last one
        if found is not None:
            return _whole_days(found, 1)
    return None


def resolve_dates(question: str, now: datetime) -> DateRange | None:
    """The day range a question mentions, resolved against ``now`` (UTC days), or None."""
    folded = fold(question)
    today = now.astimezone(UTC).date()
    absolute = _absolute_date(folded, today)
    if absolute is not None:
        return absolute
    for pattern, offset, days in _SIMPLE_RELATIVE:
        if pattern.search(folded):
            return _whole_days(today + timedelta(days=offset), days)
    if match := _AGO_RE.search(folded):
        count_text, unit = (match.group(1), match.group(2)) if match.group(1) else match.group(3, 4)
        count = int(count_text) if count_text.isdigit() else _NUMBER_WORDS[count_text]
        days = count * 7 if unit.startswith(("week", "semana")) else count
        return _whole_days(today - timedelta(days=days), 7 if unit.startswith(("week", "semana")) else 1)
    if match := _LAST_WEEKDAY_RE.search(folded):
        weekday = _WEEKDAYS[match.group("en") or match.group("es")]
        back = (today.weekday() - weekday) % 7 or 7
        return _whole_days(today - timedelta(days=back), 1)
    if _LAST_WEEK_RE.search(folded):
        monday = today - timedelta(days=today.weekday() + 7)
        return _whole_days(monday, 7)
    if _THIS_WEEK_RE.search(folded):
        return _whole_days(today - timedelta(days=today.weekday()), 7)
    if _LAST_MONTH_RE.search(folded):
        first_this_month = today.replace(day=1)
        first_last_month = (first_this_month - timedelta(days=1)).replace(day=1)
        return _whole_days(first_last_month, (first_this_month - first_last_month).days)
    if match := _ON_WEEKDAY_RE.search(folded):
        # "on Tuesday" / "el martes" in a question about the past: the most recent one.
        back = (today.weekday() - _WEEKDAYS[match.group("day")]) % 7
        return _whole_days(today - timedelta(days=back), 1)
    return None


def asked_w(question: str) -> Asked | None:
    folded = fold(question)
    for asked, pattern in _ASKED_PATTERNS:
        if pattern.search(folded):
            return asked
    return None


def is_history_question(question: str) -> bool:
    return _HISTORY_RE.search(fold(question)) is not None


def analyse(question: str, now: datetime) -> Analysis:
    """Everything the rules can tell about ``question``, asked at ``now``."""
    found_terms, language = query_terms(question)
    return Analysis(
        text=question,
        language=language,
        terms=tuple(found_terms),
        asked=asked_w(question),
        dates=resolve_dates(question, now),
        is_history=is_history_question(question),
    )
