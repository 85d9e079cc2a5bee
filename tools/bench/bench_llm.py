"""How fast OpenAI-compatible servers answer what the writer asks, interleaved A/B.

Each round sends every server, in turn, the same requests the writer makes: a judge question
(one token with top log-probabilities, on a prompt that differs from the previous one in its
last part, as the judge's steps do) and an extraction (a JSON answer on a longer transcript).
Printed per server: latency median and p95 of each kind, prompt tokens per second, and whether
the server gave log-probabilities at all (the judge needs them).

    python -m tools.bench.bench_llm --server native=http://127.0.0.1:8080/v1 \\
        --server python=http://127.0.0.1:8081/v1 --rounds 10 [--markdown]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any

import openai

from tools.stamp import stamp

QUESTION = (
    "EXISTING note: The load balancer cuts idle connections at {a} s, set in lb.tf.\n"
    "NEW note: The idle timeout of the load balancer is now {b} s so that large uploads finish.\n\n"
    "{q}\nAnswer with one word: yes or no."
)
STEPS = (
    "Are both notes about the same thing?",
    "Do both notes say the same thing, with the same values?",
    "Does the NEW note say that something changed?",
)
TRANSCRIPT = "\n".join(
    f"[ep_{i}] {'person (ana)' if i % 2 == 0 else 'assistant'}: "
    + (
        "Run the test suite again and tell me what fails."
        if i % 2 == 0
        else "42 passed, 1 failed: test_checkout_timeout."
    )
    for i in range(24)
)


def ask(client: openai.OpenAI, content: str, max_tokens: int, logprobs: bool) -> tuple[float, int, bool]:
    extra: dict[str, Any] = {"logprobs": True, "top_logprobs": 10} if logprobs else {}
    started = time.perf_counter()
    answer = client.chat.completions.create(
        model="local",
        messages=[{"role": "user", "content": content}],
        max_tokens=max_tokens,
        temperature=0,
        **extra,
    )
    seconds = time.perf_counter() - started
    choice = answer.choices[0]
    has = bool(choice.logprobs and choice.logprobs.content and choice.logprobs.content[0].top_logprobs)
    return seconds, answer.usage.prompt_tokens if answer.usage else 0, has


def p95(values: list[float]) -> float:
    return sorted(values)[max(0, round(0.95 * len(values)) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--server", action="append", required=True, help="NAME=URL (repeat for A/B)")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    servers = dict(s.split("=", 1) for s in args.server)
    clients = {
        name: openai.OpenAI(base_url=url, api_key="none", timeout=600) for name, url in servers.items()
    }
    judge: dict[str, list[float]] = {n: [] for n in servers}
    extract: dict[str, list[float]] = {n: [] for n in servers}
    rate: dict[str, list[float]] = {n: [] for n in servers}
    logprobs: dict[str, bool] = dict.fromkeys(servers, True)
    for r in range(args.rounds):
        for name, client in clients.items():
            for q in STEPS:
                seconds, tokens, has = ask(client, QUESTION.format(a=120 + r, b=600 + r, q=q), 1, True)
                judge[name].append(seconds)
                logprobs[name] &= has
            seconds, tokens, _ = ask(
                client, f"Round {r}. Transcript:\n{TRANSCRIPT}\nSummarise in one JSON object.", 64, False
            )
            extract[name].append(seconds)
            rate[name].append(tokens / seconds)
        print(f"\r  round {r + 1}/{args.rounds}", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    rows = [
        (
            name,
            f"{statistics.median(judge[name]) * 1000:.0f} / {p95(judge[name]) * 1000:.0f}",
            f"{statistics.median(extract[name]):.2f} / {p95(extract[name]):.2f}",
            f"{statistics.median(rate[name]):.0f}",
            "yes" if logprobs[name] else "no",
        )
        for name in servers
    ]
    header = (
        "server",
        "judge question ms p50 / p95",
        "extraction s p50 / p95",
        "extraction: prompt tokens ÷ request s",
        "logprobs",
    )
    if args.markdown:
        print(stamp())
        print("| " + " | ".join(header) + " |\n|" + "---|" * len(header))
        for row in rows:
            print("| " + " | ".join(row) + " |")
    else:
        for row in (header, *rows):
            print("  ".join(f"{c:<28}" for c in row))


if __name__ == "__main__":
    main()
