"""A snapshot served over SPARQL HTTP on 127.0.0.1 by the Oxigraph server (the `oxigraph` PyPI
package ships it): the real endpoint that tests and benchmarks query through `sparql:URL`, in
place of Wikidata's."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import BackendError


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def port_in_use(host: str, port: int) -> bool:
    """Whether something already listens on `host`:`port` (a query there would reach it, not us)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        try:
            s.bind((host, port))
        except OSError:
            return True
    return False


def _oxigraph_bin() -> str:
    exe = Path(sys.executable).with_name("oxigraph")  # the venv's own copy first
    return str(exe) if exe.exists() else (shutil.which("oxigraph") or "oxigraph")


def _load_error(said: str, data: Path | None) -> str:
    """What `oxigraph load` says went wrong (where in the file, and what), without its advice to
    pass `--lenient`, an option of its own that `kalma kg serve` does not have."""
    for line in said.splitlines():
        if line.startswith(f"Error while loading file {data}: "):
            return line.removeprefix(f"Error while loading file {data}: ").strip()[:300]
    lines = [x for x in said.splitlines() if x.strip() and "--lenient" not in x]
    return (lines[0] if lines else "no reason given").strip()[:300]


@contextmanager
def serve_snapshot(data: Path | None, workdir: Path, start_timeout: float = 30.0, host: str = "127.0.0.1", port: int | None = None) -> Iterator[str]:
    """Load `data` (.nt or .ttl) into a store under `workdir` (a store already there is served as
    it is, without `data`), serve it read-only on `host`:`port` (a free local port by default),
    and yield the SPARQL query URL; the server stops when the block ends."""
    store = workdir / "oxigraph-store"
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        if data is not None:
            subprocess.run([_oxigraph_bin(), "load", "--location", str(store), "--file", str(data)], check=True, capture_output=True)
    except FileNotFoundError:
        raise BackendError("the oxigraph server is not installed (pip install oxigraph)") from None
    except subprocess.CalledProcessError as exc:
        raise BackendError(f"{data}: oxigraph could not load it: {_load_error(exc.stderr.decode(errors='replace'), data)}") from None
    if port and port_in_use(host, port):
        raise BackendError(f"port {port} is in use on {host}: give another with --port")
    port = port or free_port()
    proc = subprocess.Popen(
        [_oxigraph_bin(), "serve-read-only", "--location", str(store), "--bind", f"{host}:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{port}/query"
    try:
        deadline = time.time() + start_timeout
        while True:
            try:
                urllib.request.urlopen(f"{url}?query=ASK%7B%7D", timeout=2).read()
                if proc.poll() is None:  # it answered, and it is ours that is alive
                    break
                raise OSError("the server exited")
            except OSError:
                if time.time() > deadline or proc.poll() is not None:
                    said = proc.stderr.read().decode(errors="replace").strip().splitlines()[-1:] if proc.poll() is not None and proc.stderr else []
                    raise BackendError(f"the oxigraph server for {data or store} did not start on {host}:{port}" + (f": {said[0]}" if said else "")) from None
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)
