"""How far int8 quantisations of EmbeddingGemma's fp32 ONNX drift from it on this CPU.

Quantises the fp32 export that ``tools/models/build_embeddinggemma.py --keep-fp32`` leaves (WORK/onnx-fp32)
three ways — signed 8-bit weights (the build before 7-bit), signed 7-bit (``reduce_range``, today's
build), unsigned 8-bit — each per channel, MatMul and Gather, and prints for each the cosine of its
vectors to fp32's over 185 texts (120 LoCoMo turns and 60 LoCoMo questions drawn with seed 7, with
their prefixes, plus five short texts, two in Spanish) and a single-query latency (2 threads, the
median of 25 runs after 5; ``--latency`` instead times the variants interleaved, round after
round, for a noisy machine). Each quantisation peaks near 8 GB of RAM. Runs in the build venv
(docs/models.md), which has onnxruntime's quantisation tools:

    ~/.cache/mnemo-build/venv/bin/python -m tools.models.quantisation_fidelity --data DIR [--work WORK]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
from onnxruntime.quantization import QuantType, quantize_dynamic
from tokenizers import Tokenizer

DOCUMENT, QUERY = "title: none | text: ", "task: question answering | query: "
SHORT = (
    "the load balancer cuts at 120 s",
    "the load balancer cuts at 600 s",
    "my grandmother bakes rye bread every Sunday morning",
    "Desplegamos los jueves porque QA prueba los miércoles",
    "¿qué base de datos usamos para las sesiones?",
)
OPS = ["MatMul", "Gather"]
VARIANTS: dict[str, dict[str, Any]] = {
    "8-bit signed": {"weight_type": QuantType.QInt8, "per_channel": True},
    "7-bit signed (reduce_range)": {
        "weight_type": QuantType.QInt8,
        "per_channel": True,
        "reduce_range": True,
    },
    "8-bit unsigned": {"weight_type": QuantType.QUInt8, "per_channel": True},
}


def texts(data: Path) -> list[str]:
    rng = random.Random(7)
    turns = [json.loads(line)["text"] for line in (data / "locomo_dev_turns.jsonl").open(encoding="utf-8")]
    questions = [
        json.loads(line)["question"] for line in (data / "locomo_dev_qa.jsonl").open(encoding="utf-8")
    ]
    chosen = [DOCUMENT + t for t in rng.sample(turns, 120)] + [QUERY + q for q in rng.sample(questions, 60)]
    return chosen + [DOCUMENT + t for t in SHORT]


def _file(variant: str) -> str:
    return variant.split(" (", maxsplit=1)[0].replace(" ", "-") + ".onnx"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", type=Path, required=True, help="the LoCoMo dev split's directory")
    p.add_argument("--work", type=Path, default=Path.home() / ".cache" / "mnemo-build" / "embeddinggemma")
    p.add_argument("--out", type=Path, default=Path("/tmp/mnemo-quantisations"))
    p.add_argument("--latency", type=int, metavar="ROUNDS", help="only time the quantised files, interleaved")
    args = p.parse_args()
    fp32 = args.work / "onnx-fp32" / "model.onnx"
    tokenizer = Tokenizer.from_file(str(args.work / "model_download" / "tokenizer.json"))
    tokenizer.enable_truncation(512)
    tokenizer.no_padding()

    def session(path: Path) -> ort.InferenceSession:
        options = ort.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = 2, 1
        return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def embed(sess: ort.InferenceSession, text: str) -> np.ndarray:
        ids = np.array([tokenizer.encode(text).ids], dtype=np.int64)
        return sess.run(None, {"input_ids": ids, "attention_mask": np.ones_like(ids)})[0][0]

    question = QUERY + "what timeout does the load balancer apply to idle connections?"
    if args.latency:
        sessions = {name: session(args.out / _file(name)) for name in VARIANTS}
        rounds: dict[str, list[float]] = {name: [] for name in VARIANTS}
        for _ in range(args.latency):
            for name, sess in sessions.items():
                times = []
                for _ in range(25):
                    start = time.perf_counter()
                    embed(sess, question)
                    times.append(time.perf_counter() - start)
                rounds[name].append(statistics.median(times[5:]) * 1000)
        for name, medians in rounds.items():
            shown = ", ".join(f"{m:.0f}" for m in medians)
            print(f"{name}: median of the rounds' medians {statistics.median(medians):.0f} ms ({shown})")
        return
    sample = texts(args.data)
    reference = np.stack([embed(session(fp32), t) for t in sample])
    args.out.mkdir(parents=True, exist_ok=True)
    print("| weights | lowest | 5th percentile | median | latency |\n|---|---|---|---|---|")
    for name, options in VARIANTS.items():
        path = args.out / _file(name)
        if not path.exists():
            quantize_dynamic(str(fp32), str(path), op_types_to_quantize=OPS, **options)
        sess = session(path)
        vectors = np.stack([embed(sess, t) for t in sample])
        cosines = np.sum(vectors * reference, axis=1) / (
            np.linalg.norm(vectors, axis=1) * np.linalg.norm(reference, axis=1)
        )
        times = []
        for _ in range(30):
            start = time.perf_counter()
            embed(sess, question)
            times.append(time.perf_counter() - start)
        print(
            f"| {name} | {cosines.min():.3f} | {np.percentile(cosines, 5):.3f} | {np.median(cosines):.3f} "
            f"| {statistics.median(times[5:]) * 1000:.0f} ms |",
            flush=True,
        )


if __name__ == "__main__":
    main()
