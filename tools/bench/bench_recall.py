"""Recall at scale: synthetic stores of 10k / 100k / 1M memories.

For each size and embedder it prints:
- store load time (bulk insert, not measured as a product figure);
- index build: the daemon's own start-up build from the store (memories, entities, vectors),
  its time and the daemon's RSS once built and again after the end-to-end recalls (and what of it
  is anonymous memory, not file pages); over 20,000 memories (`index_build_apart_from`) that
  build runs in a process of its own, whose image the daemon reads;
  then the same daemon started again, reading the memories' index from the image the first one
  saved (its time, RSS, and one round of end-to-end recall);
- the question's embedding alone, in this process, p50/p95 (the part of end to end that is
  the model's, not the index's);
- the in-process build's RSS by step: rows, words and the shelf's places; int8 codes; BM25's
  postings sorted and the vector lists made (what a million memories costs, part by part);
- ranking only, in this process: the engine's search over the same documents with precomputed
  question vectors, p50/p95 (no embedding, no store read), over all namespaces and narrowed to
  a workspace and a person as the hooks ask;
- end to end through the daemon API over its unix socket, question embedding included, p50/p95,
  over all namespaces and narrowed to one workspace (the API takes one namespace).

Memories are generated from templates of coding-project knowledge (decisions with their why,
facts, procedures, postmortems) with entities (services, files, people) and namespaces (40
workspaces, 8 people); 10 % are closed. Embedding a million texts with a real model would take
hours on 2 cores, so vectors are made honestly but cheaply: each memory is one of 2,000 template
instances plus a ticket number of its own; the 2,000 instances are embedded with the real model,
and each memory gets its instance's vector plus small Gaussian noise (σ = 0.02 per dimension
before re-normalising). Questions are real texts, embedded by the
daemon at query time. The machine is noisy: `--rounds N` repeats the end-to-end questions and
prints each round's p50 / p95 and their medians.

    python -m tools.bench.bench_recall --sizes 10000 100000 --embedder use-multilingual-v3
    python -m tools.bench.bench_recall --sizes 1000000 --ranking-only
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import itertools
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta

# numpy on one OpenBLAS thread, as the daemon runs it (mnemo.daemon.__main__): the ranking timed
# in this process is the daemon's. Set before numpy is imported; the daemon inherits it.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import anyio
import numpy as np
import numpy.typing as npt

from mnemo.api.recall import RecallRequest
from mnemo.api.status import Status
from mnemo.client.launcher import stop_daemon
from mnemo.client.typed import DaemonClient
from mnemo.config import Settings, load_settings
from mnemo.embed import Embedder, load_embedder
from mnemo.index.entities import entity_key
from mnemo.index.live import RecallEngine
from mnemo.memories import EntityRef, Memory, Origin
from mnemo.store import open_store
from mnemo.vocabulary import MemoryStatus, MemoryType

SERVICES = [
    "gateway", "billing", "auth", "search", "scheduler", "notifier", "ledger", "ingest", "exporter",
    "reporting", "checkout", "inventory", "payments", "profile", "webhooks", "audit", "metrics", "cdn",
]  # fmt: skip
FILES = [
    "lb.tf",
    "values.yaml",
    "Dockerfile",
    "ci.yml",
    "settings.py",
    "schema.sql",
    "Makefile",
    "nginx.conf",
]
PEOPLE = ["Ana", "Luis", "Marta", "Kenji", "Priya", "Tom", "Olga", "Sam"]
TOOLS = ["Postgres", "Redis", "Kafka", "ClickHouse", "S3", "Terraform", "Helm", "Sentry", "Grafana"]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
TEMPLATES = [
    (
        MemoryType.DECISION,
        "{p} decided that {s} deploys happen on {d}",
        "QA needs the day before to test {s}",
    ),
    (MemoryType.DECISION, "We moved {s} from {t} to {t2}", "{t} could not keep up with the {s} write load"),
    (MemoryType.FACT, "The {s} timeout is {n} s, set in {f}", ""),
    (MemoryType.FACT, "{s} keeps {n} replicas behind {t}", ""),
    (MemoryType.PROCEDURE, "To rotate the {s} keys, run make rotate-{s} then restart {s}", ""),
    (MemoryType.POSTMORTEM, "{s} went down after {t} filled its disk", "retention on {t} was never set"),
    (MemoryType.PREFERENCE, "{p} prefers small pull requests for {s}", ""),
    (MemoryType.PATTERN, "Every release of {s} breaks {f} unless the schema is migrated first", ""),
    (MemoryType.STATE, "{s} is degraded while {t} is being upgraded", ""),
]
QUESTIONS = [
    "what day do we deploy the billing service?",
    "why did we move away from Redis?",
    "what is the gateway timeout?",
    "how do I rotate the auth keys?",
    "why did the ledger go down?",
    "¿qué día desplegamos el servicio de pagos?",
    "¿por qué cambiamos de Kafka?",
    "which file sets the scheduler timeout?",
    "who prefers small pull requests?",
    "what breaks when we release checkout?",
]
NOISE_SIGMA = 0.02


POOL_SIZE = 2_000


def generate(n: int, seed: int = 1) -> tuple[list[Memory], list[int], list[str]]:
    """Memories, the pool text each one is made from, and the pool of distinct texts.

    Each memory is one of POOL_SIZE template instances plus a detail of its own (a ticket
    number), so its vector can be its pool text's vector plus noise.
    """
    rng = random.Random(seed)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    instances = []
    for i in range(POOL_SIZE):
        kind, what, why = TEMPLATES[i % len(TEMPLATES)]
        values = {
            "p": rng.choice(PEOPLE),
            "s": rng.choice(SERVICES),
            "t": rng.choice(TOOLS),
            "t2": rng.choice(TOOLS),
            "f": rng.choice(FILES),
            "d": rng.choice(DAYS),
            "n": rng.choice([5, 10, 30, 60, 120, 600]),
        }
        instances.append((kind, what.format(**values), why.format(**values), values, "{f}" in what))
    memories, pool_index = [], []
    for i in range(n):
        chosen = rng.randrange(POOL_SIZE)
        kind, what, why, values, has_file = instances[chosen]
        content = f"{what} (ticket OPS-{i})"
        when = start + timedelta(minutes=i)
        memories.append(
            Memory(
                id=f"mem_bench_{i:08d}",
                version=1,
                type=kind,
                status=MemoryStatus.CLOSED if i % 10 == 9 else MemoryStatus.ACTIVE,
                # One in five is personal; the rest are dealt round the 40 workspaces in turn.
                namespace=f"workspace:repo-{(i - i // 5 - 1) % 40}"
                if i % 5
                else f"person:{values['p'].lower()}",
                content=content,
                what=content,
                who=values["p"],
                when="",
                where=values["f"] if has_file else "",
                why=why,
                how="",
                entities=[EntityRef(name=values["s"]), EntityRef(name=values["t"], role="tool")],
                sources=[],
                origin=Origin.DISTILLED,
                created_at=when,
                updated_at=when,
                valid_from=when,
            )
        )
        pool_index.append(chosen)
    return memories, pool_index, [f"{what}\n{why}" for _, what, why, _, _ in instances]


def hook_namespaces(i: int) -> list[str]:
    """What a hook asks for: the session's workspace and its person."""
    return [f"workspace:repo-{(7 * i) % 40}", f"person:{PEOPLE[i % len(PEOPLE)].lower()}"]


