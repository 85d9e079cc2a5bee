"""The three systems tools/bench/bench_peers.py compares, each driven through its own public API.

Each runs in a worker process of its own (chDB allows one database a process). A system takes
items (``namespace``, ``text``, ``key``; mnemo also an import ``line``), then answers searches
with the keys it found, best first; ``said`` is what its last answer said, as the model would
read it (mnemo: its MCP tool's text; the peers: their API's result as JSON).

The peers get EmbeddingGemma's float model through sentence-transformers with mnemo's prompts
(``title: none | text: `` before a document, ``task: question answering | query: `` before a
question; neither peer adds a prompt by itself). The documents' vectors are computed beforehand
and looked up (their ingest then times the library, not the model), while each question is
embedded by the peer's own search call, inside the timed latency.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from mnemo.api.recall import EpisodesResult, RecallResult
from mnemo.mcpserver.text import episodes_text, recall_text

DOCUMENT_PROMPT = "title: none | text: "
QUERY_PROMPT = "task: question answering | query: "
EXPORT_HEADER = {
    "record": "mnemo-export",
    "format": 1,
    "history": False,
    "episodes": False,
    "namespaces": None,
}


def load_vectors(path: Path) -> dict[str, list[float]]:
    """Document text → its float vector, as bench_peers saved them (``texts``, ``vectors``)."""
    with np.load(path, allow_pickle=False) as saved:
        return dict(zip(saved["texts"].tolist(), saved["vectors"].tolist(), strict=True))


class Embedder:
    """EmbeddingGemma's float model through sentence-transformers, with mnemo's prompts; the
    documents' vectors given beforehand are looked up instead of computed."""

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
    """clickmem 3.0.1 on embedded chDB; a namespace is a project. Its default model is
    Qwen3-Embedding-0.6B cut to 256 dimensions; here EmbeddingGemma, 768."""

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
        self.keys: dict[str, str] = {}  # clickmem id -> the item's key
        self.merged = 0
        self.said = ""

    def add(self, item: dict[str, Any]) -> None:
        answer = self.memories.add(
            item["text"],
            project_id=item["namespace"],
            tags=["bench"],
            kind="fact",
            skip_conflict_check=True,
            backend=self.backend,
        )
        if answer["id"] in self.keys:
            self.merged += 1  # clickmem folds a normalised-equal text into the memory it has
        else:
            self.keys[answer["id"]] = item["key"]

    def search(self, namespace: str, question: str, k: int) -> list[str]:
        hits = self.recall.recall(question, project_id=namespace, limit=k, backend=self.backend)
        self.said = json.dumps([hit.to_dict() for hit in hits], ensure_ascii=False)
        return [self.keys.get(hit.id, "") for hit in hits]

    def notes(self) -> str:
        return f"{self.merged} items folded into an equal one; no closed state"


