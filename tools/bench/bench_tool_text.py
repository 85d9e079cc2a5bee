"""What the model reads of a `recall`: characters (and tokens) per recalled memory.

Three forms of the same answer, each made by the code that makes it:
- *JSON text*: the text content the MCP SDK made of a returned result before mnemo wrote its own
  (the SDK's ``_convert_to_content``: indented JSON, every field) — what MCP Inspector showed;
- *structured*: the result's ``structuredContent`` as Claude Code and Codex hand it to the model
  in place of the text (compact JSON, every field) — what the hosts' models read before;
- *line*: what the tool answers now (``mnemo.mcpserver.text.recall_text``).

Memories come from bench_recall's generator (decisions, facts, procedures… with who, where, why;
one in ten closed) in answers of ``--per-answer`` hits, plus the 102-character example the issue
measured. *Set fields* are the texts a memory holds (content, who, when, where, why, how, and what
when it differs from the content); the ratio is per memory, line over set fields. ``--tokenizer``
points at a ``tokenizer.json`` (e.g. EmbeddingGemma's, the Gemma tokenizer) to count tokens too.

    uv run --frozen python -m tools.bench.bench_tool_text [--memories 2000] [--tokenizer DIR/tokenizer.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
from datetime import UTC, datetime
from pathlib import Path

from mcp.server.mcpserver.utilities.func_metadata import _convert_to_content

from mnemo.api.recall import MemoryHit, RecallResult
from mnemo.mcpserver.text import recall_text
from mnemo.memories import Memory, Origin
from mnemo.vocabulary import MemoryStatus, MemoryType
from tools.bench.bench_recall import generate


def set_chars(memory: Memory) -> int:
    texts = [memory.content, memory.who, memory.when, memory.where, memory.why, memory.how]
    return sum(map(len, texts)) + (len(memory.what) if memory.what != memory.content else 0)


def forms(hits: list[MemoryHit]) -> dict[str, str]:
    result = RecallResult(memories=hits, episodes=[])
    [block] = _convert_to_content(result)
    structured = json.dumps(result.model_dump(mode="json", by_alias=True), separators=(",", ":"))
    return {"JSON text": getattr(block, "text", ""), "structured": structured, "line": recall_text(result)}


def example() -> Memory:
    at = datetime(2026, 11, 3, tzinfo=UTC)
    return Memory(
        id="mem_01a2367bd65c737afe4459",
        version=1,
        type=MemoryType.DECISION,
        status=MemoryStatus.ACTIVE,
        namespace="workspace:github.com/shop/api",
        content="The gateway timeout was raised to 600 s for streams",
        what="The gateway timeout was raised to 600 s for streams",
        who="",
        when="",
        where="",
        why="the load balancer cut long SSE streams at 120 s, mid-answer",
        how="",
        entities=[],
        sources=["ep_01a2367bd6382fc8c5f9fa"],
        origin=Origin.EXPLICIT,
        created_at=at,
        updated_at=at,
        valid_from=at,
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--memories", type=int, default=2_000)
    p.add_argument("--per-answer", type=int, default=10, help="hits per recall answer (default 10)")
    p.add_argument("--tokenizer", type=Path, help="a tokenizer.json to count tokens with")
    args = p.parse_args()
    count = None
    if args.tokenizer:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(args.tokenizer))

        def count(text: str) -> int:
            return len(tokenizer.encode(text, add_special_tokens=False).ids)

    one = example()
    print(f"the example: content + why = {set_chars(one)} characters")
    for name, text in forms([MemoryHit(score=1.05, memory=one)]).items():
        tokens = f", {count(text)} tokens" if count else ""
        print(f"  {name:<10} {len(text):>6,} characters{tokens}")

    memories, _, _ = generate(args.memories)
    totals: dict[str, list[float]] = {}
    token_totals: dict[str, list[float]] = {}
    ratios = []
    for start in range(0, len(memories), args.per_answer):
        chunk = memories[start : start + args.per_answer]
        hits = [MemoryHit(score=1.0, memory=m) for m in chunk]
        for name, text in forms(hits).items():
            totals.setdefault(name, []).append(len(text) / len(chunk))
            if count:
                token_totals.setdefault(name, []).append(count(text) / len(chunk))
        for memory in chunk:
            line = recall_text(RecallResult(memories=[MemoryHit(score=1.0, memory=memory)], episodes=[]))
            ratios.append(len(line.splitlines()[1]) / set_chars(memory))
    print(f"\n{len(memories):,} generated memories, answers of {args.per_answer}: per recalled memory")
    print("| form | characters, median (max) | tokens, median (max) |")
    print("|---|---|---|")
    for name, values in totals.items():
        tokens = (
            f"{statistics.median(token_totals[name]):,.0f} ({max(token_totals[name]):,.0f})" if count else "—"
        )
        print(f"| {name} | {statistics.median(values):,.0f} ({max(values):,.0f}) | {tokens} |")
    ratios.sort()
    print(
        f"\nline / set fields per memory: median {statistics.median(ratios):.2f}, "
        f"p95 {ratios[int(0.95 * (len(ratios) - 1))]:.2f}, max {ratios[-1]:.2f}"
    )


if __name__ == "__main__":
    main()