def noisy_vectors(base: npt.NDArray[np.float32], index: list[int], seed: int = 2) -> npt.NDArray[np.float32]:
    rng = np.random.default_rng(seed)
    out = base[index] + rng.normal(0, NOISE_SIGMA, (len(index), base.shape[1])).astype(np.float32)
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out


def synthetic(n: int, embedder: Embedder | None) -> tuple[list[Memory], npt.NDArray[np.float32] | None]:
    """``n`` generated memories and their vectors (None without an embedder)."""
    memories, pool_index, pool = generate(n)
    if embedder is None:
        return memories, None
    base = np.concatenate([embedder.embed_documents(pool[i : i + 64]) for i in range(0, len(pool), 64)])
    return memories, noisy_vectors(base, pool_index)


async def index_built(client: DaemonClient) -> Status:
    """Wait (an hour at most) until the daemon has built its index from the store."""
    with anyio.fail_after(3600):
        while not (status := await client.status()).index_ready:
            await anyio.sleep(0.2)
    return status


def _logged(settings: Settings, start: str) -> str | None:
    """The daemon log's last line part from ``start`` on ("index finished in …": what the build's
    end did with the vector lists; "index image saved in …"; "index image read in …")."""
    try:
        log = settings.log_path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    at = log.rfind(start)
    if at < 0:
        return None
    end = log.find("\n", at)
    return log[at : end if end >= 0 else len(log)]


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[max(0, int(0.95 * len(ordered)) - 1)]


