"""mnemo side by side with its peers — clickmem 3.0.1 and mem0 2.2.1 — on the same data and model.

Two kinds of data, each loaded into each system through its public API (tools/bench/peer_systems.py:
how each is driven, and the model each is given):

- **LoCoMo's dev split** (``--data``: 5 conversations, 2,760 turns, 999 questions), each
  conversation in a namespace of each system (mnemo: a workspace, clickmem: a project, mem0: a
  user); mnemo holds the turns as episodes and is asked with ``recall_episode``. Scored: evidence
  R@5 / R@10 (the share of a question's evidence turns among the top k, as tools/evals/eval_locomo.py).
- **A synthetic store** (``--synthetic N``): tools/bench/bench_recall.py's generated memories of project
  knowledge (48 namespaces; 10 % closed, which mnemo holds closed and the peers, having no such
  state, as any other), imported into mnemo as memories (``mnemo import --memories``) and asked
  with ``recall``; 200 questions, each within one workspace. No relevance labels: speed, RSS and
  characters only. The peers' vectors are bench_recall's: each of its 2,000 template instances
  embedded by the float model, plus Gaussian noise a memory; mnemo embeds every memory itself.

Each system runs in a process of its own; the questions are asked in turn to each, interleaved
(who asks first rotates), so a slow spell of the machine falls on all three. Printed: ingest time
(the library, then the model: on LoCoMo the peers' documents were embedded beforehand, once; in
the synthetic store only its 2,000 instances were, so the peers' ingest is their library),
recall latency p50/p95 (question embedding included, each system's own call), R@5 / R@10 on
LoCoMo, the process's RSS after the questions (mnemo: its daemon's), the characters of an answer
a hit (the median answer over its hits: mnemo's as its MCP tool words it, the peers' as their API
returns it, as JSON), and each peer's ratio to mnemo.

    ~/.cache/mnemo-peers/bin/python -m tools.bench.bench_peers --model-dir ST_DIR --mnemo-models MODELS_DIR \\
        (--data LOCOMO_DIR [--questions N] [--conversations N] | --synthetic N [--mnemo-given-vectors])
        [--systems mnemo mem0]

``--mnemo-given-vectors``: mnemo is given the peers' vectors of the synthetic store (stored as its
model's, then cut to the dimensions it keeps by its daemon's start) instead of embedding each
memory itself — two hours at 100,000 on 2 cores; its model time is then storing them and the start.

``ST_DIR``: EmbeddingGemma's sentence-transformers directory (tools/models/build_embeddinggemma.py leaves
it in ``~/.cache/mnemo-build/embeddinggemma/model_download``); ``MODELS_DIR``: a models directory
holding mnemo's ``embeddinggemma-300m-int8``. The venv: tools/bench/peers-requirements.txt.
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
from pathlib import Path
from typing import Any

import numpy as np

from tools import REPO
from tools.bench.bench_recall import QUESTIONS, generate, hook_namespaces, noisy_vectors, percentiles, rss_mb
from tools.bench.peer_systems import DOCUMENT_PROMPT, ClickmemSystem, Mem0System, MnemoSystem, load_vectors
from tools.evals.eval_locomo import import_record, score

SYNTHETIC_QUESTIONS = 200
SYSTEMS = ("mnemo", "clickmem", "mem0")
K = 10


def worker(name: str, args: argparse.Namespace) -> None:
    """Serve one system on stdin/stdout, a JSON line each way."""
    out = sys.stdout
    sys.stdout = sys.stderr  # libraries print: only answers go to the pipe
    home = Path(args.home)
    started = time.monotonic()
    system: Any
    if name == "mnemo":
        given = Path(args.vectors) if args.mnemo_given_vectors else None
        system = MnemoSystem(home, args.mnemo_models, memories=args.synthetic > 0, given=given)
    elif name == "clickmem":
        system = ClickmemSystem(home, args.model_dir, load_vectors(Path(args.vectors)))
    else:
        system = Mem0System(home, args.model_dir, load_vectors(Path(args.vectors)))

    def answer(value: dict[str, Any]) -> None:
        out.write(json.dumps(value) + "\n")
        out.flush()

    def pid() -> int:
        return int(system.pid()) if name == "mnemo" else os.getpid()

    answer({"ready_s": time.monotonic() - started})
    for line in sys.stdin:
        request = json.loads(line)
        if request["op"] == "ingest":
            begun = time.monotonic()
            for item in request["items"]:
                system.add(
                    item if name == "mnemo" else {**item, "namespace": peer_namespace(item["namespace"])}
                )
            added, vectors_s = time.monotonic() - begun, 0.0
            if name == "mnemo":
                added, vectors_s = system.flush()
            answer(
                {"added_s": added, "vectors_s": vectors_s, "rss_mb": rss_mb(pid()), "notes": system.notes()}
            )
        elif request["op"] == "search":
            namespace = request["namespace"] if name == "mnemo" else peer_namespace(request["namespace"])
            begun = time.perf_counter()
            keys = system.search(namespace, request["question"], request["k"])
            ms = (time.perf_counter() - begun) * 1000
            answer({"keys": keys, "ms": ms, "chars": len(system.said) / max(1, len(keys))})
        elif request["op"] == "rss":
            answer({"rss_mb": rss_mb(pid())})
        elif request["op"] == "quit":
            if name == "mnemo":
                system.close()
            answer({"bye": True})
            return


def peer_namespace(namespace: str) -> str:
    """A peer's project or user for one of mnemo's namespaces: the part after its kind."""
    return namespace.partition(":")[2]


# --------------------------------------------------------------------------- the conductor


class Worker:
    def __init__(self, name: str, args: argparse.Namespace, home: Path, vectors: Path) -> None:
        command = [sys.executable, "-m", __spec__.name, "--worker", name, "--home", str(home)]
        command += ["--vectors", str(vectors)]
        command += ["--model-dir", args.model_dir, "--mnemo-models", args.mnemo_models]
        command += ["--synthetic", str(args.synthetic)]
        command += ["--mnemo-given-vectors"] if args.mnemo_given_vectors else []
        env = {
            **os.environ,
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
        }
        self.name = name
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=REPO
        )
        self.ready_s = self.read()["ready_s"]

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        return self.read()

    def read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            raise SystemExit(
                f"the {self.name} worker ended (exit {self.process.wait()}); its stderr says why"
            )
        answer: dict[str, Any] = json.loads(line)
        return answer


def locomo(
    data: Path, conversations: int, questions: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """LoCoMo's turns as items (a conversation a namespace) and its questions."""
    items = []
    with (data / "locomo_dev_turns.jsonl").open(encoding="utf-8") as lines:
        for raw in lines:
            record = import_record(json.loads(raw))
            items.append(
                {
                    "namespace": record["namespace"],
                    "text": record["text"],
                    "key": record["id"],
                    "line": json.dumps(record),
                }
            )
    namespaces = sorted({t["namespace"] for t in items})
    if conversations:
        namespaces = namespaces[:conversations]
        items = [t for t in items if t["namespace"] in namespaces]
    with (data / "locomo_dev_qa.jsonl").open(encoding="utf-8") as lines:
        asked = [
            {**q, "namespace": f"workspace:locomo-{q['sample_id']}"}
            for q in map(json.loads, lines)
            if f"workspace:locomo-{q['sample_id']}" in namespaces
        ]
    return items, asked[:questions] if questions else asked


