"""Evidence recall on LoCoMo (dev split) through mnemo's own import and recall — no LLM.

Each conversation is written as a JSONL file and loaded with ``mnemo import`` into its own
namespace (``workspace:locomo-<sample>``), one episode per dialog turn, the session's date as the
episode time and the speaker as who. Every question is then asked through the daemon's
``recall_episode`` with a query, narrowed to its conversation's namespace, and the returned turns
are compared with the question's evidence turns.

Metrics, per category and overall, at k = 1, 5, 10, 25, 50:
- recall (the LoCoMo paper's): the share of a question's evidence turns among the top k;
- recall_any: 1 when at least one evidence turn is in the top k;
- recall_all: 1 when all of them are.

    python -m tools.evals.eval_locomo --data DIR                # every installed embedder, and BM25 alone
    python -m tools.evals.eval_locomo --data DIR --embedder mnemo-fallback --markdown

The data (CC BY-NC 4.0) is read from the directory ``--data`` names and never copied into the
repository.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

import anyio

from mnemo.api.recall import RecallEpisodeRequest
from mnemo.client.launcher import stop_daemon
from mnemo.client.typed import DaemonClient
from mnemo.config import load_settings
from mnemo.embed import installed_models

KS = (1, 5, 10, 25, 50)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}


def episode_id(sample: str, dia_id: str) -> str:
    return f"locomo.{sample}.{dia_id}".replace(":", "-")


def session_time(text: str) -> datetime:
    # "1:56 pm on 8 May, 2023"
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def turn_text(turn: dict) -> str:
    """A dialog turn's text, with the caption of a shared image when there is one."""
    if turn.get("blip_caption"):
        return f"{turn['text']} [shares a photo: {turn['blip_caption']}]"
    return str(turn["text"])


def import_record(turn: dict, *, with_turns: bool = True) -> dict:
    """A LoCoMo turn as a line of ``mnemo import``: an episode in its conversation's workspace."""
    return {
        "id": episode_id(turn["sample_id"], turn["dia_id"]),
        "session": f"{turn['sample_id']}-s{turn['session']}",
        "time": session_time(turn["session_date_time"]).isoformat(),
        "who": turn["speaker"],
        "role": "user",
        "kind": "prompt",
        "text": turn_text(turn),
        "namespace": f"workspace:locomo-{turn['sample_id']}",
        **({"turn": turn["turn_index"]} if with_turns else {}),
    }


def write_import_files(turns_path: Path, out_dir: Path, *, with_turns: bool = True) -> list[Path]:
    """One JSONL file a conversation; ``with_turns=False`` leaves the turn numbers out, as a file
    people write might (the import numbers them by time, then line)."""
    by_sample: dict[str, list[str]] = defaultdict(list)
    with turns_path.open(encoding="utf-8") as f:
        for line in f:
            turn = json.loads(line)
            by_sample[turn["sample_id"]].append(json.dumps(import_record(turn, with_turns=with_turns)))
    paths = []
    for sample, lines in by_sample.items():
        path = out_dir / f"{sample}.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


async def wait_for_vectors(client: DaemonClient) -> float:
    started = time.monotonic()
    while True:
        status = await client.status()
        if status.index_ready and status.embedding_backlog == 0:
            return time.monotonic() - started
        print(f"  embedding: {status.embedding_backlog:,} waiting", file=sys.stderr, end="\r")
        await anyio.sleep(1.0)


async def ask_all(client: DaemonClient, questions: list[dict], k: int) -> tuple[list[list[str]], list[float]]:
    ranked, latencies = [], []
    for q in questions:
        request = RecallEpisodeRequest(
            query=q["question"], namespace=f"workspace:locomo-{q['sample_id']}", limit=k
        )
        started = time.perf_counter()
        result = await client.recall_episodes(request)
        latencies.append((time.perf_counter() - started) * 1000)
        ranked.append([hit.episode.id for hit in result.episodes])
    return ranked, latencies