def rss_mb(pid: int, field: str = "VmRSS") -> float:
    """A process's resident memory in MB: all of it (VmRSS), or its anonymous part (RssAnon)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def settled_rss() -> float:
    """This process's RSS (MB) once garbage is collected and the freed heap is given back, as
    the daemon does after its build (glibc's malloc_trim; elsewhere there is nothing to give)."""
    gc.collect()
    trim = getattr(ctypes.CDLL(None), "malloc_trim", None)
    if trim is not None:
        trim(0)
    return rss_mb(os.getpid())


def load_store(
    settings: Settings,
    memories: list[Memory],
    vectors: npt.NDArray[np.float32] | None,
    embedder: Embedder | None,
) -> None:
    """Write ``memories`` (and their vectors) straight into the store the daemon will open."""
    store = open_store(settings.store)
    store.migrate()
    started = time.perf_counter()
    for i in range(0, len(memories), 20_000):
        store.put_memories(memories[i : i + 20_000])
    store.upsert_entities(
        [(entity_key(n), n, []) for n in {e.name for m in memories[:5_000] for e in m.entities}]
    )
    if vectors is not None and embedder is not None:
        for i in range(0, len(memories), 20_000):
            keys = [(m.id, 0) for m in memories[i : i + 20_000]]
            store.put_embeddings(embedder.model_id, keys, vectors[i : i + 20_000])
    store.close()
    print(f"store loaded in {time.perf_counter() - started:.1f} s")


def bench(size: int, embedder_id: str, runs: int, rounds: int, ranking_only: bool) -> None:
    print(f"\n== {size:,} memories, embedder {embedder_id}", flush=True)
    settings_env = {**os.environ, "MNEMO_EMBEDDER": embedder_id}
    embedder = load_embedder(load_settings(settings_env))
    started = time.perf_counter()
    memories, vectors = synthetic(size, embedder)
    print(f"generated in {time.perf_counter() - started:.1f} s ({POOL_SIZE:,} distinct texts embedded)")
    questions = QUESTIONS * (runs // len(QUESTIONS) + 1)
    now = datetime.now(UTC)

    # Ranking only, in this process, built as the daemon loads its store: pages (each memory's
    # vector already stored), then vectors, then finish. RSS after each step, freed heap given back.
    engine = RecallEngine(embedder)
    embedded = {m.id for m in memories} if vectors is not None else set()
    steps = [("before", settled_rss(), 0.0)]
    started = time.perf_counter()
    for i in range(0, size, 50_000):
        engine.add_memories(memories[i : i + 50_000], embedded, bulk=True)
    steps.append(("rows, words, shelf places", settled_rss(), time.perf_counter() - started))
    if vectors is not None:
        started = time.perf_counter()
        engine.memories.put_vectors([m.id for m in memories], vectors, bulk=True)
        steps.append(("int8 codes", settled_rss(), time.perf_counter() - started))
    started = time.perf_counter()
    engine.finish_build(None)
    steps.append(("BM25 postings sorted, vector lists made", settled_rss(), time.perf_counter() - started))
    gc.freeze()  # as the daemon does after its build; here it also spares this process's memories
    build_s = sum(seconds for _, _, seconds in steps)
    print(
        f"in-process index build {build_s:.1f} s, RSS {steps[-1][1]:,.0f} MB; by step: "
        + ", ".join(
            f"{name} +{rss - before:,.0f} MB" for (_, before, _), (name, rss, _) in itertools.pairwise(steps)
        )
    )
    if embedder is not None:  # what end to end spends before ranking (this process, same model)
        timings = []
        for question in questions[:runs]:
            t = time.perf_counter()
            embedder.embed_queries([question])
            timings.append((time.perf_counter() - t) * 1000)
        p50, p95 = percentiles(timings)
        print(f"question embedding alone: p50 {p50:.2f} ms, p95 {p95:.2f} ms")
    # Embedded once, before timing: this measures the daemon's ranking call alone.
    questions_understood = [engine.understand(q, now) for q in QUESTIONS]
    for label, narrowed in (("all namespaces", False), ("one workspace + one person", True)):
        timings = []
        for i in range(runs):
            question = questions_understood[i % len(QUESTIONS)]
            t = time.perf_counter()
            engine.search_memories(
                question,
                namespaces=hook_namespaces(i) if narrowed else None,
                types=None,
                force_history=False,
                limit=10,
            )
            timings.append((time.perf_counter() - t) * 1000)
        p50, p95 = percentiles(timings)
        print(f"ranking only, {label}: p50 {p50:.2f} ms, p95 {p95:.2f} ms")
    if ranking_only:
        return
    del engine

    with tempfile.TemporaryDirectory(prefix="mnemo-bench-", dir="/tmp") as home:
        env = {**settings_env, "MNEMO_HOME": home, "MNEMO_DAEMON_IDLE_S": "3600"}
        settings = load_settings(env)
        load_store(settings, memories, vectors, embedder)

        async def through_daemon(start: str, rounds: int) -> None:
            async with DaemonClient(settings) as client:
                started = time.perf_counter()
                status = await index_built(client)
                logged = [_logged(settings, start) for start in ("index finished in", "index image")]
                print(
                    f"daemon {start} {time.perf_counter() - started:.1f} s, "
                    f"daemon RSS {rss_mb(status.pid):,.0f} MB "
                    f"(anonymous {rss_mb(status.pid, 'RssAnon'):,.0f} MB), "
                    f"backlog {status.embedding_backlog}, memories from {status.index_memories_from}"
                    + "".join(f"\n  {lists}" for lists in status.vector_lists)
                    + "".join(f"\n  {line}" for line in logged if line)
                )
                for question in QUESTIONS:  # warm-up
                    await client.recall(RecallRequest(query=question))
                for label, narrowed in (("all namespaces", False), ("one workspace", True)):
                    per_round = []
                    for _ in range(rounds):
                        timings = []
                        for i, question in enumerate(questions[:runs]):
                            namespace = hook_namespaces(i)[0] if narrowed else None
                            t = time.perf_counter()
                            await client.recall(RecallRequest(query=question, limit=10, namespace=namespace))
                            timings.append((time.perf_counter() - t) * 1000)
                        per_round.append(percentiles(timings))
                    p50, p95 = (statistics.median(values) for values in zip(*per_round, strict=True))
                    rounds_text = ", ".join(f"{a:.1f}/{b:.1f}" for a, b in per_round)
                    print(
                        f"end to end, {label} (daemon API, question embedded): "
                        f"p50 {p50:.2f} ms, p95 {p95:.2f} ms"
                        + (f" (median of {rounds} rounds: {rounds_text})" if rounds > 1 else "")
                    )
                print(
                    f"daemon RSS after the recalls {rss_mb(status.pid):,.0f} MB "
                    f"(anonymous {rss_mb(status.pid, 'RssAnon'):,.0f} MB)"
                )

        try:
            anyio.run(through_daemon, "start + index build", rounds)
            stop_daemon(settings)
            anyio.run(through_daemon, "restart (the saved index image read)", 1)
        finally:
            stop_daemon(settings)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--embedder", action="append", help="model id (repeatable); default: the auto choice")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="end to end: repeat the questions this many times and print each round's p50/p95 and "
        "their medians (this machine's noise moves a single round's p95 by several ms)",
    )
    parser.add_argument("--ranking-only", action="store_true", help="skip the store and the daemon")
    args = parser.parse_args()
    for size in args.sizes:
        for embedder in args.embedder or ["auto"]:
            bench(size, embedder, args.runs, args.rounds, args.ranking_only)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