def synthetic(n: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[int], list[str]]:
    """bench_recall's ``n`` generated memories as items, 200 questions each within a workspace, and
    what the peers' vectors are made from (each memory's template instance, the instances' texts)."""
    memories, pool_index, pool = generate(n)
    items = [
        {
            "namespace": m.namespace,
            "text": f"{m.content}\n{m.why}" if m.why else m.content,
            "key": m.id,
            "line": json.dumps({"record": "memory", **m.model_dump(mode="json")}),
        }
        for m in memories
    ]
    asked = [
        {"question": QUESTIONS[i % len(QUESTIONS)], "namespace": hook_namespaces(i)[0]}
        for i in range(SYNTHETIC_QUESTIONS)
    ]
    return items, asked, pool_index, pool


def embed(texts: list[str], model_dir: str) -> tuple[np.ndarray, float]:
    """The float model's vectors of ``texts`` (as documents), and the seconds it took."""
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(model_dir, device="cpu")
    started = time.monotonic()
    vectors = model.encode([DOCUMENT_PROMPT + t for t in texts], batch_size=16, normalize_embeddings=True)
    return np.asarray(vectors, dtype=np.float32), time.monotonic() - started


def peer_vectors(args: argparse.Namespace, items: list[dict[str, Any]], made: Any) -> tuple[Path, float]:
    """The peers' document vectors, in a file under ``--cache`` (``texts``, ``vectors``,
    ``seconds``): the file, and the seconds the model took. What the model made is kept there
    (LoCoMo's turns; the synthetic store's 2,000 template instances, whatever its size)."""
    if not args.synthetic:
        path = args.cache / f"locomo-turns-{len(items)}.npz"
        if not path.exists():
            texts = sorted({t["text"] for t in items})
            vectors, seconds = embed(texts, args.model_dir)
            np.savez(path, texts=np.array(texts), vectors=vectors, seconds=np.array(seconds))
        with np.load(path, allow_pickle=False) as saved:
            return path, float(saved["seconds"])
    pool_index, pool = made  # the instances embedded, then a noisy copy a memory (bench_recall's)
    pool_path = args.cache / f"synthetic-pool-{len(pool)}.npz"
    if not pool_path.exists():
        base, seconds = embed(pool, args.model_dir)
        np.savez(pool_path, vectors=base, seconds=np.array(seconds))
    with np.load(pool_path, allow_pickle=False) as saved:
        base, seconds = saved["vectors"], float(saved["seconds"])
    path = args.cache / f"synthetic-{len(items)}.npz"
    texts = np.array([t["text"] for t in items])
    np.savez(path, texts=texts, vectors=noisy_vectors(base, pool_index), seconds=np.array(seconds))
    return path, seconds


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, help="LoCoMo's dev split directory")
    p.add_argument(
        "--synthetic", type=int, default=0, metavar="N", help="a synthetic store of N memories instead"
    )
    p.add_argument("--model-dir", required=True, help="EmbeddingGemma's sentence-transformers directory")
    p.add_argument(
        "--mnemo-models", required=True, help="a models directory holding embeddinggemma-300m-int8"
    )
    p.add_argument("--questions", type=int, default=0, help="LoCoMo: ask only the first N questions (0: all)")
    p.add_argument("--conversations", type=int, default=0, help="LoCoMo: load only the first N conversations")
    p.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "mnemo-peers-cache")
    p.add_argument(
        "--systems",
        nargs="+",
        choices=SYSTEMS,
        default=list(SYSTEMS),
        help="which to run (mnemo always is: the ratios are to it); default: all three",
    )
    p.add_argument(
        "--mnemo-given-vectors",
        action="store_true",
        help="synthetic store: mnemo is given the peers' vectors instead of embedding every memory "
        "(~13 a second on 2 cores: two hours at 100,000)",
    )
    p.add_argument("--worker", choices=SYSTEMS, help=argparse.SUPPRESS)
    p.add_argument("--home", help=argparse.SUPPRESS)
    p.add_argument("--vectors", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(args.worker, args)
        return
    if (args.data is None) == (args.synthetic <= 0):
        p.error("give --data (LoCoMo) or --synthetic N")
    if args.mnemo_given_vectors and not args.synthetic:
        p.error("--mnemo-given-vectors is for --synthetic: LoCoMo's recall is scored, by mnemo's own model")
    made: Any = None
    if args.synthetic:
        items, questions, *made = synthetic(args.synthetic)
        what = f"a synthetic store: {len(items):,} memories, {len(questions)} questions"
    else:
        items, questions = locomo(args.data, args.conversations, args.questions)
        what = f"LoCoMo dev: {len(items):,} turns, {len(questions):,} questions"
    print(what, file=sys.stderr)
    args.cache.mkdir(parents=True, exist_ok=True)
    vectors, embed_s = peer_vectors(args, items, made)
    print(f"the float model embedded the peers' documents in {embed_s:.0f} s", file=sys.stderr)

    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="mnemo-peers-") as tmp:
        workers = {}
        systems = ["mnemo", *(name for name in SYSTEMS[1:] if name in args.systems)]
        for name in systems:  # one at a time: each load and ingest on a machine to itself
            home = Path(tmp) / name
            home.mkdir()
            workers[name] = Worker(name, args, home, vectors)
            print(f"{name}: ready in {workers[name].ready_s:.1f} s; ingesting …", file=sys.stderr)
            results[name] = workers[name].ask({"op": "ingest", "items": items})
            results[name]["latencies"], results[name]["ranked"], results[name]["chars"] = [], [], []
        for i, q in enumerate(questions):
            turn = i % len(systems)
            for name in systems[turn:] + systems[:turn]:  # who asks first rotates
                request = {"op": "search", "namespace": q["namespace"], "question": q["question"], "k": K}
                found = workers[name].ask(request)
                results[name]["latencies"].append(found["ms"])
                results[name]["ranked"].append(found["keys"])
                results[name]["chars"].append(found["chars"])
            if i % 100 == 99:
                print(f"  {i + 1:,} questions asked", file=sys.stderr)
        for name, w in workers.items():
            results[name]["rss_end_mb"] = w.ask({"op": "rss"})["rss_mb"]
            w.ask({"op": "quit"})
    print(f"\n{what}, k = {K}\n")
    if args.synthetic:  # the peers' vectors are noisy copies: the model embedded only the pool
        pool = len(made[1])
        print(f"The float model embedded the {pool:,} template instances in {embed_s:.0f} s ", end="")
        print(f"({pool / embed_s:.1f} texts/s); the peers' ingest is their library alone.\n")
        embed_s = 0.0
    report(results, None if args.synthetic else questions, len(items), embed_s)


