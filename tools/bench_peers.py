"""mnemo side by side with its peers — clickmem 3.0.1 and mem0 2.2.1 — on the same data and model.

Today: LoCoMo's dev split (5 conversations, 2,760 turns, 999 questions; ``--data``), each
conversation in its own namespace of each system (mnemo: a workspace, clickmem: a project, mem0:
a user), loaded through each system's public API:

- **mnemo**: ``mnemo import`` of the turns as episodes, then its own int8 EmbeddingGemma (the
  installed model ``--mnemo-models`` holds) embeds them in the daemon; questions are asked with
  ``recall_episode`` through the daemon's API. RSS is the daemon's.
- **clickmem**: ``memories.add(turn, project_id=conversation, tags=[…], skip_conflict_check=True)``
  on embedded chDB; questions with ``recall.recall(question, project_id=…, limit=k)``. Its default
  model is Qwen3-Embedding-0.6B cut to 256 dimensions; here EmbeddingGemma, 768.
- **mem0**: ``Memory.add(turn, user_id=conversation, infer=False)`` (no language model) on
  embedded on-disk Qdrant; questions with ``Memory.search(question, filters={"user_id": …})``.
  Its default embedder is OpenAI's text-embedding-3-small; here EmbeddingGemma. Telemetry off.

The peers get EmbeddingGemma's float model through sentence-transformers with mnemo's own prompts
(``title: none | text: `` before a turn, ``task: question answering | query: `` before a question;
neither peer adds a prompt by itself). The turns' vectors are computed once and handed to both
peers' add (their ingest then times the library, not the model; ``embed`` says what the model
took), while each question is embedded by the peer's own search call, inside the timed latency.
mnemo embeds both with its int8 ONNX model. Each system runs in a process of its own (chDB allows
one database a process); the questions are asked in turn to each, interleaved, so a slow spell of
the machine falls on all three.

Printed: ingest time, recall latency p50/p95 (question embedding included), evidence R@5 / R@10
(the share of a question's evidence turns among the top k, as tools/eval_locomo.py), the
process's RSS, the characters of a recall's answer a hit (the median answer over its hits: mnemo's
as its MCP tool words it, the peers' as their API returns it, as JSON), and the ratio of each peer
to mnemo.

    ~/.cache/mnemo-peers/bin/python tools/bench_peers.py --data DIR --model-dir ST_DIR \\
        --mnemo-models MODELS_DIR [--questions N]

``ST_DIR``: EmbeddingGemma's sentence-transformers directory (tools/build_embeddinggemma.py leaves
it in ``~/.cache/mnemo-build/embeddinggemma/model_download``); ``MODELS_DIR``: a models directory
holding mnemo's ``embeddinggemma-300m-int8``. The venv: tools/peers-requirements.txt.
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
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from eval_locomo import import_record, score
from mnemo.api.recall import EpisodesResult
from mnemo.mcpserver.text import episodes_text

DOCUMENT_PROMPT = "title: none | text: "
QUERY_PROMPT = "task: question answering | query: "
SYSTEMS = ("mnemo", "clickmem", "mem0")
K = 10


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


# --------------------------------------------------------------------------- the workers


class Embedder:
    """EmbeddingGemma's float model through sentence-transformers, with mnemo's prompts; the turns'
    vectors given beforehand are looked up instead of computed."""

    def __init__(self, model: Any, known: dict[str, list[float]]) -> None:
        self.model = model  # a SentenceTransformer
        self.known = known

    def document(self, text: str) -> list[float]:
        vector = self.known.get(text)
        if vector is None:
            vector = self.model.encode(DOCUMENT_PROMPT + text, normalize_embeddings=True).tolist()
        return vector

    def query(self, text: str) -> list[float]:
        return list(self.model.encode(QUERY_PROMPT + text, normalize_embeddings=True).tolist())


class ClickmemSystem:
    def __init__(self, home: Path, model_dir: str, known: dict[str, list[float]]) -> None:
        os.environ.update(
            CLICKMEM_BACKEND="local",
            CLICKMEM_DB_PATH=str(home / "clickmem"),
            CLICKMEM_EMBEDDING_MODEL=model_dir,
            CLICKMEM_EMBEDDING_DIM="768",
        )
        from clickmem import embedding, memories, recall
        from clickmem.backend.local_chdb import LocalBackend
        from sentence_transformers import SentenceTransformer

        # clickmem's own engine loads its model lazily, on a first encode it never gets here.
        self.embedder = Embedder(SentenceTransformer(model_dir, device="cpu"), known)

        class Adapter:  # clickmem's embedder interface: encode, encode_batch
            def encode(_, text: str) -> list[float]:
                return self.embedder.document(text)

            def encode_batch(_, texts: list[str]) -> list[list[float]]:
                return [self.embedder.document(t) for t in texts]

        embedding.set_embedder(Adapter())
        recall.embed = self.embedder.query  # recall() embeds the question with this name
        self.memories, self.recall = memories, recall
        self.backend = LocalBackend(db_path=str(home / "clickmem"), embed_dim=768)
        self.ids: dict[str, str] = {}  # clickmem id -> episode id
        self.merged = 0

    def add(self, namespace: str, text: str, episode: str) -> None:
        answer = self.memories.add(
            text,
            project_id=namespace,
            tags=["locomo"],
            kind="fact",
            skip_conflict_check=True,
            backend=self.backend,
        )
        if answer["id"] in self.ids:
            self.merged += 1  # clickmem folds a normalised-equal text into the memory it has
        else:
            self.ids[answer["id"]] = episode

    def search(self, namespace: str, question: str, k: int) -> list[str]:
        hits = self.recall.recall(question, project_id=namespace, limit=k, backend=self.backend)
        self.said = json.dumps([hit.to_dict() for hit in hits], ensure_ascii=False)
        return [self.ids.get(hit.id, "") for hit in hits]

    def notes(self) -> str:
        return f"{self.merged} turns folded into an equal one"


class Mem0System:
    def __init__(self, home: Path, model_dir: str, known: dict[str, list[float]]) -> None:
        os.environ.update(MEM0_TELEMETRY="False", MEM0_DIR=str(home / "mem0-home"))
        from mem0 import Memory

        self.memory = Memory.from_config(
            {
                "vector_store": {
                    "provider": "qdrant",
                    "config": {
                        "collection_name": "locomo",
                        "path": str(home / "qdrant"),
                        "on_disk": True,
                        "embedding_model_dims": 768,
                    },
                },
                "embedder": {
                    "provider": "huggingface",
                    "config": {"model": model_dir, "embedding_dims": 768, "model_kwargs": {"device": "cpu"}},
                },
                # Constructed even with infer=False, never called: no key, no endpoint.
                "llm": {
                    "provider": "openai",
                    "config": {"api_key": "unused", "openai_base_url": "http://127.0.0.1:9/v1"},
                },
                "history_db_path": str(home / "mem0-history.db"),
            }
        )
        self.embedder = Embedder(self.memory.embedding_model.model, known)  # the model mem0 loaded
        self.memory.embedding_model.embed = lambda text, action=None: (
            self.embedder.query(text) if action == "search" else self.embedder.document(text)
        )

    def add(self, namespace: str, text: str, episode: str) -> None:
        self.memory.add(text, user_id=namespace, infer=False, metadata={"episode": episode})

    def search(self, namespace: str, question: str, k: int) -> list[str]:
        found = self.memory.search(question, filters={"user_id": namespace}, top_k=k, threshold=0.0)
        self.said = json.dumps(found, ensure_ascii=False, default=str)
        return [hit.get("metadata", {}).get("episode", "") for hit in found["results"]]

    def notes(self) -> str:
        return "dense cosine only (its BM25 and entity boosts need spaCy and fastembed models)"


class MnemoSystem:
    def __init__(self, home: Path, models_dir: str) -> None:
        from mnemo.config import load_settings

        self.env = {
            **os.environ,
            "MNEMO_HOME": str(home / "mnemo"),
            "MNEMO_MODELS_DIR": models_dir,
            "MNEMO_EMBEDDER": "embeddinggemma-300m-int8",
            "MNEMO_DAEMON_IDLE_S": "3600",
        }
        os.environ.update(self.env)  # this worker's own: its client finds the daemon by them
        self.settings = load_settings(self.env)
        self.files: dict[str, list[str]] = defaultdict(list)
        self.home = home
        self.client: Any = None

    def add(self, namespace: str, text: str, episode: str, line: str) -> None:
        self.files[namespace].append(line)

    def flush(self) -> tuple[float, float]:
        """Import what was added (``mnemo import``, a file a conversation), then wait until every
        turn has its vector: the seconds each took."""
        from mnemo.client.plain import PlainClient

        started = time.monotonic()
        for namespace, lines in self.files.items():
            path = self.home / f"{namespace.replace(':', '_')}.jsonl"
            path.write_text("\n".join(lines) + "\n", encoding="utf-8")
            command = [sys.executable, "-m", "mnemo", "import", str(path), "--quiet"]
            subprocess.run(command, env=self.env, check=True, stdout=sys.stderr)
        imported = time.monotonic()
        self.client = PlainClient()
        while True:
            status = self.client.call("GET", "/v1/status")
            if status["index_ready"] and status["embedding_backlog"] == 0:
                return imported - started, time.monotonic() - imported
            time.sleep(1.0)

    def search(self, namespace: str, question: str, k: int) -> list[str]:
        body = {"query": question, "namespace": namespace, "limit": k}
        found = self.client.call("POST", "/v1/episodes/query", body)
        self.said = episodes_text(EpisodesResult.model_validate(found))  # as the MCP tool answers
        return [hit["episode"]["id"] for hit in found["episodes"]]

    said = ""

    def pid(self) -> int:
        from mnemo.client.launcher import daemon_pid

        return daemon_pid(self.settings) or os.getpid()

    def close(self) -> None:
        from mnemo.client.launcher import stop_daemon

        stop_daemon(self.settings)

    def notes(self) -> str:
        return "words, vectors, neighbouring turns and dates (no language model)"


def worker(name: str, args: argparse.Namespace) -> None:
    """Serve one system on stdin/stdout, a JSON line each way."""
    out = sys.stdout
    sys.stdout = sys.stderr  # libraries print: only answers go to the pipe
    home = Path(args.home)
    vectors = json.loads(Path(args.vectors).read_text(encoding="utf-8")) if args.vectors else {}
    started = time.monotonic()
    system: Any
    if name == "mnemo":
        system = MnemoSystem(home, args.mnemo_models)
    elif name == "clickmem":
        system = ClickmemSystem(home, args.model_dir, vectors)
    else:
        system = Mem0System(home, args.model_dir, vectors)

    def answer(value: dict[str, Any]) -> None:
        out.write(json.dumps(value) + "\n")
        out.flush()

    answer({"ready_s": time.monotonic() - started})
    for line in sys.stdin:
        request = json.loads(line)
        if request["op"] == "ingest":
            begun = time.monotonic()
            for turn in request["turns"]:
                if name == "mnemo":
                    system.add(turn["namespace"], turn["text"], turn["episode"], turn["line"])
                else:
                    system.add(turn["namespace"], turn["text"], turn["episode"])
            added, vectors_s = time.monotonic() - begun, 0.0
            if name == "mnemo":
                added, vectors_s = system.flush()
            pid = system.pid() if name == "mnemo" else os.getpid()
            answer({"added_s": added, "vectors_s": vectors_s, "rss_mb": rss_mb(pid), "notes": system.notes()})
        elif request["op"] == "search":
            begun = time.perf_counter()
            ids = system.search(request["namespace"], request["question"], request["k"])
            ms = (time.perf_counter() - begun) * 1000
            answer({"ids": ids, "ms": ms, "chars": len(system.said) / max(1, len(ids))})
        elif request["op"] == "rss":
            answer({"rss_mb": rss_mb(system.pid() if name == "mnemo" else os.getpid())})
        elif request["op"] == "quit":
            if name == "mnemo":
                system.close()
            answer({"bye": True})
            return


# --------------------------------------------------------------------------- the conductor


class Worker:
    def __init__(self, name: str, args: argparse.Namespace, home: Path, vectors: Path) -> None:
        command = [sys.executable, __file__, "--worker", name, "--home", str(home), "--vectors", str(vectors)]
        command += ["--model-dir", args.model_dir, "--mnemo-models", args.mnemo_models]
        env = {
            **os.environ,
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
        }
        self.name = name
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
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


def load_turns(data: Path) -> list[dict[str, Any]]:
    turns = []
    with (data / "locomo_dev_turns.jsonl").open(encoding="utf-8") as lines:
        for raw in lines:
            record = import_record(json.loads(raw))
            turns.append(
                {
                    "namespace": record["namespace"].removeprefix("workspace:"),
                    "text": record["text"],
                    "episode": record["id"],
                    "line": json.dumps(record),
                }
            )
    return turns


def embed_turns(turns: list[dict[str, Any]], model_dir: str, path: Path) -> float:
    """The float model's vectors of every turn, once, into ``path``: the seconds it took."""
    if path.exists():
        return float(json.loads(path.read_text(encoding="utf-8")).pop("__seconds__", 0.0))
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(model_dir, device="cpu")
    texts = sorted({t["text"] for t in turns})
    started = time.monotonic()
    vectors = model.encode([DOCUMENT_PROMPT + t for t in texts], batch_size=16, normalize_embeddings=True)
    seconds = time.monotonic() - started
    known: dict[str, Any] = {t: v.tolist() for t, v in zip(texts, vectors, strict=True)}
    path.write_text(json.dumps({**known, "__seconds__": seconds}), encoding="utf-8")
    return seconds


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, help="LoCoMo's dev split directory")
    p.add_argument("--model-dir", required=True, help="EmbeddingGemma's sentence-transformers directory")
    p.add_argument(
        "--mnemo-models", required=True, help="a models directory holding embeddinggemma-300m-int8"
    )
    p.add_argument("--questions", type=int, default=0, help="ask only the first N questions (0: all)")
    p.add_argument("--conversations", type=int, default=0, help="load only the first N conversations")
    p.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "mnemo-peers-cache")
    p.add_argument("--worker", choices=SYSTEMS, help=argparse.SUPPRESS)
    p.add_argument("--home", help=argparse.SUPPRESS)
    p.add_argument("--vectors", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        worker(args.worker, args)
        return
    if args.data is None:
        p.error("--data is required")
    turns = load_turns(args.data)
    namespaces = sorted({t["namespace"] for t in turns})
    if args.conversations:
        namespaces = namespaces[: args.conversations]
        turns = [t for t in turns if t["namespace"] in namespaces]
    with (args.data / "locomo_dev_qa.jsonl").open(encoding="utf-8") as lines:
        questions = [q for q in map(json.loads, lines) if f"locomo-{q['sample_id']}" in namespaces]
    questions = questions[: args.questions] if args.questions else questions
    args.cache.mkdir(parents=True, exist_ok=True)
    vectors = args.cache / f"locomo-turns-{len(turns)}.json"
    print(
        f"{len(turns):,} turns in {len(namespaces)} conversations, {len(questions):,} questions",
        file=sys.stderr,
    )
    embed_s = embed_turns(turns, args.model_dir, vectors)
    print(f"the float model embedded the turns in {embed_s:.0f} s (for the peers)", file=sys.stderr)

    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="mnemo-peers-") as tmp:
        workers = {}
        for name in SYSTEMS:  # one at a time: each load and ingest on a machine to itself
            home = Path(tmp) / name
            home.mkdir()
            workers[name] = Worker(name, args, home, vectors)
            print(f"{name}: ready in {workers[name].ready_s:.1f} s; ingesting …", file=sys.stderr)
            results[name] = workers[name].ask({"op": "ingest", "turns": turns})
            results[name]["latencies"], results[name]["ranked"], results[name]["chars"] = [], [], []
        for i, q in enumerate(questions):
            order = SYSTEMS[i % 3 :] + SYSTEMS[: i % 3]  # who asks first rotates
            for name in order:
                namespace = f"locomo-{q['sample_id']}"
                if name == "mnemo":
                    namespace = f"workspace:{namespace}"
                found = workers[name].ask(
                    {"op": "search", "namespace": namespace, "question": q["question"], "k": K}
                )
                results[name]["latencies"].append(found["ms"])
                results[name]["ranked"].append(found["ids"])
                results[name]["chars"].append(found["chars"])
            if i % 100 == 99:
                print(f"  {i + 1:,} questions asked", file=sys.stderr)
        for name, w in workers.items():
            results[name]["rss_end_mb"] = w.ask({"op": "rss"})["rss_mb"]
            w.ask({"op": "quit"})
    report(results, questions, len(turns), embed_s)


