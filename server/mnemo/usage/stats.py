"""``mnemo stats``: what memory cost the sessions of a period and how much of it was used.

- tokens injected (the budget's estimate, :mod:`mnemo.usage.budget`) and memories injected;
- the share of what the sessions read that was memory: injected tokens over the input tokens of
  every model call in those sessions (cached ones included), read from the hosts' transcripts
  (:mod:`mnemo.transcripts`); sessions whose transcript is gone are left out of the share;
- prompts, how many got a block of memory, and the median block's tokens, for prompts and for
  session starts: what injection costs a turn;
- verdicts: used, clearly unused, unclear (:mod:`mnemo.usage.audit`);
- memories suppressed for the person, per workspace (:mod:`mnemo.usage.suppression`);
- per day, for the chart (:func:`render_html`): memories injected, used, clearly unused.
"""

from __future__ import annotations

import dataclasses
import html
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from statistics import median
from typing import TYPE_CHECKING

from mnemo import transcripts
from mnemo.api.stats import Stats, StatsDay, SuppressedMemory
from mnemo.usage import suppression
from mnemo.vocabulary import TRANSCRIPT_HOSTS

if TYPE_CHECKING:
    from mnemo.store import Store
    from mnemo.store.usage import SessionRow


@dataclass(frozen=True, slots=True)
class StoreFigures:
    days: list[StatsDay]
    sessions: list[SessionRow]
    injected: dict[str, int]  # tokens per session
    blocks: list[tuple[str, int]]  # (event, tokens) of each block injected into the sessions
    prompts: int  # the person's prompts in the sessions
    suppressed: list[SuppressedMemory]


def from_store(store: Store, person: str, since: datetime, until: datetime) -> StoreFigures:
    """The store's part (run where store calls run, one at a time)."""
    days = [
        StatsDay(day=d, injected=i, tokens=t, sessions=s, used=u, unused=n, unclear=c)
        for d, i, t, s, u, n, c in store.usage_by_day(person, since, until)
    ]
    sessions = store.sessions_between(person, since, until)
    injected = store.injected_tokens([s.id for s in sessions])
    blocks, prompts = store.blocks_and_prompts([s.id for s in sessions])
    found = [SuppressedMemory(**dataclasses.asdict(s)) for s in suppression.suppressed(store, person, until)]
    return StoreFigures(days, sessions, injected, blocks, prompts, found)


def gather(figures: StoreFigures, person: str, since: datetime, until: datetime) -> Stats:
    """Add the transcripts' part (files only: run off the store's thread)."""
    read = read_injected = found = 0
    for session in figures.sessions:
        path = Path(session.transcript) if session.transcript else None
        if path is None or not path.is_file() or session.client not in TRANSCRIPT_HOSTS:
            continue
        try:
            tokens = transcripts.read(session.client, path).tokens_read
        except OSError:
            continue
        found += 1
        read += tokens
        read_injected += figures.injected.get(session.id, 0)
    days = figures.days
    at_prompts = [tokens for event, tokens in figures.blocks if event == "UserPromptSubmit"]
    at_start = [tokens for event, tokens in figures.blocks if event == "SessionStart"]
    return Stats(
        since=since,
        until=until,
        person=person,
        sessions=len(figures.sessions),
        memories_injected=sum(d.injected for d in days),
        tokens_injected=sum(d.tokens for d in days),
        sessions_read=found,
        tokens_read=read,
        tokens_injected_read=read_injected,
        prompts=figures.prompts,
        prompts_injected=len(at_prompts),
        prompt_block_tokens=int(median(at_prompts)) if at_prompts else 0,
        start_blocks=len(at_start),
        start_block_tokens=int(median(at_start)) if at_start else 0,
        used=sum(d.used for d in days),
        unused=sum(d.unused for d in days),
        unclear=sum(d.unclear for d in days),
        suppressed=figures.suppressed,
        days=days,
    )


def render_html(stats: Stats) -> str:
    """A self-contained page: memories injected versus used (and clearly unused) per day, as SVG."""
    first, last = stats.since.date(), (stats.until - timedelta(microseconds=1)).date()
    by_day = {d.day: d for d in stats.days}
    days = [first + timedelta(days=n) for n in range((last - first).days + 1)]
    top = max([1, *(d.injected for d in stats.days)])
    width, height, left, bottom = max(600, 14 * len(days) + 80), 320, 50, 40
    step = (width - left - 20) / max(1, len(days))
    scale = (height - bottom - 20) / top
    bars = []
    for n, day in enumerate(days):
        d = by_day.get(day)
        x = left + n * step
        for offset, value, colour, label in (
            (0.0, d.injected if d else 0, "#9db4d6", "injected"),
            (0.34, d.used if d else 0, "#3a8f4c", "used"),
            (0.67, d.unused if d else 0, "#c0504d", "clearly unused"),
        ):
            if value:
                y = height - bottom - value * scale
                bars.append(
                    f'<rect x="{x + offset * step:.1f}" y="{y:.1f}" width="{step * 0.3:.1f}" '
                    f'height="{value * scale:.1f}" fill="{colour}">'
                    f"<title>{day}: {value} {label}</title></rect>"
                )
        if len(days) <= 31 or n % 7 == 0:
            bars.append(
                f'<text x="{x + step / 2:.1f}" y="{height - bottom + 14}" font-size="9" '
                f'text-anchor="middle">{day:%m-%d}</text>'
            )
    axis = (
        f'<line x1="{left}" y1="{height - bottom}" x2="{width - 10}" y2="{height - bottom}" stroke="#444"/>'
        f'<text x="{left - 6}" y="{height - bottom - top * scale + 4:.1f}" font-size="10" '
        f'text-anchor="end">{top}</text>'
        f'<text x="{left - 6}" y="{height - bottom + 4}" font-size="10" text-anchor="end">0</text>'
    )
    share = "n/a (no transcripts found)" if stats.memory_share is None else f"{stats.memory_share:.4%}"
    summary = (
        f"{stats.sessions} sessions; {stats.memories_injected} memories injected "
        f"({stats.tokens_injected:,} tokens); "
        f"used {stats.used}, clearly unused {stats.unused}, unclear {stats.unclear}; "
        f"memory share of what sessions read: {share}; suppressed: {len(stats.suppressed)}"
    )
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>mnemo: memory injected vs used</title></head>
<body style="font-family: sans-serif">
<h1>mnemo: memory injected vs used</h1>
<p>{html.escape(f"{stats.since:%Y-%m-%d} to {last:%Y-%m-%d} (UTC), person {stats.person}")}</p>
<p>{html.escape(summary)}</p>
<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img"
     aria-label="memories injected, used and clearly unused per day">{axis}{"".join(bars)}</svg>
<p><span style="color:#9db4d6">&#9632;</span> injected &nbsp; <span style="color:#3a8f4c">&#9632;</span> used
&nbsp; <span style="color:#c0504d">&#9632;</span> clearly unused (memories per day)</p>
</body></html>
"""