class Mem0System:
    """mem0 2.2.1 with ``infer=False`` (no language model) on embedded on-disk Qdrant; a namespace
    is a user. Its default embedder is OpenAI's text-embedding-3-small; here EmbeddingGemma."""

    def __init__(self, home: Path, model_dir: str, known: dict[str, list[float]]) -> None:
        os.environ.update(MEM0_TELEMETRY="False", MEM0_DIR=str(home / "mem0-home"))
        from mem0 import Memory

        self.memory = Memory.from_config(
            {
                "vector_store": {
                    "provider": "qdrant",
                    "config": {
                        "collection_name": "bench",
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
        self.said = ""

    def add(self, item: dict[str, Any]) -> None:
        self.memory.add(item["text"], user_id=item["namespace"], infer=False, metadata={"key": item["key"]})

    def search(self, namespace: str, question: str, k: int) -> list[str]:
        found = self.memory.search(question, filters={"user_id": namespace}, top_k=k, threshold=0.0)
        self.said = json.dumps(found, ensure_ascii=False, default=str)
        return [hit.get("metadata", {}).get("key", "") for hit in found["results"]]

    def notes(self) -> str:
        return (
            "dense cosine only (its BM25 and entity boosts need spaCy and fastembed models); no closed state"
        )


class MnemoSystem:
    """mnemo with its int8 EmbeddingGemma (``models_dir``): items are imported (``mnemo import``:
    episodes, or memories from an export file), then embedded by the daemon; searched through the
    daemon's API as the MCP tools ask (``recall_episode`` for episodes, ``recall`` for memories).
    Its RSS is the daemon's."""

    def __init__(self, home: Path, models_dir: str, memories: bool, given: Path | None = None) -> None:
        from mnemo.config import load_settings

        self.env = {
            **os.environ,
            "MNEMO_HOME": str(home / "mnemo"),
            "MNEMO_MODELS_DIR": models_dir,
            "MNEMO_EMBEDDER": "embeddinggemma-300m-int8",
            # The peers' ingest (an hour and more at 100,000) sends mnemo no request: its daemon
            # must not exit idle before the questions, which would then meet a restart's build.
            "MNEMO_DAEMON_IDLE_S": str(7 * 86400),
        }
        os.environ.update(self.env)  # this worker's own: its client finds the daemon by them
        self.settings = load_settings(self.env)
        self.memories = memories
        self.models_dir = models_dir
        self.given = given  # the peers' vectors file: stored as mnemo's own instead of embedding
        self.keys: list[str] = []
        self.files: dict[str, list[str]] = defaultdict(list)
        self.home = home
        self.client: Any = None
        self.said = ""

    def add(self, item: dict[str, Any]) -> None:
        self.files["memories" if self.memories else item["namespace"]].append(item["line"])
        self.keys.append(item["key"])

    def flush(self) -> tuple[float, float]:
        """Import what was added (a file a conversation, or one export file of memories), then wait
        until every item has its vector: the seconds each took."""
        from mnemo.client.plain import PlainClient

        started = time.monotonic()
        # Given vectors: imported by a daemon without a model, which then stops for them to be stored.
        env = {**self.env, "MNEMO_EMBEDDER": "none"} if self.given else self.env
        for name, lines in self.files.items():
            path = self.home / f"{name.replace(':', '_')}.jsonl"
            head = [json.dumps(EXPORT_HEADER)] if self.memories else []
            path.write_text("\n".join([*head, *lines]) + "\n", encoding="utf-8")
            what = ["--memories", str(path)] if self.memories else [str(path)]
            command = [sys.executable, "-m", "mnemo", "import", *what, "--quiet"]
            subprocess.run(command, env=env, check=True, stdout=sys.stderr)
        imported = time.monotonic()
        if self.given:
            self.store_given()
        self.client = PlainClient()
        while True:
            status = self.client.call("GET", "/v1/status")
            if status["index_ready"] and status["embedding_backlog"] == 0:
                return imported - started, time.monotonic() - imported
            time.sleep(1.0)

    def store_given(self) -> None:
        """Stop the daemon and store the given vectors (768 dimensions, in the order the items were
        added) as the whole int8 model's: the daemon at its next start cuts them to the dimensions
        it keeps, as it does a store embedded at 768 (the peers' float vectors stand in for its
        own; the synthetic store has no relevance labels, so only speed and RSS are read)."""
        from mnemo.client.launcher import stop_daemon
        from mnemo.embed.onnx import read_manifest
        from mnemo.store.clickhouse import open_store

        stop_daemon(self.settings)
        model_id = read_manifest(Path(self.models_dir) / self.env["MNEMO_EMBEDDER"]).id
        with np.load(self.given, allow_pickle=False) as saved:
            vectors = saved["vectors"]
        store = open_store(self.settings.store)
        for i in range(0, len(self.keys), 20_000):
            keys = [(key, 0) for key in self.keys[i : i + 20_000]]
            store.put_embeddings(model_id, keys, vectors[i : i + 20_000])
        store.close()

    def search(self, namespace: str, question: str, k: int) -> list[str]:
        body = {"query": question, "namespace": namespace, "limit": k}
        if self.memories:
            recalled = self.client.call("POST", "/v1/recall", body)
            self.said = recall_text(RecallResult.model_validate(recalled))  # as the MCP tool answers
            return [hit["memory"]["id"] for hit in recalled["memories"]]
        found = self.client.call("POST", "/v1/episodes/query", body)
        self.said = episodes_text(EpisodesResult.model_validate(found))
        return [hit["episode"]["id"] for hit in found["episodes"]]

    def pid(self) -> int:
        from mnemo.client.launcher import daemon_pid

        return daemon_pid(self.settings) or os.getpid()

    def close(self) -> None:
        from mnemo.client.launcher import stop_daemon

        stop_daemon(self.settings)

    def notes(self) -> str:
        said = "words, vectors, entities, neighbouring turns and dates (no language model)"
        if self.given:
            said += "; given the peers' vectors, its model time is storing them and its daemon's start"
        return said