def report(results: dict[str, dict[str, Any]], questions: list[dict], n_turns: int, embed_s: float) -> None:
    """The table: each system's figures, each peer's ratio to mnemo's in brackets."""
    rows = {}
    for name, r in results.items():
        recall = score(questions, r["ranked"])["all"]["recall"]
        latencies = sorted(r["latencies"])
        model_s = r["vectors_s"] if name == "mnemo" else embed_s  # embedding the turns
        rows[name] = {
            "library": r["added_s"],
            "model": model_s,
            "rate": n_turns / (r["added_s"] + model_s),
            "p50": statistics.median(latencies),
            "p95": latencies[int(0.95 * len(latencies)) - 1],
            "r5": recall[5],
            "r10": recall[10],
            "rss": r["rss_end_mb"],
            "chars": statistics.median(r["chars"]),
        }
    base = rows["mnemo"]

    def ratio(name: str, key: str) -> str:
        return "" if name == "mnemo" else f" ({rows[name][key] / base[key]:.2f}×)"

    print(f"\nLoCoMo dev: {n_turns:,} turns, {len(questions):,} questions, k = {K}\n")
    header = "| system | ingest: library + model | turns/s | recall p50 | recall p95 | R@5 | R@10 | RSS "
    print(header + "| characters a hit |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, row in rows.items():
        print(
            f"| {name} | {row['library']:.0f} s + {row['model']:.0f} s "
            f"| {row['rate']:,.1f}{ratio(name, 'rate')} "
            f"| {row['p50']:.0f} ms{ratio(name, 'p50')} | {row['p95']:.0f} ms{ratio(name, 'p95')} "
            f"| {row['r5']:.1f} | {row['r10']:.1f} | {row['rss']:,.0f} MB{ratio(name, 'rss')} "
            f"| {row['chars']:,.0f}{ratio(name, 'chars')} |"
        )
    print()
    for name, r in results.items():
        print(f"- {name}: {r['notes']}")


if __name__ == "__main__":
    main()
