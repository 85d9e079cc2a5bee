"""How well mnemo.secrets finds credentials, and what it takes that is not one.

Over tests/data/secrets.jsonl (made-up credentials in prose, tool output, .env, YAML, JSON, headers
and URLs) it prints, per kind, how many were redacted completely (no part of the value left in
clear); over tests/data/secret_lookalikes.jsonl (hashes, UUIDs, digests, inline images, references
to a secret) how many were changed — the false-positive rate — with each one shown. Then the cost:
redaction time per KB of a long tool output (median and p95 of 50 runs).

    python -m tools.evals.secrets_check
"""

from __future__ import annotations

import json
import statistics
import time
from collections import Counter

from mnemo.secrets import redact
from tools import REPO

DATA = REPO / "tests" / "data"


def _clear_parts(secret: str) -> list[str]:
    return [secret, *(line for line in secret.splitlines() if len(line) >= 12 and "-----" not in line)]


def main() -> None:
    secrets = [json.loads(line) for line in (DATA / "secrets.jsonl").read_text().splitlines()]
    lookalikes = [json.loads(line) for line in (DATA / "secret_lookalikes.jsonl").read_text().splitlines()]

    total: Counter[str] = Counter()
    caught: Counter[str] = Counter()
    for case in secrets:
        out = redact(case["text"])
        total[case["kind"]] += 1
        if not any(part in out for part in _clear_parts(case["secret"])):
            caught[case["kind"]] += 1
        else:
            print(f"MISSED {case['kind']} ({case['where']}): {out[:160]!r}")
    print(f"{'kind':<20} redacted")
    for kind in sorted(total):
        print(f"{kind:<20} {caught[kind]}/{total[kind]}")
    print(
        f"secrets redacted: {sum(caught.values())}/{len(secrets)} "
        f"({100 * sum(caught.values()) / len(secrets):.1f} %)"
    )

    changed = 0
    for case in lookalikes:
        out = redact(case["text"])
        if out != case["text"]:
            changed += 1
            print(f"FALSE POSITIVE {case['kind']}: {out[:160]!r}")
    rate = 100 * changed / len(lookalikes)
    print(f"look-alikes changed (false positives): {changed}/{len(lookalikes)} ({rate:.1f} %)")

    # A long tool output: a build log with paths, hashes and a few secrets in it.
    lines = [case["text"] for case in secrets + lookalikes] * 20
    text = "\n".join(lines)
    kb = len(text.encode()) / 1024
    p50, p95 = _redaction_ms(text)
    print(f"redaction of a {kb:,.0f} KB output ({len(lines):,} lines): p50 {p50:.1f} ms, p95 {p95:.1f} ms")
    print(f"per KB: p50 {p50 / kb:.3f} ms, p95 {p95 / kb:.3f} ms")
    prose = "We moved the gateway to eu-west-1 because the latency to the payments API halved.\n" * 400
    p50, p95 = _redaction_ms(prose)
    kb = len(prose.encode()) / 1024
    print(f"redaction of {kb:,.0f} KB of plain prose (nothing to find): p50 {p50:.1f} ms, p95 {p95:.1f} ms")


def _redaction_ms(text: str, runs: int = 50) -> tuple[float, float]:
    """Median and p95 of ``runs`` redactions of ``text``, in ms."""
    timings = []
    for _ in range(runs):
        started = time.perf_counter()
        redact(text)
        timings.append((time.perf_counter() - started) * 1000)
    timings.sort()
    return statistics.median(timings), timings[int(0.95 * len(timings)) - 1]


if __name__ == "__main__":
    main()