def score(questions: list[dict], ranked: list[list[str]]) -> dict[str, dict[str, dict[int, float]]]:
    """{category: {metric: {k: value}}}, with category "all"."""
    sums: dict[str, dict[str, dict[int, list[float]]]] = defaultdict(
        lambda: {m: {k: [] for k in KS} for m in ("recall", "recall_any", "recall_all")}
    )
    for q, ids in zip(questions, ranked, strict=True):
        evidence = {episode_id(q["sample_id"], d) for d in q["evidence"]}
        if not evidence:
            continue
        for k in KS:
            found = len(evidence & set(ids[:k]))
            for category in ("all", CATEGORIES[q["category"]]):
                sums[category]["recall"][k].append(found / len(evidence))
                sums[category]["recall_any"][k].append(float(found > 0))
                sums[category]["recall_all"][k].append(float(found == len(evidence)))
    return {
        category: {m: {k: 100 * statistics.fmean(v) for k, v in by_k.items()} for m, by_k in metrics.items()}
        for category, metrics in sums.items()
    }


def run_one(embedder: str, import_files: list[Path], questions: list[dict]) -> dict:
    with tempfile.TemporaryDirectory(prefix="mnemo-locomo-", dir="/tmp") as home:
        env = {**os.environ, "MNEMO_HOME": home, "MNEMO_EMBEDDER": embedder, "MNEMO_DAEMON_IDLE_S": "3600"}
        settings = load_settings(env)
        try:
            started = time.monotonic()
            for path in import_files:
                subprocess.run(
                    [sys.executable, "-m", "mnemo", "import", str(path), "--quiet"],
                    env=env,
                    check=True,
                    stdout=sys.stderr,  # stdout carries the report
                )
            import_s = time.monotonic() - started

            async def measure() -> tuple[float, list[list[str]], list[float]]:
                async with DaemonClient(settings) as client:
                    embed_s = await wait_for_vectors(client)
                    ranked, latencies = await ask_all(client, questions, max(KS))
                    return embed_s, ranked, latencies

            embed_s, ranked, latencies = anyio.run(measure)
        finally:
            stop_daemon(settings)
    latencies.sort()
    return {
        "embedder": embedder,
        "import_s": import_s,
        "embed_s": embed_s,
        "query_ms_p50": statistics.median(latencies),
        "query_ms_p95": latencies[int(0.95 * len(latencies)) - 1],
        "scores": score(questions, ranked),
    }


def print_report(result: dict, markdown: bool) -> None:
    scores = result["scores"]
    print(
        f"\n## embedder {result['embedder']}: import {result['import_s']:.0f} s, "
        f"vectors {result['embed_s']:.0f} s, "
        f"recall_episode p50 {result['query_ms_p50']:.1f} ms, p95 {result['query_ms_p95']:.1f} ms"
    )
    header = ["category", "metric", *[f"@{k}" for k in KS]]
    rows = []
    for category in ("all", *CATEGORIES.values()):
        if category not in scores:
            continue
        for metric in ("recall", "recall_any", "recall_all"):
            rows.append([category, metric, *[f"{scores[category][metric][k]:.1f}" for k in KS]])
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for row in rows:
            print("| " + " | ".join(row) + " |")
    else:
        for row in [header, *rows]:
            print(f"{row[0]:<12} {row[1]:<11} " + " ".join(f"{c:>6}" for c in row[2:]))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--data",
        type=Path,
        required=True,
        help="the LoCoMo dev split's directory (kept outside the repository)",
    )
    parser.add_argument("--embedder", action="append", help="model id (repeatable); 'none' for BM25 only")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument(
        "--without-turns",
        action="store_true",
        help="import the turns without their numbers (the import numbers them)",
    )
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    questions = [json.loads(line) for line in (args.data / "locomo_dev_qa.jsonl").open(encoding="utf-8")]
    embedders = args.embedder or ["none", *[m.id for m in installed_models(load_settings())]]
    results = []
    with tempfile.TemporaryDirectory(prefix="mnemo-locomo-data-") as tmp:
        files = write_import_files(
            args.data / "locomo_dev_turns.jsonl", Path(tmp), with_turns=not args.without_turns
        )
        print(f"{len(files)} conversations, {len(questions)} questions", file=sys.stderr)
        for embedder in embedders:
            print(f"embedder {embedder} …", file=sys.stderr)
            result = run_one(embedder, files, questions)
            results.append(result)
            print_report(result, args.markdown)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