def report(
    results: dict[str, dict[str, Any]], scored: list[dict] | None, n_items: int, embed_s: float
) -> None:
    """The table: each system's figures, each peer's ratio to mnemo's in brackets; R@k when the
    questions are ``scored`` (LoCoMo's)."""
    rows = {}
    for name, r in results.items():
        p50, p95 = percentiles(r["latencies"])
        model_s = r["vectors_s"] if name == "mnemo" else embed_s  # embedding the documents
        rows[name] = {
            "library": r["added_s"],
            "model": model_s,  # 0: not timed here (the synthetic store's peers)
            "rate": n_items / (r["added_s"] + model_s),
            "p50": p50,
            "p95": p95,
            "rss": r["rss_end_mb"],
            "chars": statistics.median(r["chars"]),
        }
        if scored is not None:
            recall = score(scored, r["ranked"])["all"]["recall"]
            rows[name] |= {"r5": recall[5], "r10": recall[10]}
    base = rows["mnemo"]

    def ratio(name: str, key: str) -> str:
        return "" if name == "mnemo" else f" ({rows[name][key] / base[key]:.2f}×)"

    quality = "| R@5 | R@10 " if scored is not None else ""
    columns = f"| system | ingest: library + model | items/s | recall p50 | recall p95 {quality}"
    print(columns + "| RSS | characters a hit |")
    print("|---|---|---|---|---|" + ("---|---|" if scored is not None else "") + "---|---|")
    for name, row in rows.items():
        recalled = f"| {row['r5']:.1f} | {row['r10']:.1f} " if scored is not None else ""
        model = f"{row['model']:.0f} s" if row["model"] else "—"
        print(
            f"| {name} | {row['library']:.0f} s + {model} "
            f"| {row['rate']:,.1f}{ratio(name, 'rate')} "
            f"| {row['p50']:.0f} ms{ratio(name, 'p50')} | {row['p95']:.0f} ms{ratio(name, 'p95')} "
            f"{recalled}| {row['rss']:,.0f} MB{ratio(name, 'rss')} "
            f"| {row['chars']:,.0f}{ratio(name, 'chars')} |"
        )
    print()
    for name, r in results.items():
        print(f"- {name}: {r['notes']}")


if __name__ == "__main__":
    main()
